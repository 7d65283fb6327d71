"""The validated shape of one device file in ``hardware_db/`` (one TOML file per device, named by its id).

Units live in field names (``memory_bandwidth_gb_s``: 1 GB = 1e9 bytes). Peaks are in TOPS: 1e12 operations
per second, one multiply-add = 2 operations, for floats and integers alike. ``dense_tops`` and
``sparse_tops`` (2:4 structured sparsity) are separate maps and never mixed. ``fp16``/``bf16``/``fp8`` mean
FP32 accumulation; GeForce's faster FP16-accumulate rates live under ``fp16_fp16acc``/``fp8_fp16acc``.
A precision a device cannot do is absent, never zero.

Every number must be cited in ``citations``: the key is the field name (``memory_bandwidth_gb_s``), a
precision (``dense_tops.fp16``) or a whole map (``dense_tops``); the value starts with the key of an entry in
``sources`` (then ': where in it'), or with ``derived:`` and the arithmetic.
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PositiveFloat,
    PositiveInt,
    PrivateAttr,
    field_validator,
    model_validator,
)

from ..units import PEAK_KEYS
from .power_modes import PowerMode, at_power_mode, check_power_modes, fastest_within, power_mode

Segment = Literal["edge", "workstation", "datacenter"]
ID_PATTERN = r"^[a-z0-9][a-z0-9-]*$"


class Source(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$", description="Short key that citations refer to.")
    title: str = Field(min_length=3, description="Document title, e.g. 'NVIDIA H100 Tensor Core GPU datasheet'.")
    url: str | None = Field(default=None, description="Where the document was published.")
    publisher: str | None = None
    date: str | None = Field(default=None, description="Publication or revision date as printed.")


class Hardware(BaseModel):
    """One accelerator. Frozen: load it, never mutate it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=ID_PATTERN, description="Catalog id; equals the file name without .toml.")
    name: str = Field(min_length=2, description="Full marketing name.")
    vendor: str
    architecture: str
    segment: Segment
    form_factor: str | None = Field(default=None, description="SXM5, PCIe card, module, OAM, ...")
    launch_date: _dt.date | None = None
    aliases: tuple[str, ...] = Field(default=(), description="Names people type: '4090', 'RTX 4090'.")

    memory_gb: PositiveFloat = Field(description="Memory capacity in GB (1e9 bytes) as the vendor states it.")
    memory_type: str
    memory_bandwidth_gb_s: PositiveFloat = Field(description="Peak DRAM bandwidth, GB/s (1e9 bytes/s).")
    l2_cache_mb: PositiveFloat | None = Field(default=None, description="Last-level on-chip cache, MB (2^20).")
    l2_bandwidth_gb_s: PositiveFloat | None = Field(
        default=None, description="Read bandwidth of a data set that fits the L2, GB/s (1e9 bytes/s), from a "
                                  "published microbenchmark or derived from one of the same die; the L2 reuse "
                                  "rule (roofline/l2.py) applies only to cards that give it.")
    compute_units: PositiveInt | None = Field(default=None, description="SMs (NVIDIA) or CUs (AMD).")
    compute_unit_name: Literal["SM", "CU"] = "SM"
    boost_clock_mhz: PositiveFloat | None = None
    sustained_clock_mhz: PositiveFloat | None = Field(
        default=None, description="GPU clock a published measurement shows the card holding under a full load "
                                  "at its power limit, MHz (GeForce GPU Boost runs above the rated boost clock); "
                                  "the datasheet peaks are at boost_clock_mhz, so compute rates scale by the ratio.")
    sustained_tensor_clock_mhz: PositiveFloat | None = Field(
        default=None, description="GPU clock a power-limited card holds under a sustained compute-bound (tensor-core "
                                  "GEMM) load at its board power limit, MHz; at most boost_clock_mhz. The roofline "
                                  "runs compute-bound operators at this clock and lighter ones between it and boost "
                                  "(roofline/power_limit.py). Absent: the card holds its rated clocks.")
    sustained_simt_clock_mhz: PositiveFloat | None = Field(
        default=None, description="The same for a sustained large FP32 GEMM on the CUDA cores (SIMT), MHz, where it "
                                  "differs: CUDA-core FP32 work draws its own power per operation. Needs "
                                  "sustained_tensor_clock_mhz; absent: SIMT work takes that clock.")
    burst_clock_mhz: PositiveFloat | None = Field(
        default=None, description="Highest GPU clock a published measurement shows under load, MHz: where GPU "
                                  "Boost runs a load too short to reach the power limit (a benchmark of a second "
                                  "or two). at_burst_clock() is the card at that clock.")

    tdp_w: PositiveFloat = Field(description="Board power / TDP / max TGP in watts (for a module: the budget of "
                                             "the power mode its figures describe).")
    memory_clock_mhz: PositiveFloat | None = Field(
        default=None, description="Memory (EMC) clock at which memory_bandwidth_gb_s holds, MHz; a power mode's "
                                  "bandwidth scales by its memory clock against this one.")
    power_modes: tuple[PowerMode, ...] = Field(default=(), description="Selectable power modes (Jetson nvpmodel).")
    power_mode: str | None = Field(default=None, description="The power mode the figures above describe (the "
                                                             "datasheet's); at_power_mode() gives another.")

    host_interface: str | None = Field(default=None, description="e.g. 'PCIe 5.0 x16'.")
    pcie_gen: PositiveInt | None = None
    pcie_lanes: PositiveInt | None = None
    peer_link: str | None = Field(default=None, description="e.g. 'NVLink 4' or 'Infinity Fabric'; absent = none.")
    peer_link_bandwidth_gb_s: PositiveFloat | None = Field(
        default=None, description="Total bidirectional peer bandwidth per device, GB/s, as vendors quote it.")

    # Prices live in price files (``prices/<id>.toml``, catalog/prices.py); no shipped device file sets these. A
    # user's own device file may: its price_usd is read as a purchase price ("launch MSRP (device file)").
    price_usd: PositiveFloat | None = Field(
        default=None, description="Kept for older device files: a list price in USD per card, read as a purchase "
                                  "price. Put prices in prices/<id>.toml instead.")
    price_date: str | None = Field(default=None, description="Kept for older device files: ISO date of price_usd.")
    price_note: str | None = Field(default=None, description="Kept for older device files: a note on price_usd.")

    dense_tops: dict[str, PositiveFloat] = Field(description="Dense peak per precision, TOPS (1e12 ops/s).")
    sparse_tops: dict[str, PositiveFloat] = Field(
        default_factory=dict, description="2:4 structured-sparse peak per precision, TOPS.")

    sources: tuple[Source, ...] = Field(min_length=1)
    citations: dict[str, str] = Field(description="Field or precision -> 'source-key: where' or 'derived: ...'.")
    notes: tuple[str, ...] = Field(default=(), description="Caveats: where vendors disagree, what was chosen.")

    _datasheet_power_mode: str | None = PrivateAttr(default=None)

    def model_post_init(self, context) -> None:
        self._datasheet_power_mode = self.power_mode  # kept by model_copy: the mode of the file's own figures

    @field_validator("dense_tops", "sparse_tops")
    @classmethod
    def _known_precisions(cls, peaks: dict[str, float]) -> dict[str, float]:
        unknown = sorted(set(peaks) - set(PEAK_KEYS))
        if unknown:
            raise ValueError(f"unknown precision {', '.join(unknown)}; expected names from {', '.join(PEAK_KEYS)}")
        return peaks

    @model_validator(mode="after")
    def _consistent(self) -> Hardware:
        if "fp32" not in self.dense_tops:
            raise ValueError("dense_tops must include fp32")
        for p, sparse in self.sparse_tops.items():
            dense = self.dense_tops.get(p)
            if dense is None:
                raise ValueError(f"sparse_tops.{p} is given but dense_tops.{p} is not")
            if sparse < dense:
                raise ValueError(f"sparse_tops.{p} = {sparse} is below dense_tops.{p} = {dense}; sparse >= dense")
        for name in ("sustained_clock_mhz", "burst_clock_mhz", "sustained_tensor_clock_mhz"):
            if getattr(self, name) is not None and self.boost_clock_mhz is None:
                raise ValueError(f"{name} is given but boost_clock_mhz is not: the datasheet peaks are scaled "
                                 "by that clock / boost")
        for name in ("sustained_tensor_clock_mhz", "sustained_simt_clock_mhz"):
            clock = getattr(self, name)
            if clock is not None and self.boost_clock_mhz is not None and clock > self.boost_clock_mhz:
                raise ValueError(f"{name} = {clock:g} is above boost_clock_mhz = {self.boost_clock_mhz:g}; a power "
                                 "limit only lowers the clock")
        if self.sustained_simt_clock_mhz is not None and self.sustained_tensor_clock_mhz is None:
            raise ValueError("sustained_simt_clock_mhz is given but sustained_tensor_clock_mhz is not")
        keys = {s.key for s in self.sources}
        if len(keys) != len(self.sources):
            raise ValueError("two sources share one key")
        for field, cite in self.citations.items():
            head = cite.split(":", 1)[0].strip()
            if head != "derived" and head not in keys:
                raise ValueError(f"citations.{field} cites unknown source {head!r}; "
                                 f"known: {', '.join(sorted(keys))} or 'derived: ...'")
        missing = [f for f in self.cited_fields() if not self._is_cited(f)]
        if missing:
            raise ValueError(f"no citation for {', '.join(missing)}; add them to [citations]")
        check_power_modes(self)
        return self

    def cited_fields(self) -> list[str]:
        """Every number in the file that needs a citation."""
        out = [name for name in _NUMERIC_FIELDS if getattr(self, name) not in (None, ())]
        out += [f"dense_tops.{p}" for p in self.dense_tops]
        out += [f"sparse_tops.{p}" for p in self.sparse_tops]
        return out

    def _is_cited(self, field: str) -> bool:
        return field in self.citations or field.split(".", 1)[0] in self.citations

    def citation(self, field: str) -> str | None:
        return self.citations.get(field) or self.citations.get(field.split(".", 1)[0])

    # --- derived quantities in base units -------------------------------------------------------------
    @property
    def memory_bytes(self) -> float:
        return self.memory_gb * 1e9

    @property
    def memory_bandwidth_bytes_per_s(self) -> float:
        return self.memory_bandwidth_gb_s * 1e9

    def peak_ops_per_s(self, precision: str, sparse: bool = False) -> float | None:
        tops = (self.sparse_tops if sparse else self.dense_tops).get(precision)
        return None if tops is None else tops * 1e12

    @property
    def clock_scale(self) -> float:
        """Sustained over rated boost clock (1.0 without a sustained clock): how far the clock-derived peaks
        (tensor and CUDA-core rates; not memory bandwidth) move under load."""
        if self.sustained_clock_mhz is None or self.boost_clock_mhz is None:
            return 1.0
        return self.sustained_clock_mhz / self.boost_clock_mhz

    @property
    def power_limited(self) -> bool:
        """True where a sustained compute-bound load holds the card below its rated boost clock
        (``sustained_tensor_clock_mhz`` below ``boost_clock_mhz``)."""
        return (self.sustained_tensor_clock_mhz is not None and self.boost_clock_mhz is not None
                and self.sustained_tensor_clock_mhz < self.boost_clock_mhz)

    def at_burst_clock(self) -> Hardware:
        """This card running a short load at its burst clock (itself when it has none): the clock-derived
        peaks scale by burst / boost instead of sustained / boost."""
        if self.burst_clock_mhz is None:
            return self
        cites = {**self.citations, "sustained_clock_mhz": self.citations.get("burst_clock_mhz", "")}
        return self.model_copy(update={"sustained_clock_mhz": self.burst_clock_mhz, "citations": cites})

    @property
    def power_modes_w(self) -> tuple[float, ...]:
        """Each power mode's budget, W, in file order (empty without modes)."""
        return tuple(m.power_w for m in self.power_modes)

    @property
    def datasheet_power_mode(self) -> str | None:
        """The mode the device file's figures describe (``power_mode`` before any ``at_power_mode``)."""
        return self._datasheet_power_mode

    @property
    def at_datasheet_mode(self) -> bool:
        """True unless this is the device in another power mode than its datasheet's (``at_power_mode``)."""
        return self.power_mode == self._datasheet_power_mode

    def get_power_mode(self, name: str) -> PowerMode:
        """The mode called ``name``; one line listing the modes for a name the device does not have."""
        return power_mode(self, name)

    def at_power_mode(self, name: str) -> Hardware:
        """This device in power mode ``name`` (``power_modes.at_power_mode``)."""
        return at_power_mode(self, name)

    def fastest_power_mode(self, max_power_w: float) -> PowerMode | None:
        """The fastest mode within ``max_power_w`` watts, None when no mode's budget fits."""
        return fastest_within(self, max_power_w)

    @property
    def pcie_bandwidth_bytes_per_s(self) -> float | None:
        """Per-direction PCIe payload bandwidth from generation and lanes, after line encoding: 8b/10b for PCIe
        1.x and 2.x, 128b/130b from 3.0 (PCI-SIG base specifications; 6.0's FLIT mode is approximated by
        128b/130b: its flits carry 242 of 256 bytes, about 4% less). Per-lane rates in GT/s, same source."""
        if not self.pcie_gen or not self.pcie_lanes:
            return None
        gt_s = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}.get(self.pcie_gen)
        if gt_s is None:
            return None
        encoding = 8 / 10 if self.pcie_gen <= 2 else 128 / 130
        return gt_s * 1e9 * encoding * self.pcie_lanes / 8

    def tops_per_watt(self, precision: str, sparse: bool = False) -> float | None:
        tops = (self.sparse_tops if sparse else self.dense_tops).get(precision)
        return None if tops is None else tops / self.tdp_w


_NUMERIC_FIELDS = (
    "memory_gb", "memory_bandwidth_gb_s", "l2_cache_mb", "l2_bandwidth_gb_s", "compute_units", "boost_clock_mhz",
    "sustained_clock_mhz", "burst_clock_mhz", "sustained_tensor_clock_mhz",
    "sustained_simt_clock_mhz", "tdp_w", "memory_clock_mhz", "pcie_gen", "pcie_lanes", "peer_link_bandwidth_gb_s", "price_usd", "launch_date",
)

_ALIAS_NORMALISE = re.compile(r"[\s_\-]+")


def normalise_name(text: str) -> str:
    """'RTX 4090', 'rtx_4090', 'rtx4090' -> 'rtx4090' (lower case, no spaces, dashes or underscores)."""
    return _ALIAS_NORMALISE.sub("", text.strip().lower())
