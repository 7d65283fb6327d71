"""Models from the libraries people use, by name: ``timm:NAME``, ``torchvision:NAME``, ``hf:PATH_OR_ID``.

Each is built from its library's own constructor on the meta device (no weights are downloaded or allocated)
with inputs from its own configuration: timm's ``pretrained_cfg["input_size"]``, torchvision's weight
transforms (crop or resize size), a Hugging Face config's image size, mel bins or ``--seq`` tokens. The
libraries are an optional extra (``pip install 'tops-advisor[models]'``); without one, one line says what to
install.
"""

from __future__ import annotations

import importlib
import json
import os
import re
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ..errors import InputError, ModelFileError, one_line

PREFIXES = ("timm:", "torchvision:", "hf:")
DEFAULT_SEQ = 128       # tokens per sequence for text models when --seq is not given
DEFAULT_IMAGE_SIDE = 224  # ImageNet's crop, for vision configs that carry no image_size
WAVEFORM_SAMPLES = 16_000  # raw-audio models (wav2vec2, HuBERT): one second at their 16 kHz sampling rate
_EXTRA = "pip install 'tops-advisor[models]' (timm, torchvision, transformers)"


def parse_input_shape(text: str) -> tuple[int, ...]:
    """'3x224x224' or '3,224,224' (one sample, no batch dimension) -> (3, 224, 224)."""
    parts = [p.strip() for p in text.replace(",", "x").lower().split("x")]
    if not parts or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise InputError(f"--input-shape {text!r} is not a shape", hint="positive sizes without the batch, e.g. "
                         "3x224x224 for an image, 80x3000 for mel features")
    return tuple(int(p) for p in parts)


def is_library_spec(spec: str | Path) -> bool:
    return isinstance(spec, str) and spec.startswith(PREFIXES)


@dataclass
class LibraryModel:
    """A library model: how to build it and its example inputs (a tuple, or a dict of keyword inputs)."""

    spec: str
    build_fn: Callable[[], torch.nn.Module]
    inputs_fn: Callable[[int], tuple | dict]
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def label(self) -> str:
        return self.spec

    @property
    def stem(self) -> str:
        """A short name: the model's name, a config file's directory or stem, a hub id's last part."""
        name = self.spec.split(":", 1)[1].rstrip("/")
        if not self.spec.startswith("hf:"):
            return name
        p = Path(name)
        return p.parent.name if p.name == "config.json" and p.parent.name else p.stem if p.suffix else p.name

    def build(self, meta: bool = True) -> torch.nn.Module:
        try:
            if not meta:
                return self.build_fn()
            try:
                with torch.device("meta"):
                    return self.build_fn()
            except NotImplementedError as exc:   # the builder reads values of tensors it made (a meta tensor)
                if "meta" not in str(exc):
                    raise
                with _parameters_on_meta():
                    return self.build_fn()
        except ModelFileError:
            raise
        except Exception as exc:
            raise ModelFileError(f"{self.spec}: building it raised {one_line(exc)}") from None

    def inputs(self, batch: int, meta: bool = True):
        with torch.device("meta" if meta else "cpu"):
            return self.inputs_fn(batch)


@contextmanager
def _parameters_on_meta():
    """Build on the CPU but put each parameter and buffer on the meta device as it is registered, so their
    initialisation costs nothing: for builders that compute their architecture with torch and read the
    values back (torchvision's RegNet: ``torch.round(...).int().tolist()`` of the block widths), which fails
    under ``torch.device("meta")``. Module attributes made on the CPU otherwise stay small."""
    register_parameter, register_buffer = torch.nn.Module.register_parameter, torch.nn.Module.register_buffer

    def parameter(module, name, param):
        if param is not None:
            param = torch.nn.Parameter(param.to("meta"), requires_grad=param.requires_grad)
        register_parameter(module, name, param)

    def buffer(module, name, tensor, persistent=True):
        register_buffer(module, name, tensor.to("meta") if tensor is not None else None, persistent)

    torch.nn.Module.register_parameter, torch.nn.Module.register_buffer = parameter, buffer
    try:
        yield
    finally:
        torch.nn.Module.register_parameter, torch.nn.Module.register_buffer = register_parameter, register_buffer


def _import(name: str):
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise ModelFileError(f"{name} is not installed ({one_line(exc)})", hint=_EXTRA) from None


def _image(shape: tuple[int, ...]) -> Callable[[int], tuple]:
    return lambda batch: (torch.randn(batch, *shape),)


