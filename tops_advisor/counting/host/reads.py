"""Operators whose result must reach the host, on tensors that hold no values (meta or fake).

A model counted on the meta device (or through fake tensors) has shapes but no values. Python that reads a
value back (``.item()``, ``bool(mask.all())``, ``.tolist()``: ATen's ``_local_scalar_dense``) or whose
output shape depends on values (``nonzero``) cannot run there: PyTorch raises "Tensor.item() cannot be
called on meta tensors". Hugging Face transformers 5.x does this in its attention-mask helpers
(``masking_utils``: ``padding_mask.all()`` decides whether a mask is needed at all), so BERT, RoBERTa,
GPT-2, Llama and Qwen2 failed to count.

The counter answers such reads with one documented assumption instead of failing:

- a **boolean** read is True, and ``nonzero`` of a boolean tensor finds every element: masks are all ones,
  no padding (the inputs ``example_inputs``/library inputs build: every token attended). The assumption is
  recorded on the workload (``Workload.assumptions``), shown by the CLI and in JSON, and ``strict`` turns it
  into a CountingError;
- any other value (a float or integer the model branches on or sizes a tensor with) cannot be assumed:
  counting stops with one line that names the module.

Real tensors (a model counted on the CPU without fake tensors) are read as they are.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from ...errors import CountingError

MASKS_ALL_ONES = ("boolean values read on the host (e.g. attention-mask checks such as mask.all()) are taken "
                  "as all true: masks of ones, no padding")

_SCALAR = "aten._local_scalar_dense"
_NONZERO = "aten.nonzero"


def _holds_no_values(t: torch.Tensor) -> bool:
    from torch._subclasses.fake_tensor import FakeTensor

    return t.is_meta or isinstance(t, FakeTensor)


def _refuse(what: str, module: str, hint: str) -> CountingError:
    where = f" in module '{module}'" if module else ""
    return CountingError(f"the model reads {what} on the host{where}; counting runs on tensors without values",
                         hint=hint)


class HostReads:
    """Answers host reads during one counting run and remembers the assumptions made (``strict``: refuse)."""

    def __init__(self, strict: bool, module_path: Callable[[], str]):
        self.strict = strict
        self._module = module_path
        self.assumptions: dict[str, int] = {}
        self.reads: dict[str, int] = {}   # module path -> host reads in it (a CUDA-graph capture cannot sync)

    def handles(self, name: str) -> bool:
        return name in (_SCALAR, _NONZERO)

    def answer(self, name: str, func, args: tuple, kwargs: dict, on_host: bool = False):
        """The read's result; ``on_host``: the tensor is host data (``data.py``), so reading it does not
        synchronise with the GPU."""
        t = args[0]
        module = self._module()
        if not on_host:
            self.reads[module] = self.reads.get(module, 0) + 1
        if not _holds_no_values(t):
            return func(*args, **kwargs)
        if t.dtype != torch.bool:
            kind = "a tensor's value (.item(), .tolist())" if name == _SCALAR else "nonzero() of a non-boolean tensor"
            raise _refuse(kind, self._module(), "count with inputs that avoid the read, or build the model on "
                          "the CPU with real inputs (count_module with real tensors reads them as they are)")
        self._assume(MASKS_ALL_ONES)
        if name == _SCALAR:
            return True
        return torch.empty((t.numel(), t.dim()), dtype=torch.long, device=t.device)

    def _assume(self, text: str) -> None:
        if self.strict:
            raise _refuse("a boolean (an attention-mask check)", self._module(),
                          f"without --strict counting assumes: {text}")
        self.assumptions[text] = self.assumptions.get(text, 0) + 1
