"""Which module each operator runs in: forward hooks keep the path of the innermost module running now, and
count the module calls of one forward (host work in eager mode).

Why forward hooks rather than ``torch.utils.module_tracker.ModuleTracker``: its ``parents`` is an unordered
set of names (the innermost module, which each record needs, is not known), its names carry the root's
class name ("ResNet.layer1.0", where ``named_modules`` gives "layer1.0"), a module entered twice collapses to
one entry, and its hooks are global (every module in the process, not this model's).
"""

from __future__ import annotations

from collections.abc import Callable

import torch


class ModuleStack:
    """The module paths entered and not yet left, and the calls counted. ``records_so_far()`` is how many
    operators were recorded up to now: a module call that recorded none is an empty one."""

    def __init__(self, records_so_far: Callable[[], int]):
        self._records_so_far = records_so_far
        self._stack: list[str] = []
        self._records_at_entry: list[int] = []
        self.calls = 0          # nn.Module forward calls (host work in eager mode)
        self.empty_calls = 0    # ... of which ran no operator (Identity, eval Dropout)

    @property
    def path(self) -> str:
        """Path of the innermost module running now ("" for the top level)."""
        return self._stack[-1] if self._stack else ""

    @property
    def depth(self) -> int:
        """Modules entered and not yet left (0: outside the model's forward)."""
        return len(self._stack)

    def enter(self, path: str) -> None:
        self._stack.append(path)
        self._records_at_entry.append(self._records_so_far())
        self.calls += 1

    def leave(self, *_args) -> None:  # returns None: a forward hook's return value would replace the output
        self._stack.pop()
        if self._records_so_far() == self._records_at_entry.pop():
            self.empty_calls += 1

    def hooks(self, module: torch.nn.Module) -> list:
        """Forward pre/post hooks on every submodule of ``module`` that keep the path current; remove each
        when the forward is done."""
        hooks = []
        for path, sub in module.named_modules():
            hooks.append(sub.register_forward_pre_hook(lambda _m, _a, path=path: self.enter(path)))
            hooks.append(sub.register_forward_hook(self.leave, always_call=True))
        return hooks
