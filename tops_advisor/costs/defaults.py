"""The cost model's defaults, each a ``Default`` (its value and where it comes from): the electricity price,
the data centre's power usage effectiveness (PUE), the years a bought card is paid off over, and a card's board
power at rest and under load. ``CostSettings`` (``pricing.py``) starts from these; every one can be overridden
(``recommend --electricity-usd-per-kwh 0.08 --pue 1.2 --life-years 5``)."""

from __future__ import annotations

from dataclasses import dataclass

from ..roofline.defaults.base import Default

HOURS_PER_YEAR = 365 * 24          # 8,760 h: a calendar year of use, without leap days
SECONDS_PER_HOUR = 3600.0
UNITS_PER_MILLION = 1e6


@dataclass(frozen=True)
class CostDefaults:
    # US dollars per kWh a data centre pays for electricity.
    electricity_usd_per_kwh: Default[float] = Default(
        0.1241, "U.S. Energy Information Administration, average retail price of electricity to the commercial "
                "sector, United States, year 2022: 12.41 cents/kWh (EIA Electric Power Monthly / Annual; read in "
                "the 2024 Competitiveness Redbook, Table 43 'Average Retail Price Per KwH for Commercial "
                "Customers (2021-2022)', row 'United States 12.41', 'Source: U.S. Department of Energy', "
                "https://viewer.joomag.com/2024-competitiveness-redbook/0069657001706313618/p50)")
    # Facility power / IT power: what cooling, power conversion and the building add to each watt a card draws.
    pue: Default[float] = Default(
        1.58, "Uptime Institute, 'Large data centers are mostly more efficient, analysis confirms' (J. Davis, "
              "J. O'Brien, 2024-02-07, https://journal.uptimeinstitute.com/large-data-centers-are-mostly-more-"
              "efficient-analysis-confirms/): 'In 2023, industry average PUE stood at 1.58' (Global Data Center "
              "Survey; 1.55-1.59 since 2020)")
    # Years a bought card's price is spread over, every hour of them (straight-line amortisation).
    life_years: Default[float] = Default(
        3.0, "three years of use: the server depreciation life Amazon booked until January 2020, when it moved to "
             "four (theCUBE Research, Breaking Analysis 298, 'Resetting GPU Depreciation', "
             "https://thecuberesearch.com/?p=319364); hyperscalers book servers over 5-6 years today, so three is "
             "the short end, for a card bought for one job")
    # Board power of a card with a model loaded and no work, as a share of its TDP.
    idle_power_fraction: Default[float] = Default(
        0.12, "H200 SXM with a CUDA context and no work: 84.0-86.2 W of its 700 W limit at the start of four "
              "probe runs (benchmarks/results/h200-run1-full.json to h200-run4-full.json, state.power_draw_w), "
              "12%; nvidia-smi at rest read 79.9 W (benchmarks/results/h200-run1-log.txt). Assumed the same share "
              "of TDP on every card. A CUDA context lifts a card above bare idle by 26-66 W on H100, A100 and L40S "
              "(arXiv:2605.23918), so a serving card's idle is the with-context figure")
    # Board power of a card kept busy (compute- or memory-bound kernels back to back), as a share of its TDP.
    busy_power_fraction: Default[float] = Default(
        1.0, "H200 SXM under a held bf16 matrix load: 691.7 W median of its 700 W limit, throttled by the software "
             "power cap (hardware_db/calibrations/h200-sxm.json, sustained.power_w_median): a card kept busy draws "
             "its board power limit (99% measured; 100% taken, since the cap is what holds it there). Memory-bound "
             "kernels are priced at the same power: an upper bound for them")


COST_DEFAULTS = CostDefaults()
