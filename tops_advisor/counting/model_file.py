"""Load a model file: a Python file defining ``build_model()`` and ``example_inputs(batch_size)``.

A text model file may also take the tokens per sequence: ``example_inputs(batch_size, sequence=N)`` (its default
is the file's own length); ``load_model_file(path, sequence=N)`` then makes every input at N tokens (``--seq``).
Every way a file can be wrong gives one ``ModelFileError`` line that names the file and the problem.
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import itertools
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import torch

from ..errors import ModelFileError, one_line
from ..suggest import did_you_mean

CONVENTION = ("a model file defines build_model() returning a torch.nn.Module and example_inputs(batch_size) "
              "returning a tensor, a tuple of tensors or a dict of keyword inputs (README: 'Count a model')")
_REQUIRED = ("build_model", "example_inputs")
_ids = itertools.count()


@dataclass
class ModelFile:
    """A loaded model file: its path and its module."""

    path: Path
    module: ModuleType
    notes: tuple[str, ...] = ()
    sequence: int | None = None   # tokens per sequence passed to example_inputs (None: the file's default)

    @property
    def label(self) -> str:
        return str(self.path)

    @property
    def stem(self) -> str:
        return self.path.stem

    def importable(self):
        """While building, making inputs or counting: the file's directory on ``sys.path``, so that imports
        of its neighbours inside ``build_model()`` or ``forward()`` work; ``sys.path`` is restored after."""
        return on_sys_path(self.path.parent)

    def build(self, meta: bool = True) -> torch.nn.Module:
        """``build_model()``, on the meta device when its code allows (no memory, no init), else as written."""
        model = None
        if meta:
            try:
                with self.importable(), torch.device("meta"):
                    model = self.module.build_model()
            except Exception:  # e.g. loads weights or inspects values: build it for real below
                model = None
        if model is None:
            try:
                with self.importable():
                    model = self.module.build_model()
            except Exception as exc:
                raise ModelFileError(f"{self.path}: build_model() raised {one_line(exc)}") from exc
        if not isinstance(model, torch.nn.Module):
            raise ModelFileError(f"{self.path}: build_model() returned {type(model).__name__}, "
                                 "expected a torch.nn.Module", hint=CONVENTION)
        return model

    def inputs(self, batch: int, meta: bool = True):
        """``example_inputs(batch)`` (``sequence=`` too when the file was loaded at a sequence length), created on
        the meta device when ``meta``."""
        kwargs = {} if self.sequence is None else {"sequence": self.sequence}
        try:
            with self.importable(), torch.device("meta") if meta else contextlib.nullcontext():
                inputs = self.module.example_inputs(batch, **kwargs)
        except Exception as exc:
            raise ModelFileError(f"{self.path}: example_inputs({batch}) raised {one_line(exc)}") from exc
        items = inputs.values() if isinstance(inputs, dict) else \
            inputs if isinstance(inputs, (tuple, list)) else (inputs,)
        if not items or not any(isinstance(t, torch.Tensor) for t in items):
            raise ModelFileError(f"{self.path}: example_inputs({batch}) returned {type(inputs).__name__}, "
                                 "expected a tensor, a tuple of tensors or a dict of keyword inputs",
                                 hint=CONVENTION)
        return inputs


@contextlib.contextmanager
def on_sys_path(directory: Path) -> Iterator[None]:
    """``directory`` first on ``sys.path`` inside the block (unless it is there already), removed after."""
    entry = str(Path(directory).resolve())
    added = entry not in sys.path
    if added:
        sys.path.insert(0, entry)
    try:
        yield
    finally:
        if added and entry in sys.path:
            sys.path.remove(entry)


def _not_python_hint(p: Path) -> str:
    """What to run instead for a file that is not Python: an LLM or Hugging Face config, or the convention."""
    if p.suffix.lower() == ".json":
        return (f"for a Hugging Face config.json: 'tops-advisor llm {p} -H DEVICE' (a decoder LLM), or count the "
                f"model it describes as hf:{p}")
    return CONVENTION


def _compiled(p: Path):
    """The file's code, compiled; every way that fails is one ModelFileError."""
    if not p.exists():
        raise ModelFileError(f"{p}: no such file", hint=CONVENTION)
    if p.is_dir():
        raise ModelFileError(f"{p}: is a directory, expected a Python model file", hint=CONVENTION)
    if p.suffix != ".py":
        raise ModelFileError(f"{p}: not a Python model file (expected a .py file)", hint=_not_python_hint(p))
    try:
        source = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelFileError(f"{p}: cannot be read: {one_line(exc)}") from None
    try:
        return compile(source, str(p), "exec")
    except SyntaxError as exc:
        raise ModelFileError(f"{p}:{exc.lineno}: syntax error: {exc.msg}") from None


def _check_functions(p: Path, module: ModuleType) -> None:
    for required in _REQUIRED:
        fn = getattr(module, required, None)
        if fn is None:
            names = [n for n, v in vars(module).items() if callable(v) and not n.startswith("_")]
            hint = did_you_mean(required, names)
            raise ModelFileError(f"{p}: defines no {required}() function",
                                 hint=f"{hint} ({CONVENTION})" if hint else CONVENTION)
        if not callable(fn):
            raise ModelFileError(f"{p}: {required} is a {type(fn).__name__}, expected a function",
                                 hint=CONVENTION)


def load_model_file(path: str | Path, sequence: int | None = None) -> ModelFile:
    """Import the file as a fresh module and check it defines the two functions; ``sequence``: make its inputs
    at that many tokens per sequence (its ``example_inputs`` must take a ``sequence`` keyword)."""
    p = Path(path)
    code = _compiled(p)
    name = f"_tops_advisor_model_{next(_ids)}_{p.stem.replace('-', '_')}"
    spec = importlib.util.spec_from_file_location(name, p)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look their module up here
    try:
        with on_sys_path(p.parent):  # the file may import its neighbours
            exec(code, module.__dict__)
    except (Exception, SystemExit) as exc:
        sys.modules.pop(name, None)
        raise ModelFileError(f"{p}: importing it raised {one_line(exc)}") from exc
    _check_functions(p, module)
    if sequence is None:
        return ModelFile(p, module)
    _check_sequence(p, module, sequence)
    return ModelFile(p, module, notes=(f"{sequence} tokens per sequence (example_inputs(batch, sequence={sequence}))",),
                     sequence=sequence)


def _check_sequence(p: Path, module: ModuleType, sequence: int) -> None:
    if not (isinstance(sequence, int) and sequence >= 1):
        raise ModelFileError(f"{p}: the sequence length must be a positive integer, got {sequence!r}")
    try:
        takes = "sequence" in inspect.signature(module.example_inputs).parameters
    except (TypeError, ValueError):   # a builtin or a C callable: no signature to read
        takes = False
    if not takes:
        raise ModelFileError(f"{p}: example_inputs() takes no sequence length, so --seq cannot set it",
                             hint="define example_inputs(batch_size, sequence=DEFAULT) to let --seq choose the "
                                  "tokens per sequence")
