"""Counting a training step (forward, loss, backward, optimizer) on meta tensors: ``count_training``."""

from .count import count_training

__all__ = ["count_training"]