def timm_model(name: str, input_shape: tuple[int, ...] | None = None) -> LibraryModel:
    """``timm.create_model(name, pretrained=False)``; input size from its pretrained config."""
    timm = _import("timm")
    if not timm.is_model(name):
        from ..suggest import did_you_mean

        raise ModelFileError(f"timm has no model {name!r}", hint=did_you_mean(name, timm.list_models()) or
                             "list them with python -c 'import timm; print(timm.list_models())'")
    cfg = timm.get_pretrained_cfg(name)
    shape = tuple(input_shape or (cfg.input_size if cfg is not None else (3, 224, 224)))
    return LibraryModel(f"timm:{name}", lambda: timm.create_model(name, pretrained=False), _image(shape),
                        (f"input {'x'.join(map(str, shape))} ({'given' if input_shape else 'timm pretrained_cfg'})",))


def _torchvision_shape(tv, name: str) -> tuple[int, ...]:
    """The size the default weights' transforms feed the model (crop for classification, resize otherwise)."""
    try:
        transforms = tv.models.get_model_weights(name).DEFAULT.transforms()
    except (ValueError, AttributeError, KeyError):
        return (3, 224, 224)
    size = getattr(transforms, "crop_size", None) or getattr(transforms, "resize_size", None) or [224]
    side = int(size[0])
    return (3, side, side)


def torchvision_model(name: str, input_shape: tuple[int, ...] | None = None) -> LibraryModel:
    """``torchvision.models.get_model(name, weights=None)``: classification, segmentation, detection, video."""
    tv = _import("torchvision")
    names = tv.models.list_models()
    if name not in names:
        from ..suggest import did_you_mean

        raise ModelFileError(f"torchvision has no model {name!r}", hint=did_you_mean(name, names))
    shape = tuple(input_shape or _torchvision_shape(tv, name))
    detection = name in tv.models.list_models(module=tv.models.detection)

    def inputs(batch: int):
        images = torch.randn(batch, *shape)
        return (list(images.unbind(0)),) if detection else (images,)

    import inspect

    # No weights, ever: segmentation and detection builders also fetch a pretrained backbone unless told not to.
    params = inspect.signature(tv.models.get_model_builder(name)).parameters
    kwargs = {"weights": None} | ({"weights_backbone": None} if "weights_backbone" in params else {})
    build = lambda: tv.models.get_model(name, **kwargs)  # noqa: E731
    return LibraryModel(f"torchvision:{name}", build, inputs,
                        (f"input {'x'.join(map(str, shape))} ({'given' if input_shape else 'weights transforms'})",))


# --task -> the Auto class that builds it (default: the config's own ``architectures[0]``, else AutoModel)
HF_TASKS = {
    "base": "AutoModel", "causal-lm": "AutoModelForCausalLM", "masked-lm": "AutoModelForMaskedLM",
    "seq2seq-lm": "AutoModelForSeq2SeqLM", "sequence-classification": "AutoModelForSequenceClassification",
    "image-classification": "AutoModelForImageClassification", "speech-seq2seq": "AutoModelForSpeechSeq2Seq",
}


def hf_config(transformers, path_or_id: str):
    """The model's config, built by transformers' own config class (so per-model defaults hold): from a
    directory or a ``config.json`` offline, else from the hub (the config alone, never weights).

    A spec that looks like a path (``looks_like_path``) and does not exist fails at once, suggesting the
    nearest directories; only an ``ORG/NAME`` that is not on disk goes to the hub: the local cache first,
    then the hub itself when it answers within ``HUB_CHECK_TIMEOUT_S`` (one line when offline, not the hub
    client's retries)."""
    p = Path(path_or_id).expanduser()
    if not p.exists() and looks_like_path(path_or_id):
        raise ModelFileError(f"hf:{path_or_id}: no such file or directory",
                             hint=_nearby_hint(p) or "give a config.json or a model directory, or a hub id "
                                                     "(org/name) when online")
    try:
        if p.is_file():
            data = json.loads(p.read_text(encoding="utf-8"))
            model_type = data.pop("model_type", None)
            if model_type is None:
                raise ModelFileError(f"{p}: no model_type key: not a Hugging Face config.json")
            return transformers.AutoConfig.for_model(model_type, **data)
        if p.is_dir():
            return transformers.AutoConfig.from_pretrained(path_or_id, local_files_only=True)
        return _hub_config(transformers, path_or_id, p)
    except ModelFileError:
        raise
    except Exception as exc:
        raise ModelFileError(f"hf:{path_or_id}: cannot read its config: {one_line(exc)}",
                             hint="give a directory or config.json on disk, or a hub id when online") from None


