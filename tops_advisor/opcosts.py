"""Operations per element of the vector operators: one table for the model counter and the LLM builder.

``counting/handles/`` (a PyTorch model, operator by operator) and ``llm/builder.py`` (an LLM built
analytically) both read these numbers, so one operator costs the same operations whichever way a workload
was made. Pure: no torch.

How each count is made: the arithmetic operations of the formula the kernel evaluates, per element, where
- one add, subtract, multiply, divide, comparison (max, min) or select is one operation (a multiply-add is
  two: STYLE.md, "one op is one arithmetic operation");
- a transcendental function (exp, log, erf, tanh, sin, cos, rsqrt) is one operation: one special-function
  instruction on a GPU;
- work done once per row or channel (a norm's rsqrt, softmax's reciprocal of the sum) is not counted: it is
  1/row-length of the rest;
- casts, copies, gathers and layout changes are zero operations (they move bytes only).
This is why layer norm is 8 and not fvcore's 5 (fvcore counts each of mean, variance, normalise, scale and
shift as one step, whatever its arithmetic), and GELU is 5 or 8 and not 1: the figures are arithmetic
operations, as the "op" in TOPS is. Vector operators are memory-bound on every device in the catalog, so these
counts move a prediction only where vector arithmetic, not memory, binds.

Not counted here: the bias of a GEMM (``addmm``, a Linear's bias), fused into the GEMM's epilogue, as
``torch.utils.flop_counter`` and fvcore count it (the counter's cross-checks compare with both exactly); a
bias added by a kernel of its own (a convolution's, after cuDNN) is an elementwise add like any other.
"""

from __future__ import annotations

# --- elementwise ------------------------------------------------------------------------------------------
ELEMENTWISE = 1.0   # one operation: add, mul, div, max, relu, exp, tanh, erf, neg, comparison, where, ...
CAST = 0.0          # a dtype conversion moves bytes only
COPY = 0.0          # cat, clone, pad, gather, embedding rows: bytes only
SIGMOID = 4.0       # 1 / (1 + exp(-x)): neg, exp, add, reciprocal
SILU = 4.0          # x / (1 + exp(-x)): neg, exp, add, divide (x * sigmoid(x) with the reciprocal a divide)
GELU = 5.0          # x * 0.5 * (1 + erf(x / sqrt(2))): multiply, erf, add, multiply, multiply
GELU_TANH = 8.0     # 0.5 * x * (1 + tanh(x * (a + b * x^2))): square, multiply, add, multiply (4), tanh, add,
                    # multiply, multiply; HF's NewGELU written as pow, mul, add, mul, tanh, add, mul, mul: 8 too
QUICK_GELU = 6.0    # x * sigmoid(1.702 x): multiply, sigmoid (4), multiply
HARDTANH = 2.0      # clamp(x, lo, hi), relu6: max, min
HARDSIGMOID = 4.0   # clamp(x + 3, 0, 6) / 6: add, max, min, divide
HARDSWISH = 5.0     # x * clamp(x + 3, 0, 6) / 6: add, max, min, multiply, divide
SOFTPLUS = 3.0      # log(1 + exp(x)): exp, add, log
MISH = 5.0          # x * tanh(softplus(x)): exp, add, log, tanh, multiply
DROPOUT = 2.0       # training only: a mask draw and a multiply
INDEX_ADD = 1.0     # index_add / scatter_add: one add per source element
GEMM_BIAS = 0.0     # a GEMM's bias: fused into its epilogue, not counted (see the module docstring)

# Activations by the names configs use (Hugging Face ``hidden_act``, torch functional names).
ACTIVATIONS: dict[str, float] = {
    "relu": ELEMENTWISE, "sigmoid": SIGMOID, "silu": SILU, "swish": SILU, "gelu": GELU,
    "gelu_new": GELU_TANH, "gelu_pytorch_tanh": GELU_TANH, "gelu_fast": GELU_TANH, "gelu_tanh": GELU_TANH,
    "quick_gelu": QUICK_GELU, "hardtanh": HARDTANH, "relu6": HARDTANH, "hardsigmoid": HARDSIGMOID,
    "hardswish": HARDSWISH, "softplus": SOFTPLUS, "mish": MISH,
}


def activation(name: str) -> float:
    """Operations per element of an activation by its config name (one operation for a name not listed)."""
    return ACTIVATIONS.get(name.lower(), ELEMENTWISE)


# --- normalisations (per input element) -------------------------------------------------------------------
LAYER_NORM = 8.0         # mean 1 (accumulate); variance 3 (subtract mean, square, accumulate); normalise 2
                         # (subtract mean, multiply by rstd); scale 1, shift 1
LAYER_NORM_AFFINE = 2.0  # the scale and shift, absent without an affine weight
GROUP_NORM = LAYER_NORM  # layer norm over each group
GROUP_NORM_AFFINE = LAYER_NORM_AFFINE
RMS_NORM = 4.0           # square 1, accumulate 1, multiply by rstd 1, scale 1
RMS_NORM_AFFINE = 1.0    # the scale
BATCH_NORM_EVAL = 2.0    # running statistics folded into one scale and one shift per channel: x * a + b
BATCH_NORM_EVAL_AFFINE = 1.0
BATCH_NORM_TRAINING = LAYER_NORM  # statistics of the batch, then as layer norm (training only)
ADD = ELEMENTWISE
MUL = ELEMENTWISE
FUSED_ADD_RMS_NORM = ADD + RMS_NORM  # serving engines' residual add fused into the RMS norm

# --- softmax and reductions (per input element) ------------------------------------------------------------
SOFTMAX = 5.0            # max 1, subtract 1, exp 1, sum 1, divide 1 (log_softmax: max, subtract, exp, sum,
                         # subtract the log of the sum: 5 too)
SAFE_SOFTMAX = SOFTMAX + 2.0  # the masked math path's softmax also runs isneginf and where on the scores
REDUCTION = 1.0          # sum, mean, max, argmax, topk, cumsum: one accumulate or comparison
VARIANCE = 4.0           # var, std: mean 1, then subtract, square, accumulate 3

# --- rotary position embedding (per element of q or k) ------------------------------------------------------
ROTARY_FUSED = 3.0       # x * cos + rotate_half(x) * sin in one kernel: 2 multiplies, 1 add (the negation of
                         # rotate_half folds into the sign); unfused, each of mul, neg, cat, mul, add is its own
                         # elementwise or copy operator


# --- attention --------------------------------------------------------------------------------------------
def causal_pairs(query_len: int, key_len: int) -> int:
    """Query-key pairs a causal mask keeps: query i sees keys 0..i (PyTorch's top-left aligned
    ``is_causal``), so ``L (L + 1) / 2`` for a square mask, not ``L^2 / 2``. The LLM builder counts
    prefill attention over the same pairs; QK^T and PV each cost 2 x head dim operations per pair."""
    kept = min(query_len, key_len)
    return kept * (kept + 1) // 2 + max(query_len - key_len, 0) * key_len
