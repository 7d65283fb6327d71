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

# --- backward (training): operations per element of the gradient computed, same rules ----------------------
# Activations' gradients read the output gradient and the saved input (or output) and write the input gradient;
# the formulas are PyTorch's CUDA kernels (aten/src/ATen/native/cuda/Activation*Kernel.cu, UnaryOpsKernel.cu).
RELU_BACKWARD = 2.0          # threshold_backward: where(x <= threshold, 0, grad): comparison, select
GELU_BACKWARD = 11.0         # grad * (cdf + x * pdf): x / sqrt 2, erf, add 1, multiply 0.5 (cdf: 4); x^2, scale,
                             # exp, multiply by x and by 1/sqrt(2 pi) (pdf term: 5); add, multiply by grad (2)
GELU_TANH_BACKWARD = 18.0    # the tanh form: x^2, x^3, the inner polynomial (3), tanh, 1 + tanh, 0.5 x (left,
                             # right: 3), tanh^2, 1 - tanh^2, the inner derivative (3), two products, a sum, x grad
SILU_BACKWARD = 9.0          # grad * s * (1 + x * (1 - s)): sigmoid (4), subtract, multiply, add, two multiplies
SIGMOID_BACKWARD = 3.0       # grad * (1 - y) * y from the saved output
TANH_BACKWARD = 3.0          # grad * (1 - y^2) from the saved output
HARDSWISH_BACKWARD = 6.0     # two comparisons (x < -3, x <= 3), x / 3 + 0.5, times grad (3), a select
HARDSIGMOID_BACKWARD = 4.0   # two comparisons (-3 < x < 3), grad / 6, a select
HARDTANH_BACKWARD = 3.0      # two comparisons (min < x < max), a select
LEAKY_RELU_BACKWARD = 3.0    # comparison, grad * slope, select
ELU_BACKWARD = 6.0           # from the input: comparison, scale, exp, multiply by alpha and scale, times grad, select
SOFTPLUS_BACKWARD = 7.0      # z = exp(beta x): multiply, exp, comparison with the threshold, add, divide,
                             # multiply by grad, select
MISH_BACKWARD = 12.0         # tanh(softplus(x)) + x * sigmoid(x) * (1 - tanh(softplus(x))^2), times grad
GLU_BACKWARD = 9.0           # per output-gradient element: sigmoid(b) (4); grad_a = grad * s; grad_b = grad * a *
                             # s * (1 - s) (4)
DROPOUT_BACKWARD = 2.0       # grad * mask * scale
SOFTMAX_BACKWARD = 4.0       # y * (g - sum(g * y)): multiply, accumulate, subtract, multiply; log_softmax's
                             # g - exp(y) * sum(g): accumulate, exp, multiply, subtract: 4 too
BCE_WITH_LOGITS = 10.0       # PyTorch's composite: log_sigmoid(x) = min(x, 0) - log1p(exp(-|x|)) (6), then
                             # (1 - t) * x - log_sigmoid (3), then the mean's accumulate (1)
SMOOTH_L1 = 6.0              # smooth_l1 / huber: d = x - t, |d|, comparison with beta, the square branch
                             # (0.5 d^2 / beta: 2) or the linear one, a select (the mean's accumulate apart)
SMOOTH_L1_BACKWARD = 6.0     # d, comparison, d / beta or sign(d), select, times grad, times the mean's 1/n
LOG_SIGMOID = 6.0            # min(x, 0) - log1p(exp(-|x|)): min, abs, negate, exp, log1p, subtract
LOG_SIGMOID_BACKWARD = 6.0   # grad * (1 - sigmoid(x)) written as PyTorch's branch on the sign: exp, add, divide,
                             # subtract, select, multiply
MSE_LOSS_BACKWARD = 3.0      # 2 (x - t) grad / n: subtract, multiply by grad, multiply by the folded 2 / n
# Norms' backward, per input element. xhat = (x - mean) * rstd is recomputed (2); the input gradient is
# rstd * (g - mean(g) - xhat * mean(g * xhat)) with g the output gradient (times the weight where there is one):
# two row sums (1 + 2) and the combination (4).
LAYER_NORM_BACKWARD = 10.0         # xhat 2, g = dy * weight 1, sum(g) 1, sum(g * xhat) 2, combination 4
LAYER_NORM_BACKWARD_AFFINE = 5.0   # the weight and bias gradients (column sums): xhat 2, dy * xhat and its sum 2,
                                   # sum(dy) 1
GROUP_NORM_BACKWARD_SUMS = 3.0     # PyTorch's CUDA group norm: sum(dy * x) and sum(dy) per sample and channel
GROUP_NORM_BACKWARD_APPLY = 4.0    # then dx = c1 * dy + c2 * x + c3 with per-group coefficients
BATCH_NORM_BACKWARD = 9.0          # training: xhat 2, sum(dy) 1, sum(dy * xhat) 2, combination 4; the weight and
                                   # bias gradients are those two per-channel sums (no extra pass)
BATCH_NORM_BACKWARD_AFFINE = LAYER_NORM_BACKWARD_AFFINE  # the two sums alone (frozen statistics, trained weight)
BATCH_NORM_BACKWARD_EVAL = 1.0     # running statistics (frozen): dx = dy * weight * rstd, one folded multiply
RMS_NORM_BACKWARD = 7.0            # xhat = x * rstd 1, g = dy * weight 1, sum(g * xhat) 2, rstd * (g - xhat * m) 3
RMS_NORM_BACKWARD_AFFINE = 3.0     # the weight gradient: xhat 1, dy * xhat and its sum 2

# --- optimizer updates (per parameter element) --------------------------------------------------------------
# The foreach forms run one operator per line of the update (torch/optim/adam.py, ``_multi_tensor_adam``), each
# with these counts; the fused kernels evaluate the same update in one pass (aten/src/ATen/native/cuda/
# fused_adam_utils.cuh, ``adam_math``; FusedSgdKernel.cu, ``sgd_math``).
LERP = 3.0          # a + w * (b - a): subtract, multiply, add
ADDCMUL = 3.0       # a + value * b * c
ADDCDIV = 3.0       # a + value * b / c
ADAM_STEP = 13.0    # exp_avg: beta1 m + (1 - beta1) g (3); exp_avg_sq: beta2 v + (1 - beta2) g g (4);
                    # denom sqrt(v) / bias_correction2_sqrt + eps (3); param -= step_size * m / denom (3)
ADAM_WEIGHT_DECAY = 2.0   # AdamW: param -= lr * weight_decay * param; Adam: grad += weight_decay * param
ADAM_AMSGRAD = 1.0        # max(max_exp_avg_sq, exp_avg_sq)
GRAD_UNSCALE = 1.0        # GradScaler's scale folded into the update: grad / scale (fused) or grad * (1 / scale)
SGD_STEP = 2.0            # param -= lr * grad
SGD_MOMENTUM = 3.0        # buf = momentum * buf + (1 - dampening) * grad
SGD_NESTEROV = 2.0        # grad + momentum * buf
SGD_WEIGHT_DECAY = 2.0    # grad += weight_decay * param
NON_FINITE_CHECK = 2.0    # GradScaler: grad * inv_scale and an isfinite test


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
