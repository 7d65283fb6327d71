"""Measured numbers for one device, written by the probe and read by the roofline.

A calibration replaces datasheet defaults: measured matrix peaks per precision, memory bandwidth, and the
per-kernel costs. Files are JSON, written atomically (temp file + rename). A corrupt file never crashes a
prediction: ``find_calibration`` warns and ignores it.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt, ValidationError

from .errors import CalibrationError, TopsAdvisorError
from .jsonfile import read_json

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


class SustainedSample(BaseModel):
    """One sampling interval of a sustained run: throughput over the interval and the card's state at its end."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    t_s: float
    tops: float
    sm_clock_mhz: float | None = None
    power_w: float | None = None
    temperature_c: float | None = None
    throttle_reasons: tuple[str, ...] = ()


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
    samples: tuple[SustainedSample, ...] = ()


class CollectiveSample(BaseModel):
    """One collective at one message size, timed the nccl-tests way (docs/probe.md, "Several GPUs").

    ``bytes`` is nccl-tests' size: the buffer being reduced (all-reduce) or the whole gathered output
    (all-gather). algbw = bytes / time; busbw = algbw x 2(n-1)/n (all-reduce) or x (n-1)/n (all-gather).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    bytes: PositiveInt
    time_us: PositiveFloat
    algbw_gb_s: PositiveFloat
    busbw_gb_s: float = Field(ge=0)


class PeerCopy(BaseModel):
    """``tensor.copy_`` from one GPU to another: bytes / time, one direction."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    src: int = Field(ge=0)
    dst: int = Field(ge=0)
    bytes: PositiveInt
    gb_s: PositiveFloat
    peer_access: bool | None = None


