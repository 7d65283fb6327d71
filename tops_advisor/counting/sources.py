"""Where a model comes from: a model file (``build_model``/``example_inputs``) or a library model by name.

``load_model(spec)`` is the one entry point the CLI, the API and the validator use: ``timm:NAME``,
``torchvision:NAME`` and ``hf:PATH_OR_ID`` are library models (``library_models``); anything else is a path
to a model file (``model_file``). Both give the same small interface: ``label``, ``stem``, ``notes``,
``build(meta)``, ``inputs(batch, meta)`` (a tensor, a tuple, or a dict of keyword inputs). ``seq`` applies to
library text models and to model files whose ``example_inputs`` takes ``sequence=``.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ModelFileError
from .library_models import LibraryModel, is_library_spec, load_library_model
from .model_file import ModelFile, load_model_file

ModelSource = ModelFile | LibraryModel


def load_model(spec: str | Path | ModelSource, *, task: str | None = None, seq: int | None = None,
               input_shape: tuple[int, ...] | None = None) -> ModelSource:
    """The model ``spec`` names, loaded once (imported or its config read); nothing is built yet."""
    if isinstance(spec, (ModelFile, LibraryModel)):
        return spec
    if is_library_spec(spec):
        return load_library_model(str(spec), task=task, seq=seq, input_shape=input_shape)
    given = [name for name, v in (("--task", task), ("--input-shape", input_shape)) if v]
    if given:
        raise ModelFileError(f"{spec}: {', '.join(given)} appl{'ies' if len(given) == 1 else 'y'} to library "
                             "models (timm:, torchvision:, hf:), not to a model file",
                             hint="a model file sets its own inputs in example_inputs(batch_size)")
    return load_model_file(spec, sequence=seq)   # --seq: a model file whose example_inputs takes sequence=
