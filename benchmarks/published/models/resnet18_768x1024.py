"""torchvision ``resnet18`` (random weights) fed 1 x 3 x 768 x 1024: WillBrennan/ml_benchmark's TensorRT input shape
1024x768 (benchmarks/published/willbrennan_trt_rtx3090.json)."""

from _torchvision_at import at_resolution

build_model, example_inputs = at_resolution("resnet18", 768, 1024)