# A hub id: NAME or ORG/NAME of letters, digits, '.', '_' and '-' (the hub's own rule for repository names).
HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?")
# Explicit default: a reachable hub accepts a connection in well under a second; three seconds allows a slow
# link and still fails an offline machine quickly.
HUB_CHECK_TIMEOUT_S = 3.0


def looks_like_path(spec: str) -> bool:
    """Whether an ``hf:`` spec is meant as a file or directory: it starts with '.', '/' or '~', ends in
    '.json', has a separator under a directory that exists here, or cannot be a hub id (ORG/NAME)."""
    if spec.startswith((".", "/", "~")) or spec.endswith(".json"):
        return True
    separators = [s for s in ("/", os.sep, os.altsep) if s]
    if any(s in spec for s in separators):
        parent = Path(spec).expanduser().parent
        if str(parent) not in ("", ".") and parent.is_dir():
            return True
    return HUB_ID.fullmatch(spec) is None


def _nearby_hint(p: Path) -> str | None:
    """'did you mean: models/bert?' for a path one misspelt part away from existing directories or files."""
    from ..suggest import PATH_CUTOFF, closest

    parts = p.parts
    base = Path(parts[0]) if p.is_absolute() else Path(".")
    rest = list(parts[1:] if p.is_absolute() else parts)
    while rest and (base / rest[0]).exists():
        base, rest = base / rest[0], rest[1:]
    if not rest or not base.is_dir():
        return None
    try:
        names = [c.name for c in base.iterdir()]
    except OSError:
        return None
    hits = [base / hit for hit in closest(rest[0], names, cutoff=PATH_CUTOFF)]
    whole = [h / Path(*rest[1:]) for h in hits if rest[1:] and (h / Path(*rest[1:])).exists()]
    shown = [str(h) for h in whole or hits]
    return f"did you mean: {', '.join(shown)}?" if shown else None


def _hub_config(transformers, hub_id: str, p: Path):
    """A hub id's config: from the local cache, else from the hub when it can be reached now."""
    try:
        return transformers.AutoConfig.from_pretrained(hub_id, local_files_only=True)
    except Exception:  # not cached: ask the hub, if there is one to ask
        pass
    why = _hub_unreachable()
    if why:
        nearby = _nearby_hint(p)
        raise ModelFileError(f"hf:{hub_id}: not a local path, and the Hugging Face hub cannot be reached ({why})",
                             hint=nearby or "give a config.json or a model directory on disk, or run online once "
                                            "to cache the config")
    return transformers.AutoConfig.from_pretrained(hub_id)


