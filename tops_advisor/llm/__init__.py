"""LLM inference from a model config: prefill, decode, KV cache, quantization and tensor parallelism.

Built analytically (no tracing, no torch, no download): ``load_config`` reads a Hugging Face style
``config.json`` or a preset, ``build_workload`` turns it into a ``Workload`` for the roofline, and
``analyze_llm`` gives the end-to-end answer (TTFT, time per token, memory, fit, devices, bound);
``build_training`` a training step (forward, backward, optimizer, memory) for ``train.predict_training``. The fewest
devices that meet targets (``plan_llm``) is the recommender's: ``tops_advisor.recommend``.
"""

from .analysis import LLMAnalysis, analyze_llm
from .builder import build_workload
from .config import LLMConfig, config_from_dict
from .load import is_llm_spec, load_config
from .memory import MemoryBreakdown, kv_bytes_per_token, memory_breakdown, weight_bytes
from .precision import Precision, make_precision
from .presets import PRESETS
from .training import build_training, training_workload

__all__ = [
    "LLMAnalysis", "LLMConfig", "MemoryBreakdown", "PRESETS", "Precision", "analyze_llm", "build_training",
    "build_workload", "config_from_dict", "is_llm_spec", "kv_bytes_per_token", "load_config", "make_precision",
    "memory_breakdown", "training_workload", "weight_bytes",
]
