"""torchvision ``efficientnet_v2_s`` (random weights) fed 1 x 3 x 224 x 224: HudenJear/gpu-dl-benchmark's input
(benchmarks/published/hudenjear_rtx3090.json); the ``torchvision:`` workload would count it at its weights' 384."""

from _torchvision_at import at_resolution

build_model, example_inputs = at_resolution("efficientnet_v2_s", 224, 224)
