"""One exception hierarchy. The CLI prints ``str(error)`` (and ``error.hint``) on one line, no traceback."""

from __future__ import annotations

import sysconfig
import traceback
from pathlib import Path


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


def _not_the_users() -> tuple[Path, ...]:
    """Directories whose code is not the user's: this package, the standard library, installed packages."""
    paths = sysconfig.get_paths()
    dirs = {Path(__file__).resolve().parent, *(Path(paths[k]).resolve() for k in
                                                ("stdlib", "platstdlib", "purelib", "platlib") if k in paths)}
    return tuple(dirs)


def user_frames(exc: BaseException) -> list[traceback.FrameSummary]:
    """The frames of ``exc``'s traceback in the user's own code (a model file, the modules it imports), outermost
    first: not in this package, the standard library or installed packages."""
    skip = _not_the_users()
    out = []
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename.startswith("<"):
            continue
        path = Path(frame.filename).resolve()
        if not any(path.is_relative_to(d) for d in skip):
            out.append(frame)
    return out


def with_location(message: str, exc: BaseException) -> str:
    """``message`` with the line of the user's code that raised ``exc``: 'model.py: the forward pass failed ...'
    becomes 'model.py:12: the forward pass failed ...' when the deepest user frame is in model.py, else
    ' (raised at layers.py:30, in forward)' is added. Unchanged when no user frame is in the traceback."""
    frames = user_frames(exc)
    if not frames:
        return message
    where = frames[-1]
    head, sep, rest = message.partition(": ")
    if sep and not head.rstrip("0123456789").endswith(":") and _same_file(head, where.filename):
        return f"{head}:{where.lineno}: {rest}"
    return f"{message} (raised at {where.filename}:{where.lineno}, in {where.name})"


def _same_file(a: str, b: str) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except (OSError, ValueError):
        return False


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


class UnsupportedEngineError(UnsupportedPrecisionError):
    """A run the device cannot do because of its engine: TensorRT on a GPU that is not NVIDIA's. A kind of
    unsupported precision, so the recommender lists the device as rejected instead of stopping."""


class CalibrationError(TopsAdvisorError):
    """A calibration file is missing, corrupt or does not match."""


class InputError(TopsAdvisorError):
    """A command-line value cannot be parsed (latency without units, bad batch list, ...)."""


def check_batch(batch: object, name: str = "--batch") -> int:
    """``batch`` when it is a whole number of 1 or more; else the InputError the CLI prints for ``--batch``
    (the API refuses a batch of 0 or -4 with the same line: a negative batch would predict a negative
    throughput)."""
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise InputError(f"{name} must be a positive integer, got {batch!r}",
                         hint="a batch is how many samples run together: 1 or more")
    return batch


class ProbeError(TopsAdvisorError):
    """Measuring the local device failed."""


class ShapeUnsupported(ProbeError):
    """This precision cannot run this shape (fp8 wants multiples of 16, int8 wants m > 16); the probe skips it."""


class PrecisionUnsupported(ProbeError):
    """The device or this PyTorch build cannot do the precision at all; the probe skips it with a note."""


class LLMConfigError(TopsAdvisorError):
    """An LLM config or preset is missing, incomplete or inconsistent."""


class DoesNotFitError(TopsAdvisorError):
    """The workload needs more memory than the device has (``analyze``): nothing is predicted."""


class NothingFeasibleError(TopsAdvisorError):
    """No device meets the constraints (``recommend``)."""


class PriceFileError(CatalogError):
    """A price file (shipped under ``hardware_db/prices/`` or the user's ``--prices`` file) is malformed or invalid."""
