"""The backward of a training step built from a config, and the step's memory as a timeline.

Walking the forward's nodes (``train_graph.py``) in reverse, each node emits the kernels autograd runs for it
and says what they allocate and free (``train_memory.Live``):

* a linear layer: its data-gradient GEMM (m x k from m x n times n x k) when its input needs a gradient, its
  weight-gradient GEMM (n x k from n x m times m x k) only when its weight trains, a bias's column sum; LoRA's
  adapters: the scale, B's and A's weight gradients and data gradients, and the sum with the base's;
* attention: one fused backward kernel, FlashAttention-2's five matrix products against the forward's two
  (Dao 2023, "FlashAttention-2", section 3.1.2: the backward does 2.5x the forward's matmul FLOPs);
  ``_scaled_dot_product_flash_attention_backward`` at 16 bits, the memory-efficient kernel's in fp32;
* norms, rotary embedding, the activation, the gated product, the loss (log-softmax and NLL), the embedding:
  memory-bound kernels with their bytes, one per autograd kernel of Hugging Face's code (LlamaRMSNorm's
  backward is 13 kernels written out, LayerNorm's one);
* where a tensor feeds several operators (the residual stream, a norm's output feeding q, k and v), the
  gradients arriving from each are summed (one add each after the first); where autocast changed a dtype,
  the engine casts the gradient back.

What autograd saves (PyTorch's derivative formulas as these operators meet them): a product saves its input
when its weight trains (under autocast: its own 16-bit cast of the input) and, under autocast, the 16-bit
weight when its input needs a gradient; RMSNorm saves its fp32 input (the input itself in an fp32 stream),
the rstd and, when its weight trains, the normalised rows; LayerNorm its input, mean and rstd; attention q, k,
v, its output and the log-sum-exp; the activation its input; the product each factor the other needs; the loss
its log-probabilities. With gradient checkpointing each decoder layer keeps only its input and recomputes its
forward (one layer at a time) before its backward, as transformers' non-reentrant checkpointing does."""

from __future__ import annotations

from .. import opcosts as O
from ..kinds import Phase
from ..train import TrainSetup
from ..workload import GemmShape, OpRecord
from .builder import TOKEN_ID_BYTES
from .config import LLMConfig
from .train_backward_ops import ProductsAndNorms
from .train_forward import CAST, TrainPrecision, recompute_ops
from .train_graph import Node, NodeKind
from .train_memory import Live, Saved

FLASH_BACKWARD_FACTOR = 2.5
FLASH_BACKWARD = "aten._scaled_dot_product_flash_attention_backward"
EFFICIENT_BACKWARD = "aten._scaled_dot_product_efficient_attention_backward"
# Operations per element of an activation's gradient, by the config's name (opcosts' backward counts, the
# ones counting's handles use)
ACT_BACKWARD = {"silu": O.SILU_BACKWARD, "swish": O.SILU_BACKWARD, "gelu": O.GELU_BACKWARD,
                "gelu_new": O.GELU_TANH_BACKWARD, "gelu_pytorch_tanh": O.GELU_TANH_BACKWARD,
                "gelu_fast": O.GELU_TANH_BACKWARD, "gelu_tanh": O.GELU_TANH_BACKWARD, "relu": O.RELU_BACKWARD,
                "sigmoid": O.SIGMOID_BACKWARD}
# Tensors an activation keeps for the backward, of the activation's size: one (its input) for a fused kernel;
# transformers' NewGELUActivation / FastGELUActivation write the tanh form out in Python (pow, tanh, products),
# keeping its input, the tanh, 0.5 x and 1 + tanh.
ACT_SAVED = {"gelu_new": 4, "gelu_fast": 4}


