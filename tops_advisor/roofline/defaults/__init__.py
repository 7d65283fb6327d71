"""Every number the roofline uses without a measurement, in one frozen object, each with where it comes from.

``DEFAULTS`` is what predictions use; a calibration replaces the device-level ones (peaks, bandwidth, floors,
host cost: see ``device.py``). Tests and experiments build their own ``RooflineDefaults`` (round numbers, one
field changed with ``dataclasses.replace``) and pass it to ``device_perf(..., defaults=...)``: nothing reads a
tuned constant from anywhere else. Accuracy with and without calibration: docs/accuracy.md.

Most per-operator factors were measured on one H200 (benchmarks/results/h200_records.json.gz: 19 models x
batches 1-128 x fp16/fp32, the device time of every counted operator call). They are ratios to the card's own
attainable copy bandwidth, GEMM rate or trivial-kernel time, so a calibration of another card carries them
over in proportion; how well that holds on other cards is measured card by card (docs/accuracy.md).
"""

from dataclasses import dataclass

from .base import WIDTHS, Default, GemmTile
from .device_level import DeviceDefaults
from .tensor_core import TensorCoreDefaults
from .vector import VectorDefaults


@dataclass(frozen=True)
class RooflineDefaults(VectorDefaults, TensorCoreDefaults, DeviceDefaults):
    """Every roofline default, one ``Default`` per field: the device-level ones (``device_level``), those of
    tensor-core operators (``tensor_core``) and those of vector and memory-bound work (``vector``)."""


DEFAULTS = RooflineDefaults()

# The one default the LLM memory model shares with the roofline.
RUNTIME_MEMORY_BYTES = DEFAULTS.runtime_memory_bytes

__all__ = ["DEFAULTS", "RUNTIME_MEMORY_BYTES", "WIDTHS", "Default", "GemmTile", "RooflineDefaults"]
