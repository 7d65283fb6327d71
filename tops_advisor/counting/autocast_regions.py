"""The model's own ``torch.autocast`` regions while it is counted: patched for the length of one forward.

A region opened as ``torch.autocast(device_type=x.device.type)`` asks for the meta device's autocast, which
torch does not have ("unsupported scalarType", timm's EfficientViT): it gets the CUDA device type its tensors
would have on the GPU. Torch's autocast acts on the CUDA dispatch key, not on meta tensors; ``--dtype amp`` is
the counter's own casts (``amp.py``), which a region with ``enabled=False`` switches off until it closes
(EfficientViT's attention runs in fp32 that way). The regions ``torch.utils.checkpoint`` opens to restore
the autocast state for its recompute are not the model's and change nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager


class AutocastRegions:
    """Whether the innermost ``torch.autocast`` region the model opened disables autocast."""

    def __init__(self) -> None:
        self._off: list[bool] = []   # one entry per open region: disabled?

    @property
    def disabled(self) -> bool:
        return bool(self._off) and self._off[-1]

    @contextmanager
    def patched(self) -> Iterator[None]:
        """Within the block ``torch.autocast`` opens on CUDA for a meta device and is followed here."""
        from torch.amp import autocast_mode

        cls = autocast_mode.autocast
        init, enter, leave = cls.__init__, cls.__enter__, cls.__exit__
        regions = self._off

        def on_cuda(self, device_type, *args, **kwargs):
            init(self, "cuda" if device_type == "meta" else device_type, *args, **kwargs)

        def entering(self):
            # checkpointing's recompute re-enters the autocast state it saw (real autocast: off, since the
            # counter casts itself); that is not the model switching autocast off
            restoring = sys._getframe(1).f_globals.get("__name__") == "torch.utils.checkpoint"
            regions.append(not restoring and not getattr(self, "_enabled", True))
            return enter(self)

        def leaving(self, *exc):
            regions.pop()
            return leave(self, *exc)

        cls.__init__, cls.__enter__, cls.__exit__ = on_cuda, entering, leaving
        try:
            yield
        finally:
            cls.__init__, cls.__enter__, cls.__exit__ = init, enter, leave
