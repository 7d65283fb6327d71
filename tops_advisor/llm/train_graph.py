"""The tensors of a decoder-only model's training step as autograd sees them: one node per operator that
matters to the backward (embedding, norm, linear, rotary, attention, activation, product, residual add,
split, loss), in forward order, each with the tensors it reads. ``train_backward.py`` walks these nodes to
say what autograd saves, which gradients each node computes and the kernels that compute them.

The layout is Hugging Face's plain PyTorch code (the one the builder's ``torch`` kernel layout follows): RMSNorm
written out (``LlamaRMSNorm``: to fp32, pow, mean, add, rsqrt, mul, to the input dtype, times the weight) or
LayerNorm as one kernel, separate q/k/v projections (one fused projection split in three for GPT-style models),
rotary embedding in the rotate-half form on q and k, one fused attention kernel, a gated (SwiGLU) or plain MLP,
residual adds, the final norm and the output head, cross-entropy over the vocabulary."""

from __future__ import annotations

from dataclasses import dataclass

from ..kinds import StrEnum
from ..train import TrainSetup
from .config import LLMConfig
from .train_forward import LOWER_INPUT, TrainPrecision, lora_targets


class NodeKind(StrEnum):
    """What a node is (``train_backward.StepGraph`` has one ``_saved_<kind>`` and ``_backward_<kind>`` each)."""

    EMBEDDING = "embedding"
    NORM = "norm"
    LINEAR = "linear"
    SPLIT = "split"          # a fused qkv projection's output split in q, k, v
    ROTARY = "rotary"
    ATTENTION = "attention"
    ACT = "act"
    MUL = "mul"              # the gated MLP's product
    ADD = "add"              # a residual add (or the embeddings' sum)
    LOSS = "loss"


@dataclass(frozen=True)
class Node:
    """One operator of the forward. ``name`` is its output tensor (a module path); ``inputs`` the tensors it
    reads; ``elems`` and ``nbytes`` the output's elements and bytes per element; ``trainable``: its own
    parameters get gradients; ``layer``: the decoder layer it belongs to (None outside the layers)."""

    kind: NodeKind
    name: str
    inputs: tuple[str, ...]
    elems: float
    nbytes: float
    trainable: bool = False
    layer: int | None = None
    # kind-specific sizes (one meaning each)
    rows: int = 0            # norm: rows normalised; embedding: table rows; loss: tokens
    width: int = 0           # norm: row width; embedding: table width; loss: vocabulary
    heads: int = 0           # attention: query heads and key/value heads; rotary: heads rotated
    kv_heads: int = 0
    head_dim: int = 0        # attention, rotary: one head's width
    m: int = 0               # linear: (m x k) @ (k x n)
    n: int = 0
    k: int = 0
    bias: bool = False
    adapted: bool = False    # linear: LoRA adapters beside the frozen weight
    cast_input: bool = False  # linear under autocast: the fp32 input is cast first
    rms: bool = True         # norm: RMSNorm (else LayerNorm)
    act: str = ""            # activation: its config name
    parts: tuple[tuple[str, float], ...] = ()   # split: (output name, elements) of each part
    tied: bool = False       # output head: shares the embedding's weight


def _norm(cfg: LLMConfig, tp: TrainPrecision, name: str, x: str, rows: int, width: int, full: bool,
          layer: int | None) -> Node:
    return Node(NodeKind.NORM, name, (x,), rows * width, tp.stream_bytes, full, layer, rows=rows, width=width,
                rms=cfg.norm == "rmsnorm")


def _linear(tp: TrainPrecision, setup: TrainSetup, name: str, short: str, x: str, m: int, n: int, k: int,
            bias: bool, layer: int | None) -> Node:
    return Node(NodeKind.LINEAR, name, (x,), m * n, tp.lower_bytes, setup.lora is None, layer, m=m, n=n, k=k, bias=bias,
                adapted=lora_targets(name, setup.lora), cast_input=tp.autocast and short not in LOWER_INPUT)


