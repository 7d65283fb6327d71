"""The consumer, edge and AMD device files: they validate, their figures are self-consistent, their aliases
resolve, and docs/reports/article-table.md matches what the catalog says today.

Expected numbers are derived by hand in comments (units x clock x ops per clock), not copied from the files.
"""

from __future__ import annotations

import importlib.util

import pytest

from tests.paths import REPO
from tops_advisor.catalog import Catalog, load_hardware_file
from tops_advisor.errors import AmbiguousHardwareError, UnknownHardwareError

DB = REPO / "hardware_db"

GEFORCE = ("rtx-3090", "rtx-3090-ti", "rtx-4090", "rtx-5090")
JETSON = ("jetson-agx-orin-64gb", "jetson-agx-orin-32gb", "jetson-orin-nx-16gb", "jetson-orin-nano-8gb")
MY_DEVICES = GEFORCE + JETSON + ("titan-rtx", "mi300x")


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return Catalog.from_dirs([DB])


@pytest.mark.parametrize("device_id", MY_DEVICES)
def test_device_file_validates_and_is_named_by_its_id(device_id):
    hw = load_hardware_file(DB / f"{device_id}.toml")
    assert hw.id == device_id
    assert "fp32" in hw.dense_tops
    # every peak carries a citation (the schema enforces it; this guards against a schema regression)
    for field in [f"dense_tops.{p}" for p in hw.dense_tops] + [f"sparse_tops.{p}" for p in hw.sparse_tops]:
        assert hw.citation(field), field


@pytest.mark.parametrize("device_id", GEFORCE)
def test_geforce_fp32_accumulate_is_half_the_fp16_accumulate_rate(catalog, device_id):
    hw = catalog.get(device_id)
    fp16, fp16acc = hw.dense_tops["fp16"], hw.dense_tops["fp16_fp16acc"]
    assert fp16 < fp16acc
    # GeForce tensor cores run FP32 accumulation at half rate: 71 vs 142 (3090), 165.2 vs 330.3 (4090)
    assert fp16 == pytest.approx(fp16acc / 2, rel=0.002)
    assert hw.dense_tops["bf16"] == fp16  # BF16 only exists with FP32 accumulation
    if "fp8" in hw.dense_tops:
        assert hw.dense_tops["fp8"] == pytest.approx(hw.dense_tops["fp8_fp16acc"] / 2, rel=0.002)


@pytest.mark.parametrize("device_id", MY_DEVICES)
def test_sparse_is_exactly_twice_dense(catalog, device_id):
    hw = catalog.get(device_id)
    for p, sparse in hw.sparse_tops.items():
        # vendors round each printed figure (RTX 3090 TF32: 35.6 dense, 71 sparse), hence 0.5%
        assert sparse == pytest.approx(2 * hw.dense_tops[p], rel=0.005), p


def test_rtx4090_figures_from_units_and_clock(catalog):
    hw = catalog.get("rtx-4090")
    # Ada SM: 4 tensor cores, 128 FP16 FMA/clk each with FP32 accumulate = 512 FLOP/clk/SM.
    # 128 SMs x 2520e6 Hz x 512 = 165.15e12 -> whitepaper prints 165.2
    assert hw.compute_units * hw.boost_clock_mhz * 1e6 * 512 / 1e12 == pytest.approx(165.15, abs=0.01)
    assert hw.dense_tops["fp16"] == pytest.approx(165.15, abs=0.06)
    # FP32 on CUDA cores: 16384 cores x 2 FLOP x 2520e6 = 82.58e12
    assert hw.dense_tops["fp32"] == pytest.approx(82.58, abs=0.05)
    # the article's 'FP8 660' is FP16-accumulate; FP32 accumulate: 128 x 2520e6 x 1024 = 330.3e12
    assert hw.dense_tops["fp8"] == pytest.approx(330.3, abs=0.05)
    assert hw.sparse_tops["fp8"] == pytest.approx(660.6, abs=0.05)


def test_rtx3090_figures_from_units_and_clock(catalog):
    hw = catalog.get("rtx-3090")
    # 82 SMs x 1695e6 Hz x 512 FLOP/clk/SM = 71.16e12 (whitepaper: 71); FP16 accumulate doubles it: 142.3
    assert hw.dense_tops["fp16"] == pytest.approx(71.16, abs=0.2)
    assert hw.dense_tops["fp16_fp16acc"] == pytest.approx(142.3, abs=0.4)
    # memory bandwidth: 384-bit bus x 19.5 Gbps / 8 = 936 GB/s
    assert hw.memory_bandwidth_gb_s == 384 * 19.5 / 8


def test_titan_rtx_fp16_from_units_and_clock(catalog):
    hw = catalog.get("titan-rtx")
    # 72 SMs x 8 tensor cores x 64 FMA x 2 FLOP x 1770e6 Hz = 130.5e12; INT8 twice, INT4 four times
    assert hw.dense_tops["fp16"] == pytest.approx(72 * 8 * 64 * 2 * 1770e6 / 1e12, abs=0.05)
    assert hw.dense_tops["int8"] == pytest.approx(2 * 130.5, abs=0.1)
    assert hw.dense_tops["int4"] == pytest.approx(4 * 130.5, abs=0.1)
    # Turing has no BF16, TF32, FP8 or sparsity: absent, never zero
    assert hw.peak_ops_per_s("bf16") is None and hw.peak_ops_per_s("tf32") is None
    assert hw.sparse_tops == {}


