"""One exception hierarchy. The CLI prints ``str(error)`` (and ``error.hint``) on one line, no traceback."""

from __future__ import annotations


def one_line(exc: BaseException, limit: int = 300) -> str:
    """'TypeError: first line of the message', at most ``limit`` characters (a cause quoted in an error).

    A longer message, or one of several lines, is cut at a word boundary and ends in ' ...'; the error that
    quotes it keeps ``exc`` as its cause (``raise ... from exc``), so ``--debug`` shows the whole message and the
    traceback."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    out = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    if len(out) <= limit:
        return out + (" ..." if len(lines) > 1 and len(out) + 4 <= limit else "")
    cut = out[: limit - 4]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip(" ,;:") + " ..."


class TopsAdvisorError(Exception):
    """Base of every error a user can cause. ``hint`` says what would be right."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


class CatalogError(TopsAdvisorError):
    """A hardware file or catalog directory is missing, malformed or invalid."""


class UnknownHardwareError(CatalogError):
    """No device matches the id or alias given."""


class AmbiguousHardwareError(CatalogError):
    """An alias matches several devices."""


class ModelFileError(TopsAdvisorError):
    """A model file cannot be loaded, built or run."""


class CountingError(TopsAdvisorError):
    """Counting a model failed (e.g. an unsupported operator under --strict)."""


class ForwardFailed(CountingError):
    """The model's forward pass raised while counting; ``detail`` is the one-line cause."""

    def __init__(self, message: str, detail: str):
        super().__init__(message)
        self.detail = detail


class UnsupportedPrecisionError(TopsAdvisorError):
    """The device has no peak for the precision asked for."""


class CalibrationError(TopsAdvisorError):
    """A calibration file is missing, corrupt or does not match."""


class InputError(TopsAdvisorError):
    """A command-line value cannot be parsed (latency without units, bad batch list, ...)."""


class ProbeError(TopsAdvisorError):
    """Measuring the local device failed."""


class ShapeUnsupported(ProbeError):
    """This precision cannot run this shape (fp8 wants multiples of 16, int8 wants m > 16); the probe skips it."""


class PrecisionUnsupported(ProbeError):
    """The device or this PyTorch build cannot do the precision at all; the probe skips it with a note."""


class LLMConfigError(TopsAdvisorError):
    """An LLM config or preset is missing, incomplete or inconsistent."""


class NothingFeasibleError(TopsAdvisorError):
    """No device meets the constraints (``recommend``)."""