def _hub_unreachable(timeout_s: float = HUB_CHECK_TIMEOUT_S) -> str | None:
    """Why the hub cannot be asked now ('HF_HUB_OFFLINE is set', 'no connection to huggingface.co'), or None.
    Behind a proxy the connection is the proxy's to make: no check."""
    import socket
    import threading
    from urllib.parse import urlsplit

    if os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in ("1", "ON", "YES", "TRUE"):
        return "HF_HUB_OFFLINE is set"
    if any(os.environ.get(k) for k in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return None
    url = urlsplit(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    host, port = url.hostname or "huggingface.co", url.port or (80 if url.scheme == "http" else 443)
    result: list[str | None] = ["timed out"]

    def connect() -> None:
        try:
            socket.create_connection((host, port), timeout=timeout_s).close()
            result[0] = None
        except OSError as exc:
            result[0] = exc.strerror or type(exc).__name__

    worker = threading.Thread(target=connect, daemon=True)  # name lookup ignores the socket timeout
    worker.start()
    worker.join(timeout_s)
    return f"no connection to {host}: {result[0]}" if result[0] else None


def _hf_class(transformers, config, task: str | None):
    if task is not None:
        if task not in HF_TASKS:
            raise ModelFileError(f"unknown --task {task!r}", hint=f"one of {', '.join(HF_TASKS)}")
        auto = getattr(transformers, HF_TASKS[task])
        return lambda: auto.from_config(config)
    arch = (getattr(config, "architectures", None) or [None])[0]
    cls = getattr(transformers, arch, None) if arch else None
    if cls is None:
        return lambda: transformers.AutoModel.from_config(config)
    return lambda: cls._from_config(config)


def _sub(config, *names):
    """The first sub-config among ``names`` (CLIP: text_config / vision_config), else the config itself."""
    for n in names:
        sub = getattr(config, n, None)
        if sub is not None:
            return sub
    return config


def image_side(vision) -> tuple[int, int]:
    """The config's image size (an int or a pair); 224 x 224 when it names none (ResNet, SegFormer configs)."""
    size = getattr(vision, "image_size", None) or DEFAULT_IMAGE_SIDE
    return (int(size), int(size)) if isinstance(size, int) else (int(size[0]), int(size[-1]))


def input_kinds(config) -> tuple[bool, bool, bool, bool]:
    """Which inputs the config asks for: (text, image, speech features, raw waveform)."""
    speech = hasattr(config, "num_mel_bins")
    waveform = getattr(config, "feat_extract_norm", None) is not None  # wav2vec2, HuBERT, WavLM: raw audio
    has_text = hasattr(_sub(config, "text_config"), "vocab_size") and not speech and not waveform
    return has_text, hasattr(_sub(config, "vision_config"), "num_channels"), speech, waveform


def hf_inputs(config, seq: int, input_shape: tuple[int, ...] | None) -> Callable[[int], dict]:
    """Keyword inputs built from the config: token ids and an all-ones attention mask of ``seq`` tokens,
    pixel values at the config's image size, mel features for speech (``max_source_positions`` x 2 frames:
    Whisper's 30 s), one second of raw audio for waveform models, decoder ids for encoder-decoders."""
    vision = _sub(config, "vision_config")
    has_text, has_image, speech, waveform = input_kinds(config)

    def inputs(batch: int) -> dict:
        out: dict = {}
        if has_text:
            out["input_ids"] = torch.zeros(batch, seq, dtype=torch.long)
            out["attention_mask"] = torch.ones(batch, seq, dtype=torch.long)
        if has_image:
            shape = input_shape or (vision.num_channels, *image_side(vision))
            out["pixel_values"] = torch.randn(batch, *shape)
        if speech:
            frames = 2 * int(getattr(config, "max_source_positions", 1500))
            out["input_features"] = torch.randn(batch, *(input_shape or (config.num_mel_bins, frames)))
        if waveform:  # one second of 16 kHz audio, the rate these models are trained on
            out["input_values"] = torch.randn(batch, *(input_shape or (WAVEFORM_SAMPLES,)))
        if getattr(config, "is_encoder_decoder", False):
            out["decoder_input_ids"] = torch.zeros(batch, seq if has_text else 1, dtype=torch.long)
        return out

    return inputs


def hf_model(path_or_id: str, task: str | None = None, seq: int | None = None,
             input_shape: tuple[int, ...] | None = None) -> LibraryModel:
    transformers = _import("transformers")
    config = hf_config(transformers, path_or_id)
    seq = seq or DEFAULT_SEQ
    has_text, has_image = input_kinds(config)[:2]
    notes = (f"{config.model_type}: {seq} tokens per sequence, attention mask all ones (no padding)",) \
        if has_text else ()
    if has_image:
        vision = _sub(config, "vision_config")
        shape = input_shape or (vision.num_channels, *image_side(vision))
        notes += (f"{config.model_type}: pixel values {'x'.join(map(str, shape))} (the config's image size)",)
    if getattr(config, "_experts_implementation", None) == "eager":
        # The eager expert loop branches on routing values (`if expert_idx == num_experts`): on tensors without
        # values every expert would be skipped. The grouped GEMM does the same arithmetic without branching.
        config._experts_implementation = "grouped_mm"
        notes += ("experts counted as one grouped GEMM per layer, as experts_implementation='grouped_mm' runs "
                  "them: the config's eager expert loop branches on routing values counting cannot see",)
    build = _hf_class(transformers, config, task)
    return LibraryModel(f"hf:{path_or_id}", build, hf_inputs(config, seq, input_shape), notes)


def load_library_model(spec: str, *, task: str | None = None, seq: int | None = None,
                       input_shape: tuple[int, ...] | None = None) -> LibraryModel:
    """``timm:NAME``, ``torchvision:NAME`` or ``hf:PATH_OR_ID``."""
    kind, _, name = spec.partition(":")
    if not name:
        raise ModelFileError(f"{spec!r}: no model name after '{kind}:'", hint="e.g. timm:resnet50")
    if kind == "timm":
        return timm_model(name, input_shape)
    if kind == "torchvision":
        return torchvision_model(name, input_shape)
    return hf_model(name, task, seq, input_shape)
