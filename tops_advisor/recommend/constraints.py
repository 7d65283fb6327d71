"""What a user asks of a device: targets (latency, throughput), filters (segment, power, price, devices, budget)
and how to rank (``Constraints``), the filters applied to one device (``prefilter``) and the power mode a module
runs in under them (``at_power_limit``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..catalog import Hardware
from ..catalog.power_modes import UnknownPowerModeError, mode_list
from ..errors import InputError
from ..kinds import Mode
from ..tensorrt import TENSORRT
from ..units import format_seconds

RANK_BY = ("efficiency", "latency", "throughput", "price", "cost")
PRICE_KINDS = ("rental", "purchase")    # catalog.prices.PriceKind's values: --rent, --buy
PRICED_RANKINGS = ("price", "cost")     # rankings a device without a price cannot take part in
SEGMENTS = ("edge", "workstation", "datacenter")
AUTO_DTYPES = ("fp32", "fp16", "bf16", "fp8", "int8")  # every precision --dtype auto may try
# Precisions a run mode's software cannot run in a model's matrix products and convolutions, and why. Every mode
# here runs the model as plain PyTorch writes it: CUDA has no int8 or fp8 kernels behind torch.matmul, nn.Linear
# or nn.Conv2d (aten::addmm on CUDA is not implemented for int8 'Char'; int8 and fp8 GEMMs exist only as the
# private torch._int_mm and torch._scaled_mm that torchao and TensorRT build on, and no convolution at all).
PLAIN_PYTORCH = ("plain PyTorch, which runs no int8 or fp8 matrix product or convolution without TensorRT or "
                 "torchao (--dtype int8 predicts it anyway)")
NOT_RUNNABLE: dict[str, tuple[tuple[str, ...], str]] = {
    Mode.GRAPH: (("fp8", "int8"), PLAIN_PYTORCH),
    Mode.EAGER: (("fp8", "int8"), PLAIN_PYTORCH),
    Mode.COMPILED: (("fp8", "int8"), PLAIN_PYTORCH),
    # a TensorRT engine runs int8 (with calibration: every int8 prediction says so); fp8/bf16 engines not modelled
    Mode.TENSORRT: (tuple(p for p in AUTO_DTYPES if p not in TENSORRT.auto_dtypes),
                    "a TensorRT engine, modelled in " + "/".join(TENSORRT.auto_dtypes)),
}


def auto_dtypes(mode: str) -> tuple[str, ...]:
    """The precisions --dtype auto tries in ``mode``: those of ``AUTO_DTYPES`` the mode's software runs."""
    skipped, _ = NOT_RUNNABLE.get(mode, ((), ""))
    return tuple(p for p in AUTO_DTYPES if p not in skipped)


def auto_dtype_note(mode: str) -> str:
    """What --dtype auto tried in ``mode``, and why it left the others out (int8 included)."""
    skipped, why = NOT_RUNNABLE.get(mode, ((), ""))
    tried = "/".join(auto_dtypes(mode))
    if not skipped:
        return f"dtype auto: tried {tried}"
    note = f"dtype auto: tried {tried}, not {'/'.join(skipped)}: {mode} mode is {why}"
    if mode == Mode.TENSORRT:
        note += f"; int8 only where the card has an int8 peak, and an {TENSORRT.int8.does}"
    return note

NOT_ASKED = "not in --hardware"  # a device the user left out: dropped, not listed as rejected


@dataclass(frozen=True)
class Constraints:
    latency_s: float | None = None          # per batch
    throughput_per_s: float | None = None   # samples/s
    batch: int | None = None                # fixed batch; None = search
    dtypes: tuple[str, ...] = ("fp16",)
    dtype_auto: bool = False                # dtypes came from --dtype auto (auto_dtypes of the mode)
    segment: str | None = None
    max_power_w: float | None = None
    power_mode: str | None = None           # a module's power mode by name (Jetson nvpmodel: 15W, MAXN)
    max_price_usd: float | None = None
    hardware: tuple[str, ...] = ()          # limit to these ids (already resolved)
    mode: str = "graph"
    rank_by: str = "efficiency"
    max_batch: int = 1024
    top: int | None = None
    price_kind: str = "rental"              # which price costs use: rental (--rent) or purchase (--buy)
    budget_usd: float | None = None         # most USD per hour (rental) or up front (purchase) for the whole fleet

    @property
    def fleet_target_per_s(self) -> float | None:
        """The throughput the whole fleet must reach: ranking by cost, the throughput target is a total that
        each device meets with as many replicas as it needs; otherwise one device must reach it alone."""
        return self.throughput_per_s if self.rank_by == "cost" else None

    def __post_init__(self):
        if self.rank_by not in RANK_BY:
            raise InputError(f"unknown --rank-by {self.rank_by!r}; expected one of {', '.join(RANK_BY)}")
        if self.segment is not None and self.segment not in SEGMENTS:
            from ..suggest import did_you_mean

            raise InputError(f"unknown segment {self.segment!r}; expected one of {', '.join(SEGMENTS)}",
                             hint=did_you_mean(self.segment, SEGMENTS))
        if self.batch is not None and self.batch <= 0:
            raise InputError(f"--batch must be a positive integer, got {self.batch}")
        if self.price_kind not in PRICE_KINDS:
            raise InputError(f"unknown price kind {self.price_kind!r}; expected rental (--rent) or purchase (--buy)")
        for name in ("latency_s", "throughput_per_s", "max_power_w", "max_price_usd", "budget_usd"):
            v = getattr(self, name)
            if v is not None and v <= 0:
                option = "--budget" if name == "budget_usd" else name
                raise InputError(f"{option} must be greater than zero, got {v}",
                                 hint="USD per hour rented (--rent) or up front bought (--buy)"
                                 if name == "budget_usd" else None)
        if self.top is not None and self.top < 1:
            raise InputError(f"--top must be at least 1, got {self.top}", hint="leave --top out to show every device")


