"""What a compiled training step saves for its backward: AOTAutograd's min-cut rematerialization
(``torch/_functorch/partitioners.py``, ``min_cut_rematerialization_partition`` and ``solve_min_cut``, the
default partitioner of ``torch.compile``). Pure (no torch).

Eager autograd saves every tensor a backward formula reads. The partitioner instead cuts the forward's
dataflow where the weighted bytes are fewest: a value the backward needs may be recomputed in the backward
from values saved upstream, through operators inductor fuses (pointwise operators, casts, and the norms and
softmax it decomposes into small statistics and a pointwise part). What it does, and this module repeats:

- **Bans** (``should_ban_recomputation`` with the default ``functorch.config``): library kernels (matrix
  products, convolutions, attention, pooling and upsampling are not in its allowlist), random operators
  (dropout), reductions whose output is under a quarter of their input (``ban_recompute_reductions``), a value
  a library kernel of the backward reads (``ban_recompute_materialized_backward``: the backward would write
  it to memory anyway), and a fused user of a value that sits past the first unfused operator downstream of
  that value's users (``ban_recompute_used_far_apart``: a residual stream is saved, not recomputed).
- **Weights** (``get_node_weight``): a value's bytes x 1.1 ** its distance from the backward in graph nodes
  (at least 1, at most 100; estimated as two nodes per counted operator, views included) x 2 unless a
  forward user cannot fuse with it (saving a fused intermediate makes the forward write it).
- The graph inputs (parameters, the batch) are free. Not repeated: ``ban_recompute_long_fusible_chains``
  (a chain of over 100 fused nodes).

:func:`saved_bytes` returns the bytes eager saves and the bytes of the values the cut saves.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass, field

from ...kinds import OpKind, Phase
from .facts import CountedOp
from .inductor import role

_INF = float("inf")
_DECOMPOSED = frozenset({OpKind.NORM, OpKind.SOFTMAX})   # statistics + a pointwise part once decomposed
_RANDOM = ("dropout", "bernoulli", "rand")
_NODES_PER_OP = 2        # FX nodes per counted operator (views included), as inductor_layout estimates them
_DISTANCE_CAP = 100      # get_node_weight: 1.1 ** min(distance, 100)
_REDUCTION_RATIO = 4     # ban_recompute_reductions: output * 4 < input


def _random(c: CountedOp) -> bool:
    return any(w in c.record.name for w in _RANDOM)


def _fusible(c: CountedOp) -> bool:
    """In the partitioner's fusible set: generated code once decomposed (random operators included)."""
    return role(c.record) in ("pointwise", "reduction") or c.record.kind in _DECOMPOSED


def _recomputable(c: CountedOp) -> bool:
    if not _fusible(c) or _random(c):
        return False
    if role(c.record) == "reduction" and c.record.kind not in _DECOMPOSED and c.flow.reads:
        out = sum(v.numel for v in c.flow.writes)
        return out * _REDUCTION_RATIO >= sum(v.numel for v in c.flow.reads)
    return True


@dataclass
class _Forward:
    """The forward's dataflow: each value's producer (operator index), size and users, in order."""

    ops: list[CountedOp]
    producer: dict[int, int] = field(default_factory=dict)
    size: dict[int, float] = field(default_factory=dict)
    users: dict[int, list[int]] = field(default_factory=dict)      # forward users of each value
    outputs: dict[int, list[int]] = field(default_factory=dict)    # values each operator writes

    def __post_init__(self) -> None:
        for i, c in enumerate(self.ops):
            for v in c.flow.reads:
                if v.id in self.producer:
                    self.users[v.id].append(i)
            for v in c.flow.writes:
                self.producer[v.id], self.size[v.id] = i, v.nbytes
                self.users.setdefault(v.id, [])
            self.outputs[i] = [v.id for v in c.flow.writes]

    def fusible_edge(self, a: int, b: int) -> bool:
        return _fusible(self.ops[a]) and _fusible(self.ops[b])

    def first_unfused(self, starts: list[int], limit: int) -> int:
        """``find_first_unfusible``: walking the users' users in order, the first step that cannot fuse."""
        heap = [(s, True) for s in starts]
        heapq.heapify(heap)
        seen = set()
        while heap:
            i, fused = heapq.heappop(heap)
            if not fused:
                return i
            if i in seen:
                continue
            seen.add(i)
            for v in self.outputs[i]:
                for u in self.users[v]:
                    if u <= limit:
                        heapq.heappush(heap, (u, self.fusible_edge(i, u)))
        return limit

    def far_apart_users(self) -> set[int]:
        """``ban_recompute_used_far_apart``: operators whose outputs may not be recomputed."""
        banned: set[int] = set()
        for v, users in self.users.items():
            if not users:
                continue
            first = self.first_unfused(users, max(users))
            p = self.producer[v]
            banned.update(u for u in users if u > first and self.fusible_edge(p, u))
        return banned


