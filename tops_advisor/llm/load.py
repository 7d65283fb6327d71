"""Where an ``LLMConfig`` comes from: a preset name, or a Hugging Face style ``config.json`` on disk.

Above both ``config.py`` (the shape and its parser) and ``presets.py`` (published configs), so neither imports
the other's caller.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import LLMConfigError
from ..jsonfile import read_json
from ..suggest import closest
from .config import LLMConfig, config_from_dict
from .presets import PRESETS, preset_config


def load_config_file(path: Path | str, use_transformers: bool | None = None) -> LLMConfig:
    """A ``config.json`` (or a directory holding one), completed by its transformers class when installed."""
    path = Path(path)
    if path.is_dir():
        if (path / "config.json").is_file():
            return load_config_file(path / "config.json", use_transformers)
        raise LLMConfigError(f"{path} is a directory without a config.json")
    raw = read_json(path, "config file", LLMConfigError)
    name = path.parent.name if path.name == "config.json" else path.stem
    return config_from_dict(raw, name=name, source=str(path), use_transformers=use_transformers)


LIBRARY_PREFIXES = ("timm:", "torchvision:", "hf:")   # models counted through their library (counting/)


def is_llm_spec(spec: str | Path) -> bool:
    """Whether ``spec`` names an LLM for the analytic builder, as ``tops-advisor llm`` takes it: a preset
    ('llama3-8b'), a ``.json`` config file or a directory holding a ``config.json``. Model files (``.py``) and
    library models (``timm:``, ``torchvision:``, ``hf:``) are counted instead. A ``.json`` path that does not
    exist is an LLM spec too, so that ``load_config`` names the missing file."""
    text = str(spec).strip()
    if text.lower().startswith(LIBRARY_PREFIXES) or text.endswith(".py"):
        return False
    if text.lower() in PRESETS or text.endswith(".json"):
        return True
    path = Path(text)
    if path.exists():
        return path.is_dir() and (path / "config.json").is_file()
    # a bare name close to a preset ('llama3-8') is a mistyped preset: load_config names the closest ones
    return not path.suffix and "/" not in text and bool(closest(text.lower(), PRESETS))


def load_config(spec: str | Path, strict: bool = False) -> LLMConfig:
    """A preset name ('llama3-8b') or the path of a config.json (or of a directory holding one).
    ``strict``: refuse a config with warnings (keys that may change cost but are not modelled)."""
    text = str(spec)
    path = Path(text)
    if path.exists():
        cfg = load_config_file(path)
    elif text.lower() in PRESETS:
        cfg = preset_config(text)
    elif text.endswith(".json") or "/" in text or "\\" in text:
        raise LLMConfigError(f"config file {text} does not exist")
    else:
        cfg = preset_config(text)  # raises with the closest preset names
    if strict and cfg.warnings:
        n = len(cfg.warnings)
        raise LLMConfigError(f"{cfg.source}: refused under --strict, {n} warning{'s' if n > 1 else ''}: "
                             + "; ".join(cfg.warnings), hint="drop --strict to predict with these as warnings")
    return cfg
