"""The probe without a GPU: NVML parsing against a fake, pure summaries, the CPU probe end to end."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from tops_advisor.calibration import SustainedSample, load_calibration, save_calibration
from tops_advisor.catalog import load_catalog
from tops_advisor.cli import cli
from tops_advisor.probe.gemm import GemmResult
from tops_advisor.probe.memory import BandwidthResult
from tops_advisor.probe.nvml import DeviceFacts, decode_throttle_reasons, read_device_facts, sample_state
from tops_advisor.probe.runner import match_catalog, run_probe
from tops_advisor.probe.sustained import summarise

torch = pytest.importorskip("torch")


class FakeNVMLError(Exception):
    pass


class FakeNVML:
    """Answers like pynvml on an H200 at idle: milliwatts, MHz, bytes, a CUDA version as 13000."""

    NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 0, 2, 0

    def __init__(self, mask=0x1, refuse=()):
        self.mask, self.refuse = mask, set(refuse)

    def _ok(self, name):
        if name in self.refuse:
            raise FakeNVMLError("Not Supported")

    def nvmlDeviceGetHandleByIndex(self, i):
        return f"handle{i}"

    def nvmlDeviceGetName(self, h):
        return b"NVIDIA H200"  # old bindings return bytes

    def nvmlDeviceGetMemoryInfo(self, h):
        return SimpleNamespace(total=150_754_820_096, used=0, free=150_754_820_096)

    def nvmlDeviceGetClockInfo(self, h, which):
        self._ok("clock")
        return {0: 345, 2: 3201}[which]

    def nvmlDeviceGetMaxClockInfo(self, h, which):
        return {0: 1980, 2: 3201}[which]

    def nvmlDeviceGetPowerManagementLimit(self, h):
        return 700_000

    def nvmlDeviceGetPowerUsage(self, h):
        self._ok("power")
        return 79_900

    def nvmlDeviceGetTemperature(self, h, sensor):
        return 37

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h):
        return 4

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h):
        return 5

    def nvmlDeviceGetCurrPcieLinkWidth(self, h):
        return 16

    def nvmlDeviceGetMaxPcieLinkWidth(self, h):
        return 16

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, h):
        return self.mask

    def nvmlSystemGetDriverVersion(self):
        return "580.159.04"

    def nvmlSystemGetCudaDriverVersion(self):
        return 13000


def test_nvml_facts_parse_units():
    f = read_device_facts(FakeNVML())
    assert f.name == "NVIDIA H200"
    assert f.memory_total_bytes == 150_754_820_096
    assert (f.sm_clock_mhz, f.sm_clock_max_mhz, f.mem_clock_mhz) == (345, 1980, 3201)
    assert f.power_limit_w == 700.0 and f.power_draw_w == 79.9  # milliwatts / 1000
    assert (f.pcie_gen, f.pcie_gen_max, f.pcie_width, f.pcie_width_max) == (4, 5, 16, 16)
    assert f.throttle_reasons == ("gpu_idle",)
    assert f.driver_version == "580.159.04" and f.cuda_driver_version == "13.0"  # 13000 -> 13.0
    assert f.notes == ()


def test_nvml_refused_query_leaves_none_and_a_note():
    f = read_device_facts(FakeNVML(refuse={"power"}))
    assert f.power_draw_w is None and f.power_limit_w == 700.0
    assert len(f.notes) == 1 and "power draw" in f.notes[0]


def test_throttle_reasons_decode():
    # 0x4 sw power cap + 0x40 hw thermal + 0x1000 (a bit nvml.h may add later)
    assert decode_throttle_reasons(0x4 | 0x40 | 0x1000) == ("sw_power_cap", "hw_thermal_slowdown", "bit_0x1000")
    assert decode_throttle_reasons(0) == ()
    s = sample_state(FakeNVML(mask=0x4))
    assert s.throttle_reasons == ("sw_power_cap",) and s.power_w == 79.9 and s.sm_clock_mhz == 345


def test_sustained_summary_arithmetic():
    samples = [SustainedSample(t_s=0.5 * (i + 1), tops=t, sm_clock_mhz=c, power_w=p, temperature_c=50 + i,
                               throttle_reasons=r)
               for i, (t, c, p, r) in enumerate([(700, 1980, 690, ()), (680, 1700, 700, ("sw_power_cap",)),
                                                 (660, 1500, 700, ("sw_power_cap", "gpu_idle"))])]
    s = summarise("bf16", samples)
    assert (s.tops_start, s.tops_end, s.tops_median) == (700, 660, 680)  # first, last, median of 3
    assert (s.sm_clock_mhz_min, s.sm_clock_mhz_max) == (1500, 1980)
    assert s.power_w_median == 700 and s.temperature_c_max == 52
    assert s.tops_per_watt == pytest.approx(680 / 700)  # median TOPS / median W
    assert s.throttle_reasons == ("sw_power_cap",) and s.throttled  # gpu_idle is not a slowdown
    steady = summarise("bf16", [SustainedSample(t_s=1, tops=100), SustainedSample(t_s=2, tops=98)])
    assert not steady.throttled and steady.tops_per_watt is None  # 2% drop < 5%, no power reading


def test_rate_arithmetic():
    # 2 * 8192^3 = 1.0995e12 ops in 1.5 ms -> 733.0 TOPS
    assert GemmResult("bf16", 8192, 8192, 8192, 1, 1.5e-3).tops == pytest.approx(2 * 8192**3 / 1.5e-3 / 1e12)
    assert GemmResult("bf16", 1, 4096, 4096, 4, 1e-3).ops == 2 * 4096 * 4096 * 4
    # a copy of 1 GiB reads and writes it: 2 * 2^30 bytes in 0.5 ms -> 4294.97 GB/s
    assert BandwidthResult("copy", 2 * 2**30, 5e-4).gb_s == pytest.approx(4294.967296)


@pytest.mark.parametrize("nvml_name, expected", [
    ("NVIDIA H200", "h200-sxm"), ("NVIDIA H100 80GB HBM3", "h100-sxm"), ("NVIDIA GeForce RTX 4090", "rtx-4090"),
    ("Tesla T4", "t4"), ("NVIDIA Imaginary 9000", None),
])
def test_match_catalog(nvml_name, expected):
    assert match_catalog(nvml_name, load_catalog()) == expected


def test_cpu_probe_end_to_end(tmp_path):
    from click.testing import CliRunner

    out = tmp_path / "cpu.json"
    res = CliRunner().invoke(cli, ["probe", "--device", "cpu", "--quick", "--json", "--output", str(out)])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["backend"] == "cpu" and data["saved_to"] == [str(out)]
    assert "probe:" in res.stderr and "calibration written to" in res.stderr
    cal = load_calibration(out)
    assert cal.backend == "cpu" and not cal.matched_catalog and cal.hardware.startswith("CPU ")
    assert set(cal.measured_tops) >= {"fp32"} and cal.memory_bandwidth_gb_s > 0
    assert cal.read_bandwidth_gb_s and cal.elementwise_bandwidth_gb_s and cal.kernel_eager_us
    assert cal.module_call_us and cal.module_call_us > 0   # the module stack, in fp32 on the CPU
    assert cal.kernel_graph_us is None  # no CUDA graphs on the CPU
    # quick CPU grid: m in {1, 8, 64} x n=k in {256, 512}, fp32 -> 6 samples
    assert len(cal.gemm_samples) == 6 and {s.m for s in cal.gemm_samples} == {1, 8, 64}
    assert cal.environment["command"].startswith("tops-advisor probe --device cpu --quick")


@pytest.mark.slow
def test_cpu_probe_table_output():
    from click.testing import CliRunner

    res = CliRunner().invoke(cli, ["probe", "--device", "cpu"])
    assert res.exit_code == 0, res.output
    assert "Matrix throughput" in res.stdout and "fp32" in res.stdout and "Per-kernel cost" in res.stdout


def test_bad_sustained_value():
    from click.testing import CliRunner

    res = CliRunner().invoke(cli, ["probe", "--device", "cpu", "--sustained", "0"])
    assert res.exit_code == 2 and "--sustained 0" in res.stderr and "Traceback" not in res.output


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_no_gpu_is_one_clear_line():
    from click.testing import CliRunner

    res = CliRunner().invoke(cli, ["probe"])
    assert res.exit_code == 2
    assert res.stderr.startswith("error: no CUDA GPU is visible") and "--device cpu" in res.stderr


@pytest.mark.slow
def test_unwritable_output(tmp_path):
    from click.testing import CliRunner

    blocker = tmp_path / "file"
    blocker.write_text("x")
    res = CliRunner().invoke(cli, ["probe", "--device", "cpu", "--output", str(blocker / "c.json")])
    assert res.exit_code == 2 and "cannot write calibration" in res.stderr


@pytest.mark.slow
def test_ctrl_c_keeps_measurements_and_writes_nothing(tmp_path, monkeypatch):
    from click.testing import CliRunner

    import tops_advisor.probe.overhead as overhead

    out = tmp_path / "old.json"
    save_calibration(run_probe("cpu", "quick", progress=None).calibration, out)
    before = out.read_text()

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(overhead, "eager_kernel_s", interrupted)  # Ctrl-C after matmul and memory
    r = run_probe("cpu", "quick", progress=None)
    assert r.interrupted and r.best and "copy" in r.bandwidth_gb_s  # what was measured is kept
    res = CliRunner().invoke(cli, ["probe", "--device", "cpu", "--json", "--output", str(out)])
    assert res.exit_code == 130
    assert "no calibration written" in res.stderr
    assert json.loads(res.stdout)["interrupted"] is True and json.loads(res.stdout)["saved_to"] == []
    assert out.read_text() == before  # the old calibration is untouched


def test_warnings_from_card_state():
    from tops_advisor.probe.report import probe_warnings
    from tops_advisor.probe.runner import ProbeResult

    facts = DeviceFacts(name="NVIDIA H200", pcie_gen=4, pcie_gen_max=5, pcie_width=8, pcie_width_max=16,
                        throttle_reasons=("hw_thermal_slowdown",), sm_clock_max_mhz=1400, power_limit_w=500)
    r = ProbeResult("cuda", "quick", facts, "h200-sxm", True, {})
    r.best["bf16"] = GemmResult("bf16", 8192, 8192, 8192, 1, 2 * 8192**3 / 300e12)  # 300 TOPS < half of 989.5
    text = " | ".join(probe_warnings(r, load_catalog().get("h200-sxm")))
    for expected in ("hw_thermal_slowdown", "gen 4, below its maximum gen 5", "x8, narrower", "1400 MHz",
                     "power limit 500 W", "bf16 reaches only 30%"):
        assert expected in text