class GpuTopology(BaseModel):
    """What NVML says about one GPU's links: NVLink state per link, and P2P status towards each other GPU."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    index: int = Field(ge=0)
    name: str = ""
    pci_bus_id: str = ""
    nvlink_active: tuple[bool, ...] = Field(default=(), description="One entry per NVLink the GPU reports.")
    nvlink_version: int | None = Field(
        default=None, description="nvmlDeviceGetNvLinkVersion as NVML reports it (a code, not always the major).")
    nvlink_remote_bus_ids: tuple[str, ...] = Field(default=(), description="Bus id at the far end of each active link.")
    p2p_nvlink: dict[str, str] = Field(default_factory=dict, description="Other GPU index -> NVML P2P NVLink status.")
    p2p_read: dict[str, str] = Field(default_factory=dict, description="Other GPU index -> NVML P2P read status.")

    @property
    def active_nvlinks(self) -> int:
        return sum(self.nvlink_active)


class Topology(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    gpus: tuple[GpuTopology, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def nvlink(self) -> bool:
        """Every GPU has at least one active NVLink."""
        return bool(self.gpus) and all(g.active_nvlinks > 0 for g in self.gpus)


class Links(BaseModel):
    """What ``probe --all-gpus`` measured between the devices of one machine (see docs/probe.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    world_size: int = Field(ge=2)
    backend: str = Field(description="'nccl' (GPUs) or 'gloo' (CPU processes, the CI path).")
    device: str = Field(description="'cuda' or 'cpu'.")
    dtype: str = "fp32"
    link_kind: str = Field(default="", description="'nvlink', 'pcie', or '' when unknown (CPU).")
    all_reduce: tuple[CollectiveSample, ...] = ()
    all_gather: tuple[CollectiveSample, ...] = ()
    all_reduce_busbw_gb_s: PositiveFloat = Field(description="Best all-reduce bus bandwidth over the sizes.")
    all_gather_busbw_gb_s: PositiveFloat | None = None
    small_all_reduce: tuple[CollectiveSample, ...] = Field(default=(), description="8 B and 1 KB all-reduces.")
    all_reduce_latency_us: PositiveFloat = Field(
        description="Time per call of the smallest all-reduce, called eagerly from Python (host cost included).")
    small_all_reduce_graph: tuple[CollectiveSample, ...] = Field(
        default=(), description="The same small all-reduces captured in a CUDA graph and replayed (GPU only).")
    all_reduce_graph_latency_us: PositiveFloat | None = Field(
        default=None, description="Time per call of the smallest all-reduce replayed in a CUDA graph.")
    p2p: tuple[PeerCopy, ...] = ()
    topology: Topology | None = None
    environment: dict[str, str] = Field(default_factory=dict)
    notes: tuple[str, ...] = ()


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
    module_call_us: PositiveFloat | None = Field(
        default=None, description="Host time per nn.Module call of a stack of tiny Linear layers, eagerly "
                                  "(probe.overhead.module_call_s): scales the eager host cost.")
    gemm_samples: tuple[GemmSample, ...] = ()
    sustained: SustainedResult | None = None
    elementwise_bandwidth_gb_s: PositiveFloat | None = Field(
        default=None, description="Large c = a + b: (2 reads + 1 write) bytes / time.")
    article_point_tops: dict[str, PositiveFloat] = Field(
        default_factory=dict, description="The 8192 x 8192 x 8192 product per precision, TOPS.")
    best_gemm_shapes: dict[str, str] = Field(
        default_factory=dict, description="Precision -> 'MxNxK' of the best rate in measured_tops.")
    backend: str = Field(default="cuda", description="'cuda' or 'cpu'.")
    mode: str = Field(default="", description="Probe mode: 'quick' or 'full'.")
    notes: tuple[str, ...] = Field(default=(), description="What was skipped or looked wrong while measuring.")
    links: Links | None = Field(
        default=None, description="Peer links between this machine's devices (probe --all-gpus).")
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
    data = read_json(path, "calibration file", CalibrationError)
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
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; a calibration is an ordinary shareable file
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


# --- where calibrations live --------------------------------------------------------------------------
DIR_ENV_VAR = "TOPS_ADVISOR_CALIBRATION_DIR"


def default_calibration_dir() -> Path:
    """The user's calibration directory: $TOPS_ADVISOR_CALIBRATION_DIR, else <user data dir>/calibrations."""
    env = os.environ.get(DIR_ENV_VAR)
    if env:
        return Path(env)
    from platformdirs import user_data_dir

    return Path(user_data_dir("tops-advisor", appauthor=False)) / "calibrations"


def shipped_calibration_dir() -> Path:
    """hardware_db/calibrations, beside the shipped catalog (in the wheel or the source checkout)."""
    from .catalog.loader import shipped_catalog_dir

    return shipped_catalog_dir() / "calibrations"


def calibration_filename(hardware_id: str) -> str:
    """'h200-sxm' -> 'h200-sxm.json'; an NVML name ('NVIDIA Foo 24GB') -> 'nvidia-foo-24gb.json'."""
    slug = re.sub(r"[^a-z0-9]+", "-", hardware_id.strip().lower()).strip("-")
    return f"{slug or 'unknown'}.json"


def _warn(message: str) -> None:
    sys.stderr.write(f"warning: {message}\n")


def find_calibration(hardware_id: str, explicit_path: Path | str | None = None) -> tuple[Calibration | None, str]:
    """The calibration for ``hardware_id`` and where it came from: explicit file > user dir > shipped.

    Returns ``(None, "none")`` when there is none. A corrupt or mismatched file found implicitly is ignored
    with one warning line on stderr; an explicit bad file raises CalibrationError.
    """
    if explicit_path is not None:
        cal = load_calibration(explicit_path)
        if cal.hardware != hardware_id:
            raise CalibrationError(
                f"calibration file {explicit_path} was measured on {cal.hardware!r}, not {hardware_id!r}",
                hint="pass a calibration of the device you predict for, or leave --calibration out")
        return cal, f"file {explicit_path}"
    candidates: list[tuple[str, Path]] = [("user", default_calibration_dir())]
    try:
        candidates.append(("shipped", shipped_calibration_dir()))
    except TopsAdvisorError:
        pass
    name = calibration_filename(hardware_id)
    for where, directory in candidates:
        path = directory / name
        try:
            if not path.is_file():
                continue
        except OSError:
            continue
        try:
            cal = load_calibration(path)
        except CalibrationError as exc:
            _warn(f"ignoring calibration: {exc}")
            continue
        if cal.hardware != hardware_id:
            _warn(f"ignoring calibration {path}: it was measured on {cal.hardware!r}, not {hardware_id!r}")
            continue
        shown = f"hardware_db/calibrations/{path.name}" if where == "shipped" else str(path)
        return cal, f"{where} {shown}"
    return None, "none"
