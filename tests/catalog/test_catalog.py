"""The hardware catalog: shipped files validate, bad files fail with the message they must give, names resolve."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.paths import FIXTURES
from tops_advisor.catalog import Catalog, load_catalog, load_hardware_file, shipped_catalog_dir
from tops_advisor.catalog.schema import normalise_name
from tops_advisor.errors import AmbiguousHardwareError, CatalogError, UnknownHardwareError

SHIPPED = shipped_catalog_dir()
SHIPPED_FILES = sorted(SHIPPED.glob("*.toml"))

# The NVIDIA data-center devices this module checks in detail.
DATACENTER_IDS = ("t4", "v100-sxm2-32gb", "a10", "a100-pcie-40gb", "a100-sxm4-80gb", "a100-pcie-80gb", "h100-sxm",
                  "h100-pcie", "h100-nvl", "h200-sxm", "h200-nvl", "l4", "l40s", "b200")
# Names that are ambiguous on purpose: several variants share them.
INTENDED_AMBIGUOUS = {"h100", "h200", "a100", "a100pcie", "a10080gb", "h10080gb"}

# file in tests/fixtures/catalog_bad -> text the error must contain (besides the file name)
BAD_FILES = {
    "unknown-key.toml": "field shader_clock_mhz: unknown key",
    "negative-number.toml": "field memory_bandwidth_gb_s: Input should be greater than 0 (got -1000)",
    "zero-peak.toml": "field dense_tops.fp8: Input should be greater than 0 (got 0)",
    "sparse-below-dense.toml": "sparse_tops.fp16 = 50.0 is below dense_tops.fp16 = 100.0",
    "name-mismatch.toml": "field id: 'some-other-id' must equal the file name 'name-mismatch'",
    "missing-citation.toml": "no citation for tdp_w",
    "unknown-source.toml": "citations.tdp_w cites unknown source 'vendor-page'",
    "unknown-precision.toml": "field dense_tops: unknown precision fp7",
    "malformed.toml": "not valid TOML",
    "power-mode-too-many-sms.toml": "power mode 10W has 12 SMs; the device has 8",
    "power-mode-unknown-datasheet-mode.toml": "power_mode = '30W' is not among the modes: 10W (10 W), MAXN (25 W)",
    "power-mode-datasheet-mismatch.toml": "power mode MAXN (the datasheet's: power_mode) must match boost_clock_mhz",
}


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


# --- shipped files ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", SHIPPED_FILES, ids=lambda p: p.name)
def test_every_shipped_file_validates(path):
    hw = load_hardware_file(path)
    assert hw.id == path.stem


def test_shipped_catalog_has_the_datacenter_devices(catalog):
    missing = [i for i in DATACENTER_IDS if i not in catalog]
    assert not missing


@pytest.mark.parametrize("device_id", DATACENTER_IDS)
def test_datacenter_devices_are_sourced_and_sane(catalog, device_id):
    hw = catalog.get(device_id)
    assert hw.segment == "datacenter" and hw.vendor == "NVIDIA"
    # every number is cited (validation checks it; restated here so a schema change cannot drop it silently)
    assert all(hw.citation(f) for f in hw.cited_fields())
    # 2:4 sparsity doubles the tensor rate exactly; datasheets round, so allow 1%
    for p, sparse in hw.sparse_tops.items():
        assert 1.98 <= sparse / hw.dense_tops[p] <= 2.02, p
    # a launch date and a note on what was chosen where vendors disagree
    assert hw.launch_date is not None and hw.notes


def test_hand_checked_figures(catalog):
    h100 = catalog.get("h100-sxm")
    # datasheet: FP16 tensor 1,979 TFLOPS with sparsity -> dense 1979 / 2 = 989.5 TOPS
    assert h100.peak_ops_per_s("fp16") == pytest.approx(989.5e12)
    assert h100.peak_ops_per_s("fp16", sparse=True) == pytest.approx(1979e12)
    # 3.35 TB/s = 3350 GB/s = 3.35e12 bytes/s
    assert h100.memory_bandwidth_bytes_per_s == pytest.approx(3.35e12)
    # PCIe Gen5 x16: 32 GT/s x 128/130 x 16 lanes / 8 bits = 63.0 GB/s per direction
    assert h100.pcie_bandwidth_bytes_per_s == pytest.approx(32e9 * 128 / 130 * 16 / 8)
    # TOPS/W: 989.5 / 700 W = 1.4136
    assert h100.tops_per_watt("fp16") == pytest.approx(989.5 / 700)
    a100 = catalog.get("a100-sxm4-80gb")
    assert a100.dense_tops["tf32"] == 156 and a100.sparse_tops["int4"] == 2496  # datasheet / whitepaper Table 1
    assert a100.memory_bandwidth_gb_s == 2039
    b200 = catalog.get("b200")
    # HGX B200: FP4 144 PFLOPS sparse for 8 GPUs -> 144000 / 8 / 2 = 9000 TOPS dense per GPU
    assert b200.dense_tops["fp4"] == 144_000 / 8 / 2
    # 1,440 GB / 8 GPUs = 180 GB
    assert b200.memory_gb == 1440 / 8
    # H100 NVL per GPU: FP8 3,341 sparse -> 1670.5 dense; H200 NVL has the same compute
    assert catalog.get("h100-nvl").dense_tops["fp8"] == catalog.get("h200-nvl").dense_tops["fp8"] == 3341 / 2


def test_precisions_a_device_cannot_do_are_absent(catalog):
    for old in ("a100-pcie-40gb", "a100-sxm4-80gb", "a100-pcie-80gb", "a10", "t4", "v100-sxm2-32gb"):
        assert "fp8" not in catalog.get(old).dense_tops, old  # FP8 arrived with Hopper / Ada
    for hopper in ("h100-sxm", "h100-pcie", "h100-nvl", "h200-sxm", "h200-nvl", "b200"):
        assert "int4" not in catalog.get(hopper).dense_tops, hopper  # Hopper and Blackwell dropped INT4 tensor math
    assert set(catalog.get("v100-sxm2-32gb").dense_tops) == {"fp64", "fp32", "fp16"}  # Volta: FP16 tensor only
    assert not catalog.get("v100-sxm2-32gb").sparse_tops and not catalog.get("t4").sparse_tops
    assert "bf16" not in catalog.get("t4").dense_tops
    assert "fp4" in catalog.get("b200").dense_tops
    assert all(v > 0 for hw in catalog for v in hw.dense_tops.values())


# --- bad files -------------------------------------------------------------------------------------------

def test_every_bad_fixture_has_an_expected_message():
    assert {p.name for p in (FIXTURES / "catalog_bad").glob("*.toml")} == set(BAD_FILES)


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_file_gives_its_message(name):
    path = FIXTURES / "catalog_bad" / name
    with pytest.raises(CatalogError) as info:
        load_hardware_file(path)
    message = str(info.value)
    assert message.startswith(str(path)), message  # names the file
    assert BAD_FILES[name] in message
    assert "\n" not in message.split(":", 1)[0]


def test_missing_file():
    with pytest.raises(CatalogError, match="no such file"):
        load_hardware_file(FIXTURES / "nope.toml")


# --- directories -----------------------------------------------------------------------------------------

def test_missing_catalog_dir(tmp_path):
    with pytest.raises(CatalogError, match="does not exist"):
        Catalog.from_dirs([tmp_path / "absent"])


def test_catalog_path_that_is_a_file():
    with pytest.raises(CatalogError, match="is not a directory"):
        Catalog.from_dirs([FIXTURES / "catalog_extra" / "toy-gpu.toml"])


def test_unreadable_catalog_dir(tmp_path, monkeypatch):
    # Tests run as root here, so chmod cannot make a directory unreadable; simulate the OS error instead.
    def refuse(self):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "iterdir", refuse)
    with pytest.raises(CatalogError, match="cannot be read"):
        Catalog.from_dirs([tmp_path])


def test_bad_file_in_a_dir_fails_the_catalog():
    with pytest.raises(CatalogError, match="catalog_bad/"):
        Catalog.from_dirs([FIXTURES / "catalog_bad"])


def test_two_files_naming_one_device():
    # toy-gpu.toml and toygpu.toml: each valid, but every lookup of 'toy gpu' would be ambiguous
    with pytest.raises(CatalogError, match="'toygpu' names the same device as 'toy-gpu'"):
        Catalog.from_dirs([FIXTURES / "catalog_clash"])


def test_extra_dir_adds_and_overrides(tmp_path):
    override = tmp_path / "t4.toml"
    override.write_text((SHIPPED / "t4.toml").read_text().replace("tdp_w = 70", "tdp_w = 60"))
    cat = Catalog.from_dirs([SHIPPED, FIXTURES / "catalog_extra", tmp_path])
    assert cat.get("t4").tdp_w == 60  # later directory wins by id
    assert cat.origins["t4"] == override
    assert cat.get("toy").id == "toy-gpu"  # added device, resolved by alias
    assert len(cat) == len(SHIPPED_FILES) + 1


def test_env_var_adds_a_directory(monkeypatch):
    monkeypatch.setenv("TOPS_ADVISOR_CATALOG", str(FIXTURES / "catalog_extra"))
    assert load_catalog().get("Toy GPU 16GB").id == "toy-gpu"
    monkeypatch.delenv("TOPS_ADVISOR_CATALOG")
    with pytest.raises(UnknownHardwareError):
        load_catalog().get("toy-gpu")


# --- names -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,expected", [
    ("h200-sxm", "h200-sxm"), ("H200 SXM", "h200-sxm"),
    ("h200_sxm", "h200-sxm"), ("NVIDIA H200", "h200-sxm"), ("H200 NVL", "h200-nvl"), ("h100 nvl", "h100-nvl"),
    ("H100 SXM", "h100-sxm"), ("H100 SXM5", "h100-sxm"), ("H100 PCIe", "h100-pcie"), ("v100", "v100-sxm2-32gb"), ("Tesla T4", "t4"),
    ("A100 SXM4", "a100-sxm4-80gb"), ("A100 40GB", "a100-pcie-40gb"), ("B200", "b200"), ("L40S", "l40s"),
])
def test_alias_resolves(catalog, name, expected):
    assert catalog.get(name).id == expected


@pytest.mark.parametrize("name,choices", [
    ("h100", "h100-nvl, h100-pcie, h100-sxm"),
    ("h200", "h200-nvl, h200-sxm"),
    ("h100-80gb", "h100-pcie, h100-sxm"),
    ("A100", "a100-pcie-40gb, a100-pcie-80gb, a100-sxm4-80gb"),
    ("a100 pcie", "a100-pcie-40gb, a100-pcie-80gb"),
])
def test_ambiguous_alias_names_the_choices(catalog, name, choices):
    with pytest.raises(AmbiguousHardwareError) as info:
        catalog.get(name)
    assert str(info.value) == f"hardware name {name!r} is ambiguous: it matches {choices}"
    assert info.value.hint == "use one of those ids"


def test_unknown_id_suggests_close_ids(catalog):
    with pytest.raises(UnknownHardwareError) as info:
        catalog.get("h10o-sxm")
    assert str(info.value) == "unknown hardware 'h10o-sxm'"
    assert info.value.hint.startswith("did you mean: ") and "h100-sxm" in info.value.hint


def test_unknown_name_far_from_everything_points_to_list(catalog):
    with pytest.raises(UnknownHardwareError) as info:
        catalog.get("zzzzzzzzzzzzqqq")
    assert "hardware list" in info.value.hint


def test_no_accidental_ambiguity_among_datacenter_devices(catalog):
    seen: dict[str, set[str]] = {}
    for device_id in DATACENTER_IDS:
        hw = catalog.get(device_id)
        for name in (hw.id, hw.name, *hw.aliases):
            seen.setdefault(normalise_name(name), set()).add(hw.id)
    ambiguous = {name for name, ids in seen.items() if len(ids) > 1}
    assert ambiguous == INTENDED_AMBIGUOUS


def test_fixture_dir_copy_is_independent(tmp_path):
    # a copied shipped file validates from anywhere (no path assumptions besides the file name)
    shutil.copy(SHIPPED / "h200-sxm.toml", tmp_path / "h200-sxm.toml")
    assert Catalog.from_dirs([tmp_path]).get("h200-sxm").memory_gb == 141
