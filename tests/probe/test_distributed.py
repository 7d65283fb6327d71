"""probe --all-gpus: the gloo 2-process path end to end, nccl-tests arithmetic by hand, the NVML topology
parser against a fake, failure / hang / timeout with no process left behind, the NVLink-multicast switches
in the children, the calibration round trip with links, and tensor parallelism costed from measured links."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from tests.conftest import make_hardware
from tops_advisor.calibration import (
    Calibration,
    CollectiveSample,
    GpuTopology,
    Links,
    PeerCopy,
    Topology,
    load_calibration,
    save_calibration,
)
from tops_advisor.cli import cli
from tops_advisor.errors import InputError, ProbeError
from tops_advisor.formatting import size_name
from tops_advisor.probe import collectives, distributed
from tops_advisor.probe.collectives import SAFE_ENV, bus_factor, collective_sample, nccl_one_line
from tops_advisor.probe.distributed import apply_safe_env, run_links
from tops_advisor.probe.topology import describe, link_kind, read_topology


def _alive(pid: int) -> bool:
    """A process that exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture
def clean_env(monkeypatch):
    """run_links sets the NVLink-multicast switches in os.environ; restore them after the test."""
    for key in SAFE_ENV:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.delenv(collectives.FAULT_ENV, raising=False)
    return monkeypatch


# --- arithmetic ---------------------------------------------------------------------------------------------
def test_bus_factors_by_hand():
    assert bus_factor("all_reduce", 2) == 1.0          # 2 x 1 / 2
    assert bus_factor("all_reduce", 4) == 1.5          # 2 x 3 / 4
    assert bus_factor("all_reduce", 8) == 1.75         # 2 x 7 / 8
    assert bus_factor("all_gather", 2) == 0.5          # 1 / 2
    assert bus_factor("all_gather", 8) == 0.875        # 7 / 8
    with pytest.raises(InputError, match="unknown collective"):
        bus_factor("broadcast", 2)


def test_collective_sample_by_hand():
    # 1 GiB all-reduce in 5 ms over 8 ranks: algbw = 1073741824 / 0.005 = 214.7483648 GB/s,
    # busbw = 214.7483648 x 1.75 = 375.8096384 GB/s
    s = collective_sample("all_reduce", 2**30, 5e-3, 8)
    assert s.time_us == pytest.approx(5000)
    assert s.algbw_gb_s == pytest.approx(214.7483648)
    assert s.busbw_gb_s == pytest.approx(375.8096384)
    # all-gather to 64 MiB over 4 ranks in 0.5 ms: 67108864 / 5e-4 = 134.217728 GB/s; busbw x 3/4 = 100.663296
    g = collective_sample("all_gather", 64 * 2**20, 5e-4, 4)
    assert g.busbw_gb_s == pytest.approx(100.663296)


def test_size_names_and_one_line_errors():
    assert [size_name(b) for b in (8, 1024, 2**20, 2**30, 3000)] == ["8 B", "1 KiB", "1 MiB", "1 GiB", "3000 B"]
    exc = RuntimeError("DistBackendError at ProcessGroupNCCL.cpp:1234\n"
                       "NCCL error in: ../nccl.cpp:99, unhandled system error, NCCL version 2.21.5\n"
                       "Last error:\nsocket timeout")
    assert nccl_one_line(exc) == ("RuntimeError: NCCL error in: ../nccl.cpp:99, unhandled system error, "
                             "NCCL version 2.21.5 (last error: socket timeout)")
    assert "\n" not in nccl_one_line(ValueError("a\nb"))


def test_safe_env_overrides_and_says_so():
    env = {"NCCL_NVLS_ENABLE": "1"}
    notes = apply_safe_env(env)
    assert env == SAFE_ENV
    assert len(notes) == 1 and "NCCL_NVLS_ENABLE was '1'" in notes[0]


# --- NVML topology against a fake ---------------------------------------------------------------------------
class NotSupported(Exception):
    pass


