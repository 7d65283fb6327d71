"""How the GPUs of one machine are wired, from NVML: NVLink state per link and P2P status per pair.

``read_topology`` takes the NVML module as an argument (``import_nvml()`` or a test's fake), like
``nvml.read_device_facts``. Every query is tried on its own: a link NVML refuses ends that GPU's link list, a
refused P2P query reads 'unknown', and nothing raises.
"""

from __future__ import annotations

from typing import Any

from ..calibration import GpuTopology, Topology

# nvml.h: NVML_NVLINK_MAX_LINKS is 18 (Hopper); older bindings may not define it.
DEFAULT_MAX_LINKS = 18

# nvml.h nvmlGpuP2PStatus_t
P2P_STATUS = {0: "ok", 1: "chipset not supported", 2: "gpu not supported", 3: "ioh topology not supported",
              4: "disabled by regkey", 5: "not supported", 6: "unknown"}


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _p2p(nvml, h1, h2, index_name: str) -> str:
    index = getattr(nvml, index_name, None)
    if index is None:
        return "unknown"
    try:
        return P2P_STATUS.get(int(nvml.nvmlDeviceGetP2PStatus(h1, h2, index)), "unknown")
    except Exception:  # NVMLError_NotSupported, an old binding without the call
        return "unknown"


def read_topology(nvml, count: int | None = None) -> Topology:
    """NVLink state per link and P2P status per pair for GPUs 0..count-1 (all NVML sees by default)."""
    notes: list[str] = []
    if count is None:
        try:
            count = int(nvml.nvmlDeviceGetCount())
        except Exception as exc:
            return Topology(notes=(f"NVML: device count unavailable ({exc})",))
    handles = []
    for i in range(count):
        try:
            handles.append(nvml.nvmlDeviceGetHandleByIndex(i))
        except Exception as exc:
            notes.append(f"NVML: no device {i} ({exc})")
            return Topology(notes=tuple(notes))
    max_links = int(getattr(nvml, "NVML_NVLINK_MAX_LINKS", DEFAULT_MAX_LINKS))
    enabled = getattr(nvml, "NVML_FEATURE_ENABLED", 1)
    gpus = []
    for i, h in enumerate(handles):
        name = bus = ""
        try:
            name = _text(nvml.nvmlDeviceGetName(h))
        except Exception:
            pass
        try:
            bus = _text(nvml.nvmlDeviceGetPciInfo(h).busId)
        except Exception:
            pass
        active: list[bool] = []
        remote: list[str] = []
        version = None
        for link in range(max_links):
            try:
                state = nvml.nvmlDeviceGetNvLinkState(h, link)
            except Exception as exc:
                if link == 0:
                    notes.append(f"GPU {i}: NVLink state unavailable ({exc}): no NVLink, or not reported")
                break  # links are numbered from 0: the first refused one ends the list
            active.append(state == enabled)
            if state != enabled:
                continue
            if version is None:
                try:
                    version = int(nvml.nvmlDeviceGetNvLinkVersion(h, link))
                except Exception:
                    pass
            try:
                remote.append(_text(nvml.nvmlDeviceGetNvLinkRemotePciInfo(h, link).busId))
            except Exception:
                pass
        others = [j for j in range(len(handles)) if j != i]
        gpus.append(GpuTopology(
            index=i, name=name, pci_bus_id=bus, nvlink_active=tuple(active), nvlink_version=version,
            nvlink_remote_bus_ids=tuple(remote),
            p2p_nvlink={str(j): _p2p(nvml, h, handles[j], "NVML_P2P_CAPS_INDEX_NVLINK") for j in others},
            p2p_read={str(j): _p2p(nvml, h, handles[j], "NVML_P2P_CAPS_INDEX_READ") for j in others}))
    return Topology(gpus=tuple(gpus), notes=tuple(notes))


def link_kind(topology: Topology | None) -> str:
    """'nvlink' when every GPU has an active NVLink, 'pcie' when NVML answered and none has, else ''."""
    if topology is None or not topology.gpus:
        return ""
    if topology.nvlink:
        return "nvlink"
    if all(g.active_nvlinks == 0 for g in topology.gpus):
        return "pcie"
    return ""


def describe(topology: Topology) -> str:
    """'4 GPUs, 18/18 NVLinks active each' or '2 GPUs, no active NVLink (PCIe)'."""
    g = topology.gpus
    if not g:
        return "topology unknown"
    counts = {(x.active_nvlinks, len(x.nvlink_active)) for x in g}
    if all(x.active_nvlinks == 0 for x in g):
        return f"{len(g)} GPUs, no active NVLink (PCIe)"
    if len(counts) == 1:
        a, n = counts.pop()
        return f"{len(g)} GPUs, {a}/{n} NVLinks active each"
    return f"{len(g)} GPUs, NVLinks active: " + ", ".join(f"GPU {x.index} {x.active_nvlinks}" for x in g)
