"""Does a GPU's L2 keep a written activation out of DRAM when the buffer is written again before eviction?

A chain of out-of-place adds (out = in + 1, fp16) over N rotating buffers of S bytes each, captured in one CUDA
graph and replayed. Each operator reads the buffer the previous one just wrote (a producer-consumer pair, as in
every model) and writes the next buffer of the ring, last written N - 1 operators earlier. With N = 2 the two
buffers are overwritten in turn: if 2 S fits in the L2, a dirty line is written again before it is evicted and
never reaches DRAM. With N = 32 the buffer written was last touched 31 operators ago: its dirty lines were
evicted (written back) long before, so every write costs DRAM while the read still hits. The difference at the
same S is the DRAM write traffic the L2 absorbs when buffers are reused (PyTorch's caching allocator returns
a freed block to the next request of its size; a TensorRT engine plans its activations into shared memory).

Run on a CUDA GPU: python measure.py OUT.json
"""

from __future__ import annotations

import json
import statistics
import sys

import torch

SIZES_MB = (1, 2, 4, 6, 8, 12, 16, 20, 24, 28, 32, 40, 48, 64, 96, 128, 256)
RINGS = (2, 3, 32)
OPS = 96           # operators per graph
REPLAYS = 30


def chain_time_s(size_bytes: int, ring: int) -> float:
    n = size_bytes // 2
    bufs = [torch.zeros(n, dtype=torch.float16, device="cuda") for _ in range(ring)]
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for i in range(3):   # warm up the kernel outside the graph
            torch.add(bufs[i % ring], 1.0, out=bufs[(i + 1) % ring])
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(OPS):
            torch.add(bufs[i % ring], 1.0, out=bufs[(i + 1) % ring])
    for _ in range(3):
        graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(REPLAYS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / OPS)
    del graph, bufs
    torch.cuda.empty_cache()
    return statistics.median(times)


def main(out: str) -> None:
    props = torch.cuda.get_device_properties(0)
    rows = []
    for mb in SIZES_MB:
        size = mb * 2**20
        for ring in RINGS:
            t = chain_time_s(size, ring)
            rows.append({"size_mb": mb, "ring": ring, "op_s": t, "gb_s": 2 * size / t / 1e9})
            print(f"S {mb:4d} MB ring {ring:2d}: {t * 1e6:9.2f} us/op, {2 * size / t / 1e9:8.0f} GB/s (read + write)",
                  flush=True)
    doc = {"device": props.name, "l2_bytes": props.L2_cache_size, "sms": props.multi_processor_count,
           "torch": torch.__version__, "ops_per_graph": OPS, "replays": REPLAYS,
           "what": "out-of-place fp16 add chains over rotating buffers in one CUDA graph (measure.py docstring)",
           "rows": rows}
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
