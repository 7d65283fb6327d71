"""torchvision ``mobilenet_v3_large`` (random weights) fed 1 x 3 x 1056 x 1920: WillBrennan/ml_benchmark's TensorRT input shape
1920x1056 (benchmarks/published/willbrennan_trt_rtx3090.json)."""

from _torchvision_at import at_resolution

build_model, example_inputs = at_resolution("mobilenet_v3_large", 1056, 1920)
