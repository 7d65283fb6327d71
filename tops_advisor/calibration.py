"""Measured numbers for one device, written by the probe and read by the roofline.

A calibration replaces datasheet defaults: measured matrix peaks per precision, memory bandwidth, and the
per-kernel costs. Files are JSON, written atomically (temp file + rename). A corrupt file never crashes a
prediction: ``find_calibration`` warns and ignores it.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt, ValidationError

from .errors import CalibrationError

SCHEMA_VERSION = 1


class GemmSample(BaseModel):
    """One measured matrix product: ``batch`` x (m x k) @ (k x n) at ``precision``, in TOPS."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    precision: str
    m: PositiveInt
    n: PositiveInt
    k: PositiveInt
    batch: PositiveInt = 1
    tops: PositiveFloat


class SustainedResult(BaseModel):
    """A held GEMM load: throughput, clocks, power, temperature and throttling over time."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    precision: str
    seconds: PositiveFloat
    tops_start: PositiveFloat
    tops_end: PositiveFloat
    tops_median: PositiveFloat
    sm_clock_mhz_min: float | None = None
    sm_clock_mhz_max: float | None = None
    power_w_median: float | None = None
    temperature_c_max: float | None = None
    tops_per_watt: float | None = None
    throttle_reasons: tuple[str, ...] = ()
    throttled: bool = False


class Calibration(BaseModel):
    """What the probe measured on one device. Units in field names; TOPS = 1e12 ops/s, GB = 1e9 bytes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: int = SCHEMA_VERSION
    hardware: str = Field(description="Catalog id, or the NVML name when the card is not in the catalog.")
    matched_catalog: bool = True
    device_name: str = ""
    measured_tops: dict[str, PositiveFloat] = Field(description="Best dense matrix rate per precision, TOPS.")
    memory_bandwidth_gb_s: PositiveFloat = Field(description="Device copy: (bytes read + written) / time.")
    read_bandwidth_gb_s: PositiveFloat | None = None
    h2d_gb_s: PositiveFloat | None = None
    d2h_gb_s: PositiveFloat | None = None
    kernel_graph_us: PositiveFloat | None = Field(
        default=None, description="Per-kernel device time of a tiny kernel replayed in a CUDA graph.")
    kernel_eager_us: PositiveFloat | None = Field(
        default=None, description="Per-kernel time of a tiny kernel launched eagerly from this host.")
    gemm_samples: tuple[GemmSample, ...] = ()
    sustained: SustainedResult | None = None
    environment: dict[str, str] = Field(default_factory=dict)
    created: str = ""
    probe_version: str = ""

    @property
    def memory_bandwidth_bytes_per_s(self) -> float:
        return self.memory_bandwidth_gb_s * 1e9

    def peak_ops_per_s(self, precision: str) -> float | None:
        tops = self.measured_tops.get(precision)
        return None if tops is None else tops * 1e12


def load_calibration(path: Path | str) -> Calibration:
    """Read and validate a calibration file; errors name the file and the field."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CalibrationError(f"calibration file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CalibrationError(f"calibration file {path} cannot be read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise CalibrationError(f"calibration file {path} is not valid JSON: {exc}") from None
    try:
        return Calibration.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "(file)"
        raise CalibrationError(f"calibration file {path}: field {loc}: {first['msg']}") from None


def save_calibration(cal: Calibration, path: Path | str) -> Path:
    """Write atomically: a temp file in the same directory, fsync, then rename over the target."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise CalibrationError(f"cannot write calibration to {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(cal.model_dump_json(indent=2))
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