def saved_bytes(ops: list[CountedOp]) -> tuple[float, float]:
    """(eager, compiled): bytes of the forward values the backward reads, and of the values the min-cut
    partitioner saves instead (the module docstring)."""
    fwd = _Forward([c for c in ops if c.record.phase == Phase.FORWARD and c.flow is not None])
    needed, materialized = set(), set()
    for c in ops:
        if c.record.phase != Phase.BACKWARD or c.flow is None:
            continue
        reads = {v.id for v in c.flow.reads if v.id in fwd.producer}
        needed |= reads
        if not _fusible(c):
            materialized |= reads
    if not needed:
        return 0.0, 0.0
    eager = float(sum(fwd.size[v] for v in needed))
    far = fwd.far_apart_users()
    graph = _Graph()
    source, sink = graph.node(), graph.node()
    index = {v: (graph.node(), graph.node()) for v in fwd.producer}
    last = len(fwd.ops) - 1
    for v, (v_in, v_out) in index.items():
        p = fwd.producer[v]
        c = fwd.ops[p]
        in_forward = all(fwd.fusible_edge(p, u) for u in fwd.users[v])
        distance = min(max(_NODES_PER_OP * (last - p), 1), _DISTANCE_CAP)
        graph.edge(v_in, v_out, fwd.size[v] * 1.1 ** distance * (2 if in_forward else 1))
        if v in materialized or p in far or not _recomputable(c):
            graph.edge(source, v_in, _INF)
        for u in c.flow.reads:
            if u.id in index and u.id != v:
                graph.edge(index[u.id][1], v_in, _INF)
        if v in needed:
            graph.edge(v_out, sink, _INF)
    reach = graph.cut(source, sink)
    return eager, float(sum(fwd.size[v] for v, (a, b) in index.items() if a in reach and b not in reach))


class _Graph:
    """A flow network (Dinic's algorithm): a few thousand nodes for a large model's forward."""

    def __init__(self) -> None:
        self.adj: list[list[int]] = []
        self.to: list[int] = []
        self.cap: list[float] = []

    def node(self) -> int:
        self.adj.append([])
        return len(self.adj) - 1

    def edge(self, a: int, b: int, cap: float) -> None:
        self.adj[a].append(len(self.to))
        self.to.append(b)
        self.cap.append(cap)
        self.adj[b].append(len(self.to))
        self.to.append(a)
        self.cap.append(0.0)

    def _levels(self, s: int, t: int) -> list[int] | None:
        level = [-1] * len(self.adj)
        level[s] = 0
        queue = deque([s])
        while queue:
            a = queue.popleft()
            for e in self.adj[a]:
                if self.cap[e] > 0 and level[self.to[e]] < 0:
                    level[self.to[e]] = level[a] + 1
                    queue.append(self.to[e])
        return level if level[t] >= 0 else None

    def _push(self, s: int, t: int, level: list[int], it: list[int]) -> float:
        """One augmenting path along the level graph (iterative), its bottleneck pushed; 0 when none."""
        path: list[int] = []
        a = s
        while a != t:
            while it[a] < len(self.adj[a]):
                e = self.adj[a][it[a]]
                if self.cap[e] > 0 and level[self.to[e]] == level[a] + 1:
                    break
                it[a] += 1
            else:
                if not path:
                    return 0.0
                level[a] = -1          # a dead end: leave it out of this phase
                e = path.pop()
                a = self.to[e ^ 1]
                it[a] += 1
                continue
            path.append(e)
            a = self.to[e]
        push = min(self.cap[e] for e in path)
        for e in path:
            self.cap[e] -= push
            self.cap[e ^ 1] += push
        return push

    def cut(self, s: int, t: int) -> set[int]:
        """The nodes on the source's side of a minimum cut (after a maximum flow)."""
        while (level := self._levels(s, t)) is not None:
            it = [0] * len(self.adj)
            while self._push(s, t, level, it) > 0:
                pass
        seen, queue = {s}, deque([s])
        while queue:
            a = queue.popleft()
            for e in self.adj[a]:
                if self.cap[e] > 0 and self.to[e] not in seen:
                    seen.add(self.to[e])
                    queue.append(self.to[e])
        return seen