class FakeNvml:
    """GPU 0: 4 links (3 up, link 2 down), link 4 refused; GPU 1: 4 links all up; GPU 2: NVLink not supported."""

    NVML_FEATURE_ENABLED, NVML_FEATURE_DISABLED = 1, 0
    NVML_NVLINK_MAX_LINKS = 18
    NVML_P2P_CAPS_INDEX_READ, NVML_P2P_CAPS_INDEX_NVLINK = 0, 3
    STATES = {0: [1, 1, 0, 1], 1: [1, 1, 1, 1], 2: []}

    class _Pci:
        def __init__(self, bus):
            self.busId = bus

    def nvmlDeviceGetCount(self):
        return 3

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetName(self, h):
        return b"NVIDIA H200"

    def nvmlDeviceGetPciInfo(self, h):
        return self._Pci(f"00000000:{h + 1:02X}:00.0".encode())

    def nvmlDeviceGetNvLinkState(self, h, link):
        states = self.STATES[h]
        if link >= len(states):
            raise NotSupported("Not Supported")
        return states[link]

    def nvmlDeviceGetNvLinkVersion(self, h, link):
        return 4

    def nvmlDeviceGetNvLinkRemotePciInfo(self, h, link):
        return self._Pci("00000000:FF:00.0")

    def nvmlDeviceGetP2PStatus(self, h1, h2, index):
        if index == self.NVML_P2P_CAPS_INDEX_NVLINK:
            return 0 if 2 not in (h1, h2) else 5  # ok between 0 and 1; not supported with GPU 2
        raise NotSupported("Not Supported")


def test_topology_parser_against_fake():
    t = read_topology(FakeNvml())
    g0, g1, g2 = t.gpus
    assert g0.nvlink_active == (True, True, False, True) and g0.active_nvlinks == 3
    assert g0.nvlink_version == 4 and g0.nvlink_remote_bus_ids == ("00000000:FF:00.0",) * 3
    assert g0.pci_bus_id == "00000000:01:00.0" and g0.name == "NVIDIA H200"
    assert g0.p2p_nvlink == {"1": "ok", "2": "not supported"}
    assert g0.p2p_read == {"1": "unknown", "2": "unknown"}   # refused query: unknown, not an exception
    assert g1.active_nvlinks == 4
    assert g2.nvlink_active == () and any("GPU 2: NVLink state unavailable" in n for n in t.notes)
    assert not t.nvlink and link_kind(t) == ""   # mixed: GPU 2 has none
    two = read_topology(FakeNvml(), 2)
    assert two.nvlink and link_kind(two) == "nvlink"
    assert describe(two) == "2 GPUs, NVLinks active: GPU 0 3, GPU 1 4"
    assert link_kind(Topology(gpus=(GpuTopology(index=0), GpuTopology(index=1)))) == "pcie"
    assert link_kind(None) == ""


# --- the gloo path, end to end ------------------------------------------------------------------------------
@pytest.mark.slow
def test_gloo_two_processes_end_to_end(clean_env):
    clean_env.setenv("NCCL_NVLS_ENABLE", "1")  # a user's setting that must not reach the children
    spawned: list[int] = []
    r = run_links("cpu", "quick", 2, timeout_s=120, on_spawn=spawned.extend)
    links = r.links
    assert links.world_size == 2 and links.backend == "gloo" and links.device == "cpu"
    # quick CPU plan: 64 KiB and 1 MiB, fp32; 8 B and 1 KiB for latency
    assert [s.bytes for s in links.all_reduce] == [64 * 1024, 2**20]
    assert [s.bytes for s in links.all_gather] == [64 * 1024, 2**20]
    assert [s.bytes for s in links.small_all_reduce] == [8, 1024]
    for s in links.all_reduce:   # n = 2: busbw = algbw x 2 x 1 / 2 = algbw; algbw = bytes / time
        assert s.busbw_gb_s == pytest.approx(s.algbw_gb_s)
        assert s.algbw_gb_s == pytest.approx(s.bytes / (s.time_us * 1e-6) / 1e9)
    for s in links.all_gather:   # n = 2: busbw = algbw x 1 / 2
        assert s.busbw_gb_s == pytest.approx(s.algbw_gb_s / 2)
    assert links.all_reduce_busbw_gb_s == max(s.busbw_gb_s for s in links.all_reduce)
    # the latency is the floor over the small messages (on a loaded CPU the 1 KiB one can beat the 8 B one)
    assert links.all_reduce_latency_us == min(s.time_us for s in links.small_all_reduce)
    assert links.p2p == () and any("GPU-only" in n for n in links.notes)
    # every child saw the switches, and the user's NCCL_NVLS_ENABLE=1 was overridden with a note
    assert r.child_env == {0: SAFE_ENV, 1: SAFE_ENV}
    assert all(links.environment[k] == v for k, v in SAFE_ENV.items())
    assert any("NCCL_NVLS_ENABLE was '1'" in n for n in links.notes)
    assert spawned == r.pids and len(spawned) == 2 and not any(_alive(p) for p in spawned)


@pytest.mark.slow
def test_failing_rank_is_named_and_nothing_is_left(clean_env):
    spawned: list[int] = []
    with pytest.raises(ProbeError) as exc:
        run_links("cpu", "quick", 2, timeout_s=60, fault="fail:1", on_spawn=spawned.extend)
    assert str(exc.value).startswith("rank 1 failed: RuntimeError: injected failure (test hook)")
    assert "\n" not in str(exc.value)
    assert len(spawned) == 2 and not any(_alive(p) for p in spawned)