def device_file_price(hw: Hardware) -> float | None:
    """A device file's own ``price_usd`` (no shipped device file has one: prices live in price files)."""
    return hw.price_usd


def prefilter(hw: Hardware, c: Constraints,
              purchase_usd: Callable[[Hardware], float | None] = device_file_price) -> str | None:
    """Why ``hw`` is ruled out before predicting anything (segment, power, power mode, price, --hardware), or
    None. A module with power modes passes a power limit when one of its modes fits it (``at_power_limit``).
    ``purchase_usd``: a card's purchase price (``costs.Pricing``'s), for --max-price."""
    if c.hardware and hw.id not in c.hardware:
        return NOT_ASKED
    if c.segment and hw.segment != c.segment:
        return f"segment {hw.segment}, not {c.segment}"
    why = _power_mode_rule(hw, c) if (c.power_mode or hw.power_modes) else _power_rule(hw, c)
    if why:
        return why
    if c.max_price_usd:
        price = purchase_usd(hw)
        if price is None:
            return "no known purchase price"
        if price > c.max_price_usd:
            return f"price ${price:,.0f} > ${c.max_price_usd:,.0f}"
    return None


def _power_rule(hw: Hardware, c: Constraints) -> str | None:
    if c.max_power_w and hw.tdp_w > c.max_power_w:
        return f"TDP {hw.tdp_w:g} W > {c.max_power_w:g} W"
    return None


def _power_mode_rule(hw: Hardware, c: Constraints) -> str | None:
    """A module's modes against --power-mode and --max-power."""
    if c.power_mode:
        if not any(_same_mode(m.name, c.power_mode) for m in hw.power_modes):
            return f"no power mode {c.power_mode}" + (f" (modes: {mode_list(hw)})" if hw.power_modes else "")
        mode = hw.get_power_mode(c.power_mode)
        if c.max_power_w and mode.power_w > c.max_power_w:
            return f"power mode {mode.name} {mode.power_w:g} W > {c.max_power_w:g} W"
        return None
    if c.max_power_w and hw.fastest_power_mode(c.max_power_w) is None:
        return f"lowest power mode {min(hw.power_modes_w):g} W > {c.max_power_w:g} W"
    return None


def _same_mode(a: str, b: str) -> bool:
    return a.upper().replace("-", "_") == b.strip().upper().replace("-", "_")


def at_power_limit(hw: Hardware, c: Constraints) -> Hardware:
    """``hw`` as it runs under ``c`` (after ``prefilter`` passed it): a module in the power mode asked for
    (--power-mode), else in the fastest mode within --max-power (never a faster one), else as its datasheet
    describes it; a device without power modes as it is."""
    if not hw.power_modes:
        return hw
    if c.power_mode:
        return hw.at_power_mode(c.power_mode)
    if c.max_power_w:
        return hw.at_power_mode(hw.fastest_power_mode(c.max_power_w).name)
    return hw


def check_power_mode(devices: list[Hardware], c: Constraints) -> None:
    """--power-mode must name a mode of at least one device asked for: one line listing their modes if not."""
    if not c.power_mode:
        return
    asked = [hw for hw in devices if not c.hardware or hw.id in c.hardware]
    if any(_same_mode(m.name, c.power_mode) for hw in asked for m in hw.power_modes):
        return
    modules = [hw for hw in asked if hw.power_modes]
    if len(modules) == 1:
        modules[0].get_power_mode(c.power_mode)  # raises: names the device and its modes
    names = sorted({m.name for hw in modules for m in hw.power_modes})
    raise UnknownPowerModeError(
        f"no device asked for has power mode {c.power_mode!r}; "
        + (f"the modules' modes: {', '.join(names)}" if names else "none of them has power modes"),
        hint="hardware show DEVICE lists a module's power modes")


def budget_text(c: Constraints) -> str:
    """'$20/h rented' or '$100,000 up front': the budget as --budget means it for the price kind."""
    return (f"${c.budget_usd:,.2f}/h rented" if c.price_kind == "rental" else f"${c.budget_usd:,.0f} up front")


def filters_text(c: Constraints) -> str:
    """The constraints in force, one clause each, in a fixed order; the dtypes always."""
    clauses = (  # (the constraint's value, or None when unset; how it reads)
        (c.latency_s and format_seconds(c.latency_s), "latency <= {}"),
        (c.throughput_per_s, "throughput >= {:g}/s" + (" in total" if c.fleet_target_per_s else "")),
        (c.segment, "segment {}"),
        (c.max_power_w, "power <= {:g} W"),
        (c.power_mode, "power mode {}"),
        (c.max_price_usd, "price <= ${:,.0f}"),
        (c.hardware and ", ".join(c.hardware), "hardware {}"),
        (c.budget_usd and budget_text(c), "budget {}"),
    )
    parts = [text.format(value) for value, text in clauses if value]
    parts.append(f"dtype {'/'.join(c.dtypes)}")
    return ", ".join(parts)
