"""Tiny modules the counting tests build their cases from."""

from __future__ import annotations

from collections.abc import Callable

from torch import nn


def as_module(fn: Callable) -> nn.Module:
    """``fn`` of the inputs as a module: its forward is ``fn`` itself."""
    module = nn.Module()
    module.forward = fn
    return module
