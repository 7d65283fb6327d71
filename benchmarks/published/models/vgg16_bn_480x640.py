"""torchvision ``vgg16_bn`` (random weights) fed 1 x 3 x 480 x 640: WillBrennan/ml_benchmark's TensorRT input shape
640x480 (benchmarks/published/willbrennan_trt_rtx3090.json)."""

from _torchvision_at import at_resolution

build_model, example_inputs = at_resolution("vgg16_bn", 480, 640)