class _Nodes:
    """Builds the node list of one model, layer by layer, in the builder's order."""

    def __init__(self, cfg: LLMConfig, tp: TrainPrecision, setup: TrainSetup, batch: int, seq: int):
        self.cfg, self.tp, self.setup = cfg, tp, setup
        self.t, self.batch, self.seq = batch * seq, batch, seq
        self.full = setup.lora is None
        self.nodes: list[Node] = []
        self.layer: int | None = None

    def add(self, node: Node) -> str:
        self.nodes.append(node)
        return node.name

    def norm(self, name: str, x: str, rows: int | None = None, width: int | None = None) -> str:
        return self.add(_norm(self.cfg, self.tp, name, x, rows or self.t, width or self.cfg.hidden_size,
                              self.full, self.layer))

    def linear(self, name: str, x: str, n: int, k: int, bias: bool = False) -> str:
        return self.add(_linear(self.tp, self.setup, name, name.rsplit(".", 1)[-1], x, self.t, n, k, bias,
                                self.layer))

    def node(self, kind: NodeKind, name: str, inputs: tuple[str, ...], elems: float, nbytes: float, **kw) -> str:
        return self.add(Node(kind, name, inputs, elems, nbytes, layer=self.layer, **kw))

    def embed(self) -> str:
        cfg, t, h = self.cfg, self.t, self.cfg.hidden_size
        x = self.node(NodeKind.EMBEDDING, "embed_tokens", (), t * h, self.tp.stream_bytes, rows=cfg.vocab_size, width=h,
                      trainable=self.full)
        if cfg.position == "learned":
            wpe = self.node(NodeKind.EMBEDDING, "wpe", (), t * h, self.tp.stream_bytes,
                            rows=cfg.max_position_embeddings or self.seq, width=h, trainable=self.full)
            x = self.node(NodeKind.ADD, "embed", (x, wpe), t * h, self.tp.stream_bytes)
        return x

    def attention(self, mod: str, y: str) -> str:
        cfg, t, lb = self.cfg, self.t, self.tp.lower_bytes
        h, d, heads, kv_heads = cfg.hidden_size, cfg.head_dim, cfg.num_heads, cfg.num_kv_heads
        sa = f"{mod}.self_attn"
        q_n, kv_n = heads * d, kv_heads * d
        if cfg.fused_qkv:
            qkv = self.linear(f"{sa}.qkv_proj", y, q_n + 2 * kv_n, h, cfg.qkv_bias)
            parts = ((f"{sa}.q", t * q_n), (f"{sa}.k", t * kv_n), (f"{sa}.v", t * kv_n))
            self.node(NodeKind.SPLIT, f"{sa}.split", (qkv,), t * (q_n + 2 * kv_n), lb, parts=parts)
            q, k, v = (p[0] for p in parts)
        else:
            q = self.linear(f"{sa}.q_proj", y, q_n, h, cfg.qkv_bias)
            k = self.linear(f"{sa}.k_proj", y, kv_n, h, cfg.qkv_bias)
            v = self.linear(f"{sa}.v_proj", y, kv_n, h, cfg.qkv_bias)
        if cfg.qk_norm:
            q = self.norm(f"{sa}.q_norm", q, t * heads, d)
            k = self.norm(f"{sa}.k_norm", k, t * kv_heads, d)
        if cfg.position == "rotary":
            q = self.node(NodeKind.ROTARY, f"{sa}.rotary.q", (q,), t * q_n, self.tp.stream_bytes, heads=heads, head_dim=d)
            k = self.node(NodeKind.ROTARY, f"{sa}.rotary.k", (k,), t * kv_n, self.tp.stream_bytes, heads=kv_heads,
                          head_dim=d)
        o = self.node(NodeKind.ATTENTION, f"{sa}.attn", (q, k, v), t * q_n, lb, heads=heads, kv_heads=kv_heads, head_dim=d)
        return self.linear(f"{sa}.o_proj", o, h, q_n, cfg.o_bias)

    def mlp(self, mod: str, y: str) -> str:
        cfg, t, lb, h, i = self.cfg, self.t, self.tp.lower_bytes, self.cfg.hidden_size, self.cfg.intermediate_size
        m = f"{mod}.mlp"
        if cfg.gated_mlp:
            gate = self.linear(f"{m}.gate_proj", y, i, h, cfg.mlp_bias)
            up = self.linear(f"{m}.up_proj", y, i, h, cfg.mlp_bias)
            a = self.node(NodeKind.ACT, f"{m}.act_fn", (gate,), t * i, lb, act=cfg.hidden_act)
            p = self.node(NodeKind.MUL, f"{m}.mul", (a, up), t * i, lb)
            return self.linear(f"{m}.down_proj", p, h, i, cfg.mlp_bias)
        fc = self.linear(f"{m}.c_fc", y, i, h, cfg.mlp_bias)
        a = self.node(NodeKind.ACT, f"{m}.act", (fc,), t * i, lb, act=cfg.hidden_act)
        return self.add(_linear(self.tp, self.setup, f"{m}.c_proj", "fc_out", a, t, h, i, cfg.mlp_bias, self.layer))

    def decoder_layer(self, i: int, x: str) -> str:
        cfg, t, h, s = self.cfg, self.t, self.cfg.hidden_size, self.tp.stream_bytes
        self.layer = i
        mod = f"layers.{i}"
        o = self.attention(mod, self.norm(f"{mod}.input_layernorm", x))
        if cfg.norms_per_layer == 4:   # Gemma-2/3: norm the branch, add, norm before the MLP
            o = self.norm(f"{mod}.post_attention_layernorm", o)
            mid = self.node(NodeKind.ADD, f"{mod}.attn_residual", (x, o), t * h, s)
            d = self.mlp(mod, self.norm(f"{mod}.pre_feedforward_layernorm", mid))
            d = self.norm(f"{mod}.post_feedforward_layernorm", d)
        else:
            mid = self.node(NodeKind.ADD, f"{mod}.attn_residual", (x, o), t * h, s)
            d = self.mlp(mod, self.norm(f"{mod}.post_attention_layernorm", mid))
        out = self.node(NodeKind.ADD, f"{mod}.mlp_residual", (mid, d), t * h, s)
        self.layer = None
        return out

    def head(self, x: str) -> None:
        cfg, t = self.cfg, self.t
        y = self.norm("norm", x)
        tied = cfg.tie_word_embeddings
        logits = self.add(Node(NodeKind.LINEAR, "lm_head", (y,), t * cfg.vocab_size, self.tp.lower_bytes,
                               self.full, m=t, n=cfg.vocab_size, k=cfg.hidden_size, tied=tied,
                               adapted=lora_targets("lm_head", self.setup.lora), cast_input=self.tp.autocast))
        logp_bytes = 4.0 if self.tp.autocast else self.tp.lower_bytes   # autocast: log_softmax in fp32
        self.node(NodeKind.LOSS, "loss", (logits,), 1, logp_bytes, rows=t, width=cfg.vocab_size)


def model_nodes(cfg: LLMConfig, tp: TrainPrecision, setup: TrainSetup, batch: int, seq: int) -> list[Node]:
    """Every node of one training step's forward, in order."""
    b = _Nodes(cfg, tp, setup, batch, seq)
    x = b.embed()
    for i in range(cfg.num_layers):
        x = b.decoder_layer(i, x)
    b.head(x)
    return b.nodes
