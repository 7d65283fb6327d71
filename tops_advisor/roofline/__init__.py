"""The roofline predictor: what a workload really gets on a device, and why."""

from .device import DevicePerf, device_perf
from .predict import MODES, OpPrediction, Prediction, predict
from .rates import matrix_precision

__all__ = ["MODES", "DevicePerf", "OpPrediction", "Prediction", "device_perf", "matrix_precision", "predict"]
