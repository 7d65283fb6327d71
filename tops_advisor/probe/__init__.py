"""Measure the local accelerator (or CPU) and produce a Calibration. Imports torch lazily."""

from __future__ import annotations

from .runner import ProbeResult, match_catalog, run_probe

__all__ = ["ProbeResult", "match_catalog", "run_probe"]