def test_mi300x_figures_from_units_and_clock(catalog):
    hw = catalog.get("mi300x")
    assert hw.compute_unit_name == "CU"
    # 304 CUs x 2100e6 Hz x 2048 FP16 FLOP/clk/CU = 1307.44e12; FP8 and INT8 twice that: 2614.9
    assert hw.dense_tops["fp16"] == pytest.approx(304 * 2100e6 * 2048 / 1e12, abs=0.05)
    assert hw.dense_tops["fp8"] == pytest.approx(2614.9, abs=0.05)
    assert hw.sparse_tops["int8"] == pytest.approx(5229.8, abs=0.05)
    # 7 Infinity Fabric links x 128 GB/s = 896 GB/s
    assert hw.peer_link_bandwidth_gb_s == 7 * 128


@pytest.mark.parametrize(("device_id", "sms", "clock_mhz", "headline_sparse_int8"), [
    # GPU share only; the headline also counts the DLAs (275 and 100) except on the Orin Nano (no DLA)
    ("jetson-agx-orin-64gb", 16, 1300, 275),
    ("jetson-agx-orin-32gb", 14, 930, 200),
    ("jetson-orin-nx-16gb", 8, 918, 100),
    ("jetson-orin-nano-8gb", 8, 625, 40),
])
def test_jetson_gpu_peaks_from_units_and_clock(catalog, device_id, sms, clock_mhz, headline_sparse_int8):
    hw = catalog.get(device_id)
    assert hw.segment == "edge"
    assert hw.compute_units == sms and hw.boost_clock_mhz == clock_mhz
    # Orin SM (A100-class tensor cores): 4096 dense INT8 ops/clk, 2048 FP16 FLOP/clk.
    # e.g. AGX Orin 64GB: 16 x 1.3e9 x 4096 = 85.2e12 dense INT8, 170.4e12 sparse (NVIDIA: 'GPU 170')
    assert hw.dense_tops["int8"] == pytest.approx(sms * clock_mhz * 1e6 * 4096 / 1e12, abs=0.06)
    assert hw.dense_tops["fp16"] == pytest.approx(sms * clock_mhz * 1e6 * 2048 / 1e12, abs=0.06)
    # the marketing headline is sparse INT8 and (except Nano) includes the DLAs: the GPU's share is below it
    assert hw.sparse_tops["int8"] <= headline_sparse_int8 * 1.03
    # tdp_w is the budget of the mode the figures describe; no mode without JetPack 6.2's Super software has
    # a larger budget (the Super modes of the Orin NX / Nano may)
    assert hw.get_power_mode(hw.power_mode).power_w == hw.tdp_w
    assert max(m.power_w for m in hw.power_modes if not m.software) == hw.tdp_w


def test_tops_per_watt_is_peak_over_tdp(catalog):
    # RTX 4090: 165.2 TFLOPS / 450 W = 0.3671; A Jetson AGX Orin 64GB at 60 W: 42.6 / 60 = 0.71
    assert catalog.get("rtx-4090").tops_per_watt("fp16") == pytest.approx(165.2 / 450)
    assert catalog.get("jetson-agx-orin-64gb").tops_per_watt("fp16") == pytest.approx(0.71)
    assert catalog.get("titan-rtx").tops_per_watt("bf16") is None


@pytest.mark.parametrize(("name", "device_id"), [
    ("4090", "rtx-4090"), ("RTX 4090", "rtx-4090"), ("rtx4090", "rtx-4090"), ("rtx_4090", "rtx-4090"),
    ("3090", "rtx-3090"), ("3090 Ti", "rtx-3090-ti"), ("5090", "rtx-5090"), ("titan rtx", "titan-rtx"),
    ("agx orin", "jetson-agx-orin-64gb"), ("orin nano", "jetson-orin-nano-8gb"), ("MI300X", "mi300x"),
])
def test_aliases_people_type_resolve(catalog, name, device_id):
    assert catalog.get(name).id == device_id


def test_orin_alone_is_ambiguous_and_names_the_choices(catalog):
    with pytest.raises(AmbiguousHardwareError) as err:
        catalog.get("orin")
    for device_id in JETSON:
        assert device_id in str(err.value)


def test_unknown_name_suggests_close_ids(catalog):
    with pytest.raises(UnknownHardwareError) as err:
        catalog.get("rtx-4085")
    assert err.value.hint and "rtx-4080" in err.value.hint


def test_article_table_doc_matches_the_catalog():
    spec = importlib.util.spec_from_file_location("article_table", REPO / "benchmarks" / "reports" / "article_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    doc = (REPO / "docs" / "reports" / "article-table.md").read_text(encoding="utf-8")
    block = module.render(Catalog.from_dirs([DB]))
    assert module.replace_block(doc, block) == doc, (
        "docs/reports/article-table.md is stale: run python3 benchmarks/reports/article_table.py --write docs/reports/article-table.md")
    # the corrections the doc exists for
    assert "| FP16 tensor, dense, FP32 accumulate (TFLOPS) | 142 | 71 | 330 | 165.2 |" in block