class StepGraph(ProductsAndNorms):
    """One step's nodes, their saved tensors and gradients, emitting backward operators into ``ops``."""

    def __init__(self, cfg: LLMConfig, tp: TrainPrecision, setup: TrainSetup, batch: int, seq: int,
                 nodes: list[Node], live: Live, ops: list[OpRecord], attention_ops: dict[str, OpRecord]):
        self.cfg, self.tp, self.setup, self.batch, self.seq = cfg, tp, setup, batch, seq
        self.nodes, self.live, self.ops, self.attention_ops = nodes, live, ops, attention_ops
        self.t, self.lb, self.pb = batch * seq, tp.lower_bytes, tp.param_bytes
        self.saved = Saved(live)
        self.rg: dict[str, bool] = {}
        self.size: dict[str, float] = {}
        self.elem: dict[str, float] = {}
        self.grads: dict[str, int] = {}
        self._allocs: dict[int, list[float]] = {}
        self._kept: dict[str, list[str]] = {}
        self.recomputed = 0      # operators gradient checkpointing ran again in the backward
        self.recompute: set[int] = set()   # their indices in ``ops``

    # --- operators and allocations ---------------------------------------------------------------------
    def op(self, name: str, kind: str, module: str, flops: float, read: float, written: float, *,
           out: float | tuple[float, ...] = 0.0, grads: float = 0.0, gemm: GemmShape | None = None,
           dtype: str | None = None):
        """Append one backward operator. ``out``: bytes of the temporary (or temporaries) it makes, whose ids
        it returns; ``grads``: bytes of parameter gradients it makes."""
        self.ops.append(OpRecord(name=name, kind=kind, module=module, flops=float(flops), bytes_read=float(read),
                                 bytes_written=float(written), dtype=dtype or self.tp.stream_dtype, gemm=gemm,
                                 phase=Phase.BACKWARD))
        ids = [self._new(b) if b else -1 for b in (out if isinstance(out, tuple) else (out,))]
        self.live.alloc("gradients", grads)
        self.live.mark(len(self.ops) - 1, Phase.BACKWARD)
        return ids if isinstance(out, tuple) else ids[0]

    def _new(self, nbytes: float) -> int:
        aid = len(self._allocs) + 1
        self._allocs[aid] = [nbytes, 1]
        self.live.alloc("temporaries", nbytes)
        return aid

    def drop(self, aid: int | None) -> None:
        if aid is None or aid < 0:
            return
        a = self._allocs[aid]
        a[1] -= 1
        if not a[1]:
            self.live.free("temporaries", a[0])

    def give(self, tensor: str, aid: int, produced_elem: float) -> None:
        """Gradient ``aid`` (at ``produced_elem`` bytes per element) reaches ``tensor``: cast to its dtype if
        autocast changed it, summed with a gradient that reached it before."""
        if not self.rg.get(tensor):
            self.drop(aid)
            return
        size, elems = self.size[tensor], self.size[tensor] / self.elem[tensor]
        if produced_elem != self.elem[tensor]:
            cast = self.op(CAST, "elementwise", tensor, 0.0, elems * produced_elem, size, out=size)
            self.drop(aid)
            aid = cast
        old = self.grads.get(tensor)
        if old is None:
            self.grads[tensor] = aid
            return
        total = self.op("aten.add", "elementwise", tensor, elems, 2 * size, size, out=size)
        self.drop(old)
        self.drop(aid)
        self.grads[tensor] = total

    # --- the forward: which tensors need gradients, what autograd saves ------------------------------
    def forward(self) -> None:
        layer = None
        for node in self.nodes:
            self._outputs(node)
            if self.setup.checkpointing and node.layer is not None:
                if node.layer != layer:   # a checkpointed layer keeps its input only
                    self.saved.keep(node.inputs[0], self.size[node.inputs[0]])
                layer = node.layer
                continue
            self._keep(node, "activations")

    def _outputs(self, node: Node) -> None:
        rg = any(self.rg.get(x, False) for x in node.inputs) or node.trainable or node.adapted
        if node.kind == NodeKind.EMBEDDING and self.setup.checkpointing:
            rg = True   # transformers' checkpointing makes the embedding's output require grad (LoRA's too)
        outs = node.parts or ((node.name, node.elems),)
        for name, elems in outs:
            self.rg[name] = rg
            self.elem[name] = node.nbytes
            self.size[name] = elems * node.nbytes

    def _keep(self, node: Node, part: str) -> None:
        keys = [] if not self.rg[node.parts[0][0] if node.parts else node.name] else self._saved(node)
        for key, nbytes in keys:
            self.saved.keep(key, nbytes, part)
        self._kept[node.name] = [k for k, _ in keys]

    def release_early(self, node: Node, key: str) -> None:
        """Free one of ``node``'s saved tensors as soon as the autograd node holding it has run."""
        kept = self._kept.get(node.name, [])
        if key in kept:
            kept.remove(key)
            self.saved.release(key)

    def _saved(self, node: Node) -> list[tuple[str, float]]:
        return getattr(self, f"_saved_{node.kind}", lambda n: [])(node)

    def _saved_norm(self, node: Node) -> list[tuple[str, float]]:
        x, e, rows = node.inputs[0], node.elems, node.rows
        x_rg, s = self.rg[x], node.nbytes
        if not node.rms:
            return [(x, self.size[x]), (f"{node.name}#stats", 2 * rows * 4.0)] if x_rg or node.trainable else []
        fp32 = s == 4
        keys = ([(x, self.size[x]) if fp32 else (f"{node.name}#x32", e * 4.0), (f"{node.name}#rstd", rows * 4.0)]
                if x_rg else [])
        return keys + ([(f"{node.name}#h", e * (4.0 if fp32 else s))] if node.trainable else [])

    def _saved_linear(self, node: Node) -> list[tuple[str, float]]:
        x, lb = node.inputs[0], self.lb
        own_x = (f"{node.name}#x16", node.m * node.k * lb) if node.cast_input else (x, self.size[x])
        keys = [own_x] if node.trainable else []
        if self.tp.autocast and self.rg[x]:
            keys.append((f"{node.name}#w16", node.n * node.k * lb))
        if node.adapted:
            r = self.setup.lora.rank
            keys.append((f"{node.name}#xa16", node.m * node.k * lb) if node.cast_input else (x, self.size[x]))
            keys.append((f"{node.name}#lora_a", node.m * r * lb))
            if self.tp.autocast:
                keys.append((f"{node.name}#lora_w16", (r * node.k + node.n * r) * lb))
        return keys

    def _saved_rotary(self, node: Node) -> list[tuple[str, float]]:
        """q * cos and rotate_half(q) * sin save the tables (one (1, seq, head_dim) pair for every layer)."""
        table = self.seq * node.head_dim * node.nbytes
        return [("rotary#cos", table), ("rotary#sin", table)] if self.rg[node.inputs[0]] else []

    def _saved_attention(self, node: Node) -> list[tuple[str, float]]:
        keys = []
        for x, tag in zip(node.inputs, ("q", "k", "v"), strict=True):
            cast = self.elem[x] != self.lb   # autocast casts an fp32 input (the rotated q and k)
            own = (f"{node.name}#{tag}16", self.size[x] / self.elem[x] * self.lb)
            keys.append(own if cast else (x, self.size[x]))
        return keys + [(node.name, self.size[node.name]), (f"{node.name}#lse", self.t * node.heads * 4.0)]

    def _saved_act(self, node: Node) -> list[tuple[str, float]]:
        x, extra = node.inputs[0], ACT_SAVED.get(node.act, 1) - 1
        if not self.rg[x]:
            return []
        return [(x, self.size[x])] + ([(f"{node.name}#parts", extra * self.size[node.name])] if extra else [])

    def _saved_mul(self, node: Node) -> list[tuple[str, float]]:
        a, b = node.inputs
        return ([(a, self.size[a])] if self.rg[b] else []) + ([(b, self.size[b])] if self.rg[a] else [])

    def _saved_loss(self, node: Node) -> list[tuple[str, float]]:
        return [("loss#logp", node.rows * node.width * node.nbytes)]

    # --- the backward ----------------------------------------------------------------------------------
    def backward(self, logits_bytes: float) -> None:
        """Every node's backward in reverse order, from the loss's seed gradient."""
        self.grads["loss"] = self.op("aten.ones_like", "elementwise", "loss", 0.0, 4.0, 4.0, out=4.0)
        self.live.free("activations", logits_bytes)   # the logits go with the model's output
        first = {}
        for i, node in enumerate(self.nodes):
            first.setdefault(node.layer, i)
        layer = None
        for i in range(len(self.nodes) - 1, -1, -1):
            node = self.nodes[i]
            if self.setup.checkpointing and node.layer is not None and node.layer != layer:
                self._recompute(node.layer)
            layer = node.layer
            g = self.grads.pop(node.name, None)
            if g is not None or node.kind == NodeKind.SPLIT:
                getattr(self, f"_backward_{node.kind}")(node, g)
            self.drop(g)
            for key in self._kept.pop(node.name, []):
                self.saved.release(key)
            if self.setup.checkpointing and node.layer is not None and i == first[node.layer]:
                self.saved.release(node.inputs[0])

    def _recompute(self, layer: int) -> None:
        """Checkpointing: the layer's forward again (in the backward), keeping what its backward needs."""
        again = recompute_ops(self.cfg, self.tp, self.setup, self.batch, self.seq, layer)
        self.recompute.update(range(len(self.ops), len(self.ops) + len(again)))
        self.ops.extend(again)
        self.recomputed += sum(1 for op in again if op.kernels >= 1)
        for node in self.nodes:
            if node.layer == layer:
                self._keep(node, "temporaries")
        self.live.mark(len(self.ops) - 1, Phase.BACKWARD)

    def _backward_loss(self, node: Node, g: int) -> None:
        """NLL's gradient (zeros with -1/T at each label) and log-softmax's, at the log-probabilities' dtype;
        under autocast ``give`` casts it back to the 16-bit logits."""
        t, v, lp = node.rows, node.width, node.nbytes
        g1 = self.op("aten.nll_loss_backward", "elementwise", "loss", float(t), t * 4.0 + t * TOKEN_ID_BYTES,
                     t * v * lp, out=t * v * lp)
        g2 = self.op("aten._log_softmax_backward_data", "softmax", "loss", O.SOFTMAX_BACKWARD * t * v,
                     2 * t * v * lp, t * v * lp, out=t * v * lp)
        self.drop(g1)
        self.give(node.inputs[0], g2, lp)

    def _backward_embedding(self, node: Node, g: int) -> None:
        if not node.trainable:
            return
        table = node.rows * node.width * self.pb
        read = self.size[node.name] + self.t * TOKEN_ID_BYTES
        flops = self.size[node.name] / node.nbytes
        if self.cfg.tie_word_embeddings and node.name == "embed_tokens":   # the head's gradient is there
            tmp = self.op("aten.embedding_dense_backward", "embedding", node.name, flops, read, table, out=table)
            self.op("aten.add_", "elementwise", node.name, node.rows * node.width, 2 * table, table)
            self.drop(tmp)
            return
        self.op("aten.embedding_dense_backward", "embedding", node.name, flops, read, table, grads=table)

    def _backward_split(self, node: Node, g: int | None) -> None:
        grads = [self.grads.pop(name, None) for name, _ in node.parts]
        full = node.elems * node.nbytes
        cat = self.op("aten.cat", "copy", node.name, 0.0, full, full, out=full)
        for aid in grads:
            self.drop(aid)
        self.give(node.inputs[0], cat, node.nbytes)

    def _backward_add(self, node: Node, g: int) -> None:
        for x in node.inputs:
            if self.rg.get(x):
                self._allocs[g][1] += 1
                self.give(x, g, node.nbytes)

    def _backward_act(self, node: Node, g: int) -> None:
        x, e, lb = node.inputs[0], node.elems, self.lb
        if self.rg[x]:
            gx = self.op(f"aten.{node.act}_backward", "elementwise", node.name, ACT_BACKWARD.get(node.act, 1.0) * e,
                         2 * e * lb, e * lb, out=e * lb)
            self.give(x, gx, lb)

    def _backward_mul(self, node: Node, g: int) -> None:
        a, b = node.inputs
        e, lb = node.elems, self.lb
        for x in (a, b):
            if self.rg[x]:
                self.give(x, self.op("aten.mul", "elementwise", node.name, e, 2 * e * lb, e * lb, out=e * lb), lb)

    def _backward_rotary(self, node: Node, g: int) -> None:
        """rotate-half's backward as autograd runs it: g * sin, the negated half, each half back into a
        zero-filled whole (slice_backward), their sum, g * cos, the sum of both paths."""
        x, el, s = node.inputs[0], node.elems, node.nbytes
        if not self.rg[x]:
            return
        table = self.t * node.head_dim * s
        a = self.op("aten.mul", "elementwise", node.name, el, el * s + table, el * s, out=el * s)
        b = self.op("aten.neg", "elementwise", node.name, el / 2, el / 2 * s, el / 2 * s, out=el / 2 * s)
        halves = [self.op("aten.slice_backward", "copy", node.name, 0.0, el / 2 * s, el * s, out=el * s)
                  for _ in range(2)]
        self.drop(a)
        self.drop(b)
        c = self.op("aten.add", "elementwise", node.name, el, 2 * el * s, el * s, out=el * s)
        for h in halves:
            self.drop(h)
        d = self.op("aten.mul", "elementwise", node.name, el, el * s + table, el * s, out=el * s)
        gx = self.op("aten.add", "elementwise", node.name, el, 2 * el * s, el * s, out=el * s)
        self.drop(c)
        self.drop(d)
        self.give(x, gx, s)

    def _backward_attention(self, node: Node, g: int) -> None:
        fwd, lb = self.attention_ops[node.name], self.lb
        qe, kve = self.t * node.heads * node.head_dim, self.t * node.kv_heads * node.head_dim
        name = FLASH_BACKWARD if lb == 2 else EFFICIENT_BACKWARD
        ids = self.op(name, "attention", node.name, FLASH_BACKWARD_FACTOR * fwd.flops,
                      (3 * qe + 2 * kve) * lb + self.t * node.heads * 4.0, (qe + 2 * kve) * lb, gemm=fwd.gemm,
                      dtype=fwd.dtype, out=(qe * lb, kve * lb, kve * lb))
        for x, aid in zip(node.inputs, ids, strict=True):
            self.give(x, aid, lb)