@pytest.mark.slow
def test_hung_rank_times_out_and_nothing_is_left(clean_env):
    spawned: list[int] = []
    with pytest.raises(ProbeError) as exc:
        run_links("cpu", "quick", 2, timeout_s=10, fault="hang:1", on_spawn=spawned.extend)
    msg = str(exc.value)
    assert msg.startswith("timed out after 10 s: rank 1 stopped at 'hang (test hook)'"), msg
    assert "rank 0 waited at 'check the sum'" in msg   # its first collective
    assert len(spawned) == 2 and not any(_alive(p) for p in spawned)


def test_too_few_devices(clean_env):
    with pytest.raises(ProbeError, match="at least 2 devices"):
        run_links("cpu", "quick", 1)
    clean_env.setattr(distributed, "device_count", lambda device: 1)
    with pytest.raises(ProbeError, match="only 1 CUDA GPU is visible"):
        run_links("cuda", "quick", 2)


# --- the CLI --------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_cli_links_only_json(clean_env):
    res = CliRunner().invoke(cli, ["probe", "--all-gpus", "--device", "cpu", "--links-only", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["links"]["world_size"] == 2 and d["links"]["backend"] == "gloo"
    assert [c["size"] for c in d["links"]["collectives"] if c["collective"] == "all_gather"] == ["64 KiB", "1 MiB"]
    assert d["links_skipped"] is None and d["saved_to"] == []


@pytest.mark.slow
def test_cli_links_only_adds_links_to_an_existing_calibration(clean_env, tmp_path):
    from tops_advisor.probe.kit import cpu_model

    path = tmp_path / "cpu.json"
    save_calibration(Calibration(hardware=f"CPU {cpu_model()}", measured_tops={"fp32": 0.1},
                                 memory_bandwidth_gb_s=10, backend="cpu"), path)
    res = CliRunner().invoke(cli, ["probe", "--all-gpus", "--device", "cpu", "--links-only", "--output", str(path)])
    assert res.exit_code == 0, res.output
    cal = load_calibration(path)
    assert cal.links is not None and cal.links.world_size == 2 and cal.measured_tops == {"fp32": 0.1}
    assert "Peer links: 2 ranks, gloo" in res.stdout


@pytest.mark.slow
def test_cli_fault_env_is_one_line(clean_env):
    clean_env.setenv(collectives.FAULT_ENV, "fail:0")
    res = CliRunner().invoke(cli, ["probe", "--all-gpus", "--device", "cpu", "--links-only"])
    assert res.exit_code == 2
    assert "rank 0 failed: RuntimeError: injected failure (test hook)" in res.stderr
    assert "Traceback" not in res.output


@pytest.mark.parametrize("args, message", [
    (["--world-size", "1"], "--world-size 1: links need at least 2 ranks"),
    (["--timeout", "0"], "--timeout 0: give a positive number of seconds"),
    (["--links-only", "--sustained", "5"], "does not go with --links-only"),
])
def test_cli_bad_input(args, message):
    res = CliRunner().invoke(cli, ["probe", "--all-gpus", "--device", "cpu", *args])
    assert res.exit_code == 2 and message in res.stderr, res.output


def test_cli_links_only_needs_an_existing_file(clean_env, tmp_path):
    res = CliRunner().invoke(cli, ["probe", "--all-gpus", "--device", "cpu", "--links-only",
                                   "--output", str(tmp_path / "none.json")])
    assert res.exit_code == 2 and "no calibration at" in res.stderr


def test_cli_one_gpu_says_so_and_skips(clean_env):
    clean_env.setattr(distributed, "device_count", lambda device: 1)
    res = CliRunner().invoke(cli, ["probe", "--all-gpus", "--links-only", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["links"] is None and d["links_skipped"].startswith("only 1 GPU is visible")
    # asking for 2 ranks on a 1-GPU machine is a demand that cannot be met: exit 2
    res = CliRunner().invoke(cli, ["probe", "--all-gpus", "--world-size", "2", "--links-only"])
    assert res.exit_code == 2 and "only 1 CUDA GPU is visible" in res.stderr


# --- calibration and the tensor-parallel cost -----------------------------------------------------------------
def _links(busbw_gb_s=300.0, latency_us=20.0, n=2, kind="nvlink") -> Links:
    return Links(world_size=n, backend="nccl", device="cuda", dtype="bf16", link_kind=kind,
                 all_reduce=(CollectiveSample(bytes=2**30, time_us=3579.1, algbw_gb_s=300.0, busbw_gb_s=300.0),),
                 all_reduce_busbw_gb_s=busbw_gb_s, all_gather_busbw_gb_s=250.0,
                 small_all_reduce=(CollectiveSample(bytes=8, time_us=latency_us, algbw_gb_s=4e-4, busbw_gb_s=4e-4),),
                 all_reduce_latency_us=latency_us,
                 p2p=(PeerCopy(src=0, dst=1, bytes=2**28, gb_s=380.0, peer_access=True),),
                 topology=Topology(gpus=(GpuTopology(index=0, nvlink_active=(True,) * 18),
                                         GpuTopology(index=1, nvlink_active=(True,) * 18))),
                 environment=dict(SAFE_ENV))


def test_calibration_round_trip_with_links(tmp_path):
    cal = Calibration(hardware="toy-gpu", measured_tops={"bf16": 80}, memory_bandwidth_gb_s=800, links=_links())
    path = save_calibration(cal, tmp_path / "toy.json")
    back = load_calibration(path)
    assert back == cal and back.links.topology.nvlink
    # an old file without links still loads
    old = json.loads(path.read_text())
    del old["links"]
    path.write_text(json.dumps(old))
    assert load_calibration(path).links is None


def test_tensor_parallel_uses_measured_links():
    from tops_advisor.llm import load_config
    from tops_advisor.llm.analysis import analyze_llm
    from tops_advisor.llm.parallel import allreduce_time_s, link_for

    hw = make_hardware(peer_link="NVLink 4", peer_link_bandwidth_gb_s=900,
                       citations={**make_hardware().citations, "peer_link_bandwidth_gb_s": "made-up"})
    cal = Calibration(hardware="toy-gpu", measured_tops={"bf16": 80, "fp16": 80}, memory_bandwidth_gb_s=800,
                      links=_links(busbw_gb_s=300.0, latency_us=20.0, n=2))
    catalog_link, measured = link_for(hw), link_for(hw, cal)
    assert catalog_link.bandwidth_bytes_per_s == 450e9 and catalog_link.source == "catalog"
    assert measured.bandwidth_bytes_per_s == 300e9 and measured.source == "calibration"
    # 8192 bytes at 2 ranks (as measured): 20 us + 2 x 1 / 2 x 8192 / 300e9 s
    assert allreduce_time_s(8192, 2, measured) == pytest.approx(20e-6 + 8192 / 300e9)
    # at 4 ranks: 2(4-1) - 2(2-1) = 4 more ring steps of NCCL's 0.4 us (NVLink) = 21.6 us, + 2 x 3 / 4 x 8192 / 300e9
    assert allreduce_time_s(8192, 4, measured) == pytest.approx(21.6e-6 + 1.5 * 8192 / 300e9)
    # catalog at 2 ranks: 3.6 us + 2 x 0.4 us + 8192 / 450e9
    assert allreduce_time_s(8192, 2, catalog_link) == pytest.approx(4.4e-6 + 8192 / 450e9)

    cfg = load_config("llama3-8b")
    a_cat = analyze_llm(cfg, hw, tp=2, batch=1, context=1024, calibration=cal.model_copy(update={"links": None}),
                        find_crossover=False)
    a_meas = analyze_llm(cfg, hw, tp=2, batch=1, context=1024, calibration=cal, find_crossover=False)
    # decode, batch 1: 32 layers x 2 all-reduces of 1 token x 4096 hidden x 2 bytes (bf16) = 8192 bytes
    assert a_meas.decode.communication_s == pytest.approx(64 * (20e-6 + 8192 / 300e9))
    assert a_cat.decode.communication_s == pytest.approx(64 * (4.4e-6 + 8192 / 450e9))
    assert a_meas.decode.compute_s == pytest.approx(a_cat.decode.compute_s)  # only the links changed
    assert a_meas.link.startswith("measured nvlink links (nccl, 2 ranks")

    # with the latency also measured in a CUDA graph (8 us), graph mode takes it and eager mode keeps 20 us
    graphed = cal.model_copy(update={"links": cal.links.model_copy(update={"all_reduce_graph_latency_us": 8.0})})
    assert link_for(hw, graphed, "graph").measured_latency_s == pytest.approx(8e-6)
    assert link_for(hw, graphed, "eager").measured_latency_s == pytest.approx(20e-6)
    a_graph = analyze_llm(cfg, hw, tp=2, batch=1, context=1024, calibration=graphed, find_crossover=False)
    a_eager = analyze_llm(cfg, hw, tp=2, batch=1, context=1024, calibration=graphed, mode="eager",
                          find_crossover=False)
    assert a_graph.decode.communication_s == pytest.approx(64 * (8e-6 + 8192 / 300e9))
    assert a_eager.decode.communication_s == pytest.approx(64 * (20e-6 + 8192 / 300e9))

