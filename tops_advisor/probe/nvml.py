"""Device facts through NVML (``pynvml`` from nvidia-ml-py).

Every query is tried on its own: a card or driver that refuses one (a field "Not Supported", no permission)
leaves that fact ``None`` and a note, never an exception. ``read_device_facts`` takes the NVML module as an
argument so tests can pass a fake.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..errors import ProbeError

# Bits of nvmlDeviceGetCurrentClocksThrottleReasons (nvml.h: nvmlClocksEventReason*). Stable across drivers.
THROTTLE_REASON_BITS: dict[int, str] = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
# Reasons that mean the card runs slower than it could under load (idle and settings are not throttling).
SLOWDOWN_REASONS = frozenset({"sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown",
                              "hw_power_brake_slowdown"})


def decode_throttle_reasons(mask: int) -> tuple[str, ...]:
    """0x44 -> ('sw_power_cap', 'hw_thermal_slowdown'); unknown bits show as 'bit_0x...'."""
    out = [name for bit, name in THROTTLE_REASON_BITS.items() if mask & bit]
    rest = mask & ~sum(THROTTLE_REASON_BITS)
    bit = 1
    while rest:
        if rest & bit:
            out.append(f"bit_{bit:#x}")
            rest &= ~bit
        bit <<= 1
    return tuple(out)


class DeviceFacts(BaseModel):
    """What NVML says about one card. Units in the names; None where NVML did not answer. ``model_dump()``
    is the probe report's ``state``."""

    model_config = ConfigDict(frozen=True)

    name: str | None = None
    memory_total_bytes: int | None = None
    # Clocks and temperature as NVML gives them (integers): int | float so a dump keeps 1980, not 1980.0.
    sm_clock_mhz: int | float | None = None
    sm_clock_max_mhz: int | float | None = None
    mem_clock_mhz: int | float | None = None
    mem_clock_max_mhz: int | float | None = None
    power_limit_w: float | None = None
    power_draw_w: float | None = None
    temperature_c: int | float | None = None
    pcie_gen: int | None = None
    pcie_gen_max: int | None = None
    pcie_width: int | None = None
    pcie_width_max: int | None = None
    throttle_reasons: tuple[str, ...] = ()
    driver_version: str | None = None
    cuda_driver_version: str | None = None
    notes: tuple[str, ...] = ()


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _cuda_version(v: int) -> str:
    """NVML's 13000 -> '13.0', 12040 -> '12.4'."""
    return f"{v // 1000}.{(v % 1000) // 10}"


def import_nvml():
    """The pynvml module, initialised. ProbeError (one line) when the library or the driver is missing."""
    try:
        import pynvml
    except ImportError:
        raise ProbeError("NVML is not available: the nvidia-ml-py package is not installed",
                         hint="pip install nvidia-ml-py") from None
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # pynvml.NVMLError and OSError when libnvidia-ml.so is missing
        raise ProbeError(f"NVML could not start ({exc}); is the NVIDIA driver installed?") from None
    return pynvml


class _Reader:
    """Calls one NVML query; a query that fails gives None and a note."""

    def __init__(self):
        self.notes: list[str] = []

    def __call__(self, what: str, fn, *args):
        try:
            return fn(*args)
        except Exception as exc:  # NVMLError_NotSupported, NoPermission, missing function in an old binding
            self.notes.append(f"NVML: {what} unavailable ({exc})")
            return None


def _throttle_mask(nvml, handle) -> int:
    fn = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
        nvml.nvmlDeviceGetCurrentClocksThrottleReasons
    return int(fn(handle))


def read_device_facts(nvml, index: int = 0) -> DeviceFacts:
    """Query everything the probe reports about card ``index``; ``nvml`` is an initialised pynvml (or a fake)."""
    get = _Reader()
    try:
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
    except Exception as exc:
        raise ProbeError(f"NVML has no device {index} ({exc})") from None
    name = get("name", nvml.nvmlDeviceGetName, handle)
    mem = get("memory", nvml.nvmlDeviceGetMemoryInfo, handle)
    clock_sm, clock_mem = nvml.NVML_CLOCK_SM, nvml.NVML_CLOCK_MEM
    f: dict[str, Any] = {
        "name": None if name is None else _text(name),
        "memory_total_bytes": None if mem is None else int(mem.total),
        "sm_clock_mhz": get("SM clock", nvml.nvmlDeviceGetClockInfo, handle, clock_sm),
        "sm_clock_max_mhz": get("max SM clock", nvml.nvmlDeviceGetMaxClockInfo, handle, clock_sm),
        "mem_clock_mhz": get("memory clock", nvml.nvmlDeviceGetClockInfo, handle, clock_mem),
        "mem_clock_max_mhz": get("max memory clock", nvml.nvmlDeviceGetMaxClockInfo, handle, clock_mem),
    }
    limit_mw = get("power limit", nvml.nvmlDeviceGetPowerManagementLimit, handle)
    f["power_limit_w"] = None if limit_mw is None else limit_mw / 1000
    draw_mw = get("power draw", nvml.nvmlDeviceGetPowerUsage, handle)
    f["power_draw_w"] = None if draw_mw is None else draw_mw / 1000
    f["temperature_c"] = get("temperature", nvml.nvmlDeviceGetTemperature, handle, nvml.NVML_TEMPERATURE_GPU)
    f["pcie_gen"] = get("PCIe generation", nvml.nvmlDeviceGetCurrPcieLinkGeneration, handle)
    f["pcie_gen_max"] = get("max PCIe generation", nvml.nvmlDeviceGetMaxPcieLinkGeneration, handle)
    f["pcie_width"] = get("PCIe width", nvml.nvmlDeviceGetCurrPcieLinkWidth, handle)
    f["pcie_width_max"] = get("max PCIe width", nvml.nvmlDeviceGetMaxPcieLinkWidth, handle)
    mask = get("throttle reasons", _throttle_mask, nvml, handle)
    f["throttle_reasons"] = () if mask is None else decode_throttle_reasons(mask)
    driver = get("driver version", nvml.nvmlSystemGetDriverVersion)
    f["driver_version"] = None if driver is None else _text(driver)
    cuda = get("CUDA driver version", nvml.nvmlSystemGetCudaDriverVersion)
    f["cuda_driver_version"] = None if cuda is None else _cuda_version(int(cuda))
    return DeviceFacts(**f, notes=tuple(get.notes))


@dataclass(frozen=True)
class StateSample:
    """One cheap reading during the sustained run (internal: ``sustained`` summarises the samples)."""

    sm_clock_mhz: float | None
    power_w: float | None
    temperature_c: float | None
    throttle_reasons: tuple[str, ...]


def sample_state(nvml, index: int = 0) -> StateSample:
    """A cheap reading of clocks, power, temperature and throttle reasons, for the sustained run."""
    get = _Reader()
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    clock = get("SM clock", nvml.nvmlDeviceGetClockInfo, handle, nvml.NVML_CLOCK_SM)
    power_mw = get("power draw", nvml.nvmlDeviceGetPowerUsage, handle)
    temp = get("temperature", nvml.nvmlDeviceGetTemperature, handle, nvml.NVML_TEMPERATURE_GPU)
    mask = get("throttle reasons", _throttle_mask, nvml, handle)
    return StateSample(clock, None if power_mw is None else power_mw / 1000, temp,
                       () if mask is None else decode_throttle_reasons(mask))
