"""The backward of the two operators with the most kernels behind them: a linear layer (its GEMMs, LoRA's
adapters, autocast's casts) and a norm (LlamaRMSNorm's autograd kernels written out, or LayerNorm's one).
A mixin of ``train_backward.StepGraph``: it reads the step's sizes and emits through ``op`` and ``give``."""

from __future__ import annotations

from .. import opcosts as O
from ..workload import GemmShape
from .train_forward import CAST
from .train_graph import Node

FP32 = 4.0


class ProductsAndNorms:
    """Backward of linear layers and norms (needs ``op``, ``give``, ``drop``, ``rg``, ``tp``, ``pb``, ``lb``)."""

    def _adapter_backward(self, node: Node, g: int) -> int | None:
        """LoRA: g * alpha/r, B's weight gradient (n x r) and data gradient (m x r), A's weight gradient
        (r x k) and, when the input needs one, its data gradient (m x k): returned for the sum with the base's."""
        m, n, k, lb, r = node.m, node.n, node.k, self.lb, self.setup.lora.rank
        mm, dt = "aten.mm", self.tp.matmul_dtype
        scaled = self.op("aten.mul", "elementwise", f"{node.name}.lora", m * n, m * n * lb, m * n * lb,
                         out=m * n * lb)
        self.op(mm, "matmul", f"{node.name}.lora_B.wgrad", 2.0 * m * n * r, (m * n + m * r) * lb, n * r * self.pb,
                gemm=GemmShape(n, r, m), dtype=dt, grads=n * r * self.pb)
        ga = self.op(mm, "matmul", f"{node.name}.lora_B.dgrad", 2.0 * m * n * r, (m * n + n * r) * lb, m * r * lb,
                     gemm=GemmShape(m, r, n), dtype=dt, out=m * r * lb)
        self.drop(scaled)
        self.op(mm, "matmul", f"{node.name}.lora_A.wgrad", 2.0 * m * r * k, (m * r + m * k) * lb, r * k * self.pb,
                gemm=GemmShape(r, k, m), dtype=dt, grads=r * k * self.pb)
        gx = None
        if self.rg[node.inputs[0]]:
            gx = self.op(mm, "matmul", f"{node.name}.lora_A.dgrad", 2.0 * m * r * k, (m * r + r * k) * lb,
                         m * k * lb, gemm=GemmShape(m, k, r), dtype=dt, out=m * k * lb)
        self.drop(ga)
        for key in (f"{node.name}#xa16", f"{node.name}#lora_a", f"{node.name}#lora_w16") + (
                () if node.trainable or node.cast_input else (node.inputs[0],)):
            self.release_early(node, key)   # autograd frees a node's saved tensors once it has run
        return gx

    def _backward_linear(self, node: Node, g: int) -> None:
        """wgrad (n x k = (n x m)(m x k)) when the weight trains, the bias's column sum, dgrad (m x k =
        (m x n)(n x k)) when the input needs a gradient. Under autocast the weight's gradient comes out at 16
        bits and is cast to the fp32 weight's; the input's is cast back by ``give``."""
        m, n, k, lb, pb = node.m, node.n, node.k, self.lb, self.pb
        x = node.inputs[0]
        mm, dt, amp = "aten.mm", self.tp.matmul_dtype, self.tp.autocast
        from_adapters = self._adapter_backward(node, g) if node.adapted else None
        if node.trainable:   # (a tied head's weight gradient is made here; the embedding's adds to it)
            w16 = self.op(mm, "matmul", f"{node.name}.wgrad", 2.0 * m * n * k, (m * n + m * k) * lb,
                          n * k * (lb if amp else pb), gemm=GemmShape(n, k, m), dtype=dt,
                          out=n * k * lb if amp else 0.0, grads=0.0 if amp else n * k * pb)
            if amp:
                self.op(CAST, "elementwise", f"{node.name}.wgrad", 0.0, n * k * lb, n * k * pb, grads=n * k * pb)
                self.drop(w16)
            if node.bias:
                self.op("aten.sum", "reduction", f"{node.name}.bias_grad", m * n, m * n * lb, n * pb, grads=n * pb)
        if not self.rg[x]:
            self.drop(from_adapters)
            return
        gx = self.op(mm, "matmul", f"{node.name}.dgrad", 2.0 * m * n * k, (m * n + n * k) * lb, m * k * lb,
                     gemm=GemmShape(m, k, n), dtype=dt, out=m * k * lb)
        if from_adapters is not None:
            total = self.op("aten.add", "elementwise", f"{node.name}.lora", m * k, 2 * m * k * lb, m * k * lb,
                            out=m * k * lb)
            self.drop(gx)
            self.drop(from_adapters)
            gx = total
        self.give(x, gx, lb)

    def _backward_norm(self, node: Node, g: int) -> None:
        if not node.rms:
            self._layer_norm_backward(node)
            return
        x, e, w, s = node.inputs[0], node.elems, node.width, node.nbytes
        if node.trainable:   # the weight's gradient: sum over rows of g * the normalised rows
            h = e * (FP32 if s == FP32 else s)
            tmp = self.op("aten.mul", "elementwise", node.name, e, e * s + h, e * s, out=e * s)
            self.op("aten.sum", "reduction", node.name, e, e * s, w * self.pb, grads=w * self.pb)
            self.drop(tmp)
        if self.rg[x]:
            self.give(x, self._rms_input_grad(node), s)

    def _rms_input_grad(self, node: Node) -> int:
        """LlamaRMSNorm's input gradient kernel by kernel: g * weight (to fp32), then through x * rstd
        (g * rstd, and sum(g * x) for rstd's gradient), rsqrt (r^3, -0.5, * grad), mean (spread over the
        row), pow (2 x * grad), the sum of both paths (back to the input dtype)."""
        e, rows, w, s = node.elems, node.rows, node.width, node.nbytes
        op = self.op
        gh = op("aten.mul", "elementwise", node.name, e, e * s + w * self.pb, e * s, out=e * s)
        if s != FP32:
            gh32 = op(CAST, "elementwise", node.name, 0.0, e * s, e * FP32, out=e * FP32)
            self.drop(gh)
            gh = gh32
        gx1 = op("aten.mul", "elementwise", node.name, e, e * FP32 + rows * FP32, e * FP32, out=e * FP32)
        tmp = op("aten.mul", "elementwise", node.name, e, 2 * e * FP32, e * FP32, out=e * FP32)
        gr = op("aten.sum", "reduction", node.name, e, e * FP32, rows * FP32, out=rows * FP32)
        self.drop(tmp)
        self.drop(gh)
        for name in ("aten.pow", "aten.mul", "aten.mul"):   # rsqrt's backward, per row
            nxt = op(name, "elementwise", node.name, rows, 2 * rows * FP32, rows * FP32, out=rows * FP32)
            self.drop(gr)
            gr = nxt
        spread = op("aten.div", "elementwise", node.name, e, rows * FP32, e * FP32, out=e * FP32)
        self.drop(gr)
        chain = spread
        for name, reads in (("aten.pow", 1), ("aten.mul", 1), ("aten.mul", 2)):   # pow's backward: 2 x * g
            nxt = op(name, "elementwise", node.name, e, reads * e * FP32, e * FP32, out=e * FP32)
            self.drop(chain)
            chain = nxt
        gx = op("aten.add", "elementwise", node.name, e, 2 * e * FP32, e * FP32, out=e * FP32)
        self.drop(gx1)
        self.drop(chain)
        if s != FP32:
            back = op(CAST, "elementwise", node.name, 0.0, e * FP32, e * s, out=e * s)
            self.drop(gx)
            gx = back
        return gx

    def _layer_norm_backward(self, node: Node) -> None:
        """``native_layer_norm_backward``: one kernel for the input's, the weight's and the bias's gradients."""
        x, e, rows, w, s = node.inputs[0], node.elems, node.rows, node.width, node.nbytes
        x_rg, tr = self.rg[x], node.trainable
        flops = (O.LAYER_NORM_BACKWARD if x_rg else 0.0) * e + (O.LAYER_NORM_BACKWARD_AFFINE if tr else 0.0) * e
        written = (e * s if x_rg else 0.0) + (2 * w * self.pb if tr else 0.0)
        gx = self.op("aten.native_layer_norm_backward", "norm", node.name, flops,
                     2 * e * s + 2 * rows * FP32 + w * self.pb, written, out=e * s if x_rg else 0.0,
                     grads=2 * w * self.pb if tr else 0.0)
        if x_rg:
            self.give(x, gx, s)
