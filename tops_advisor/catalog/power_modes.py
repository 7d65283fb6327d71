"""Power modes of a module (Jetson's nvpmodel modes): the power budget each one sets, and the clocks and active
units it caps the GPU, CPU and memory at.

A device file lists its modes under ``[[power_modes]]`` and names the one its datasheet figures describe in
``power_mode``. ``at_power_mode`` is the device in another mode: compute peaks scale by GPU clock x active units
(SMs) against the datasheet mode, memory bandwidth by the memory (EMC) clock. ``fastest_within`` picks the mode a
power limit allows: the fastest one whose budget fits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt

from ..errors import InputError

if TYPE_CHECKING:
    from .schema import Hardware


class PowerMode(BaseModel):
    """One power mode: its budget and the caps it sets, in the units of the file's field names."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[A-Za-z0-9_]+$", description="The mode's name as nvpmodel lists it: 15W, MAXN.")
    power_w: PositiveFloat = Field(description="The module power budget of the mode, W (an unbudgeted MAXN mode: "
                                               "the module's maximum power).")
    gpu_clock_mhz: PositiveFloat = Field(description="Highest GPU clock the mode allows, MHz.")
    active_compute_units: PositiveInt = Field(description="SMs left powered (TPCs not gated x 2 SMs per TPC).")
    memory_clock_mhz: PositiveFloat = Field(description="Highest memory (EMC) clock the mode allows, MHz.")
    cpu_cores: PositiveInt = Field(description="CPU cores online.")
    cpu_clock_mhz: PositiveFloat | None = Field(
        default=None, description="CPU clock cap, MHz; absent where the mode sets none (the CPU's maximum).")
    software: str | None = Field(default=None, description="The software release that offers the mode, when "
                                                           "not every release does (JetPack 6.2 'Super').")
    source: str = Field(min_length=3, description="'source-key: where', as in [citations].")

    def speed(self) -> tuple[float, float]:
        """What the mode gives a workload: (GPU clock x active SMs, memory clock). A mode is faster than another
        when it gives at least as much of both and more of one."""
        return self.gpu_clock_mhz * self.active_compute_units, self.memory_clock_mhz


class UnknownPowerModeError(InputError):
    """A power mode the device does not have."""


def power_mode(hw: Hardware, name: str) -> PowerMode:
    """``hw``'s mode called ``name`` (case and '-'/'_' ignored), or one line listing the modes it has."""
    key = _key(name)
    for mode in hw.power_modes:
        if _key(mode.name) == key:
            return mode
    if not hw.power_modes:
        raise UnknownPowerModeError(f"{hw.id} has no power modes; --power-mode applies to modules such as "
                                    "Jetson", hint="leave --power-mode out")
    raise UnknownPowerModeError(f"{hw.id} has no power mode {name!r}; its modes: {mode_list(hw)}",
                                hint=f"e.g. --power-mode {hw.power_modes[0].name}")


def mode_list(hw: Hardware) -> str:
    """'7W (7 W), 15W (15 W), MAXN_SUPER (25 W)': each mode with its budget, in file order."""
    return ", ".join(f"{m.name} ({m.power_w:g} W)" for m in hw.power_modes)


def _key(name: str) -> str:
    return name.strip().upper().replace("-", "_").replace(" ", "_")


def fastest_within(hw: Hardware, max_power_w: float) -> PowerMode | None:
    """The fastest mode whose budget is at most ``max_power_w`` (None when none is): the highest GPU clock x
    active SMs, then the highest memory clock, then the lowest budget; the first listed among equals."""
    fitting = [m for m in hw.power_modes if m.power_w <= max_power_w]
    if not fitting:
        return None
    return max(fitting, key=lambda m: (*m.speed(), -m.power_w, -hw.power_modes.index(m)))


def at_power_mode(hw: Hardware, name: str) -> Hardware:
    """``hw`` in the mode ``name``: peaks x (mode GPU clock / datasheet clock) x (mode SMs / datasheet SMs),
    bandwidth x (mode memory clock / datasheet memory clock), its SMs, clock, memory clock and budget those of the
    mode. The datasheet's own mode returns ``hw`` unchanged."""
    mode = power_mode(hw, name)
    if _key(mode.name) == _key(hw.power_mode):
        return hw
    base = power_mode(hw, hw.power_mode)
    compute = (mode.gpu_clock_mhz / base.gpu_clock_mhz) * (mode.active_compute_units / base.active_compute_units)
    memory = mode.memory_clock_mhz / base.memory_clock_mhz
    why = (f"derived: power mode {mode.name}: the {base.name} figures x {mode.gpu_clock_mhz:g}/"
           f"{base.gpu_clock_mhz:g} MHz x {mode.active_compute_units}/{base.active_compute_units} SMs ({mode.source})")
    cites = {**hw.citations, "dense_tops": why, "sparse_tops": why,
             "memory_bandwidth_gb_s": f"derived: power mode {mode.name}: memory clock {mode.memory_clock_mhz:g}/"
                                      f"{base.memory_clock_mhz:g} MHz x the {base.name} bandwidth ({mode.source})"}
    for key in [k for k in cites if k.startswith(("dense_tops.", "sparse_tops."))]:
        del cites[key]
    return hw.model_copy(update={
        "dense_tops": {p: t * compute for p, t in hw.dense_tops.items()},
        "sparse_tops": {p: t * compute for p, t in hw.sparse_tops.items()},
        "memory_bandwidth_gb_s": hw.memory_bandwidth_gb_s * memory, "compute_units": mode.active_compute_units,
        "boost_clock_mhz": mode.gpu_clock_mhz, "memory_clock_mhz": mode.memory_clock_mhz, "tdp_w": mode.power_w,
        "power_mode": mode.name, "citations": cites})


def check_power_modes(hw: Hardware) -> None:
    """The file's modes agree with its figures: named once each, citing a known source, within the device's SMs,
    and the datasheet mode (``power_mode``) the figures themselves (clock, SMs, memory clock, budget)."""
    if not hw.power_modes:
        if hw.power_mode is not None:
            raise ValueError(f"power_mode = {hw.power_mode!r} but the file lists no [[power_modes]]")
        return
    names = [_key(m.name) for m in hw.power_modes]
    if len(set(names)) != len(names):
        raise ValueError("two power modes share one name")
    missing = [f for f in ("boost_clock_mhz", "compute_units", "memory_clock_mhz", "power_mode")
               if getattr(hw, f) is None]
    if missing:
        raise ValueError(f"[[power_modes]] needs {', '.join(missing)}: the mode figures scale from them")
    keys = {s.key for s in hw.sources}
    for m in hw.power_modes:
        if m.source.split(":", 1)[0].strip() not in keys | {"derived"}:
            raise ValueError(f"power mode {m.name} cites unknown source {m.source.split(':', 1)[0]!r}")
        if m.active_compute_units > hw.compute_units:
            raise ValueError(f"power mode {m.name} has {m.active_compute_units} SMs; the device has "
                             f"{hw.compute_units}")
    base = next((m for m in hw.power_modes if _key(m.name) == _key(hw.power_mode)), None)
    if base is None:
        raise ValueError(f"power_mode = {hw.power_mode!r} is not among the modes: {mode_list(hw)}")
    figures = (base.gpu_clock_mhz, base.active_compute_units, base.memory_clock_mhz, base.power_w)
    if figures != (hw.boost_clock_mhz, hw.compute_units, hw.memory_clock_mhz, hw.tdp_w):
        raise ValueError(f"power mode {base.name} (the datasheet's: power_mode) must match boost_clock_mhz, "
                         "compute_units, memory_clock_mhz and tdp_w")
