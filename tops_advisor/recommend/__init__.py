"""Rank devices for a workload under constraints (pure: predictions in, ranked recommendations out).

``recommend`` ranks devices for a model's workload (``models.py``), ``recommend_llm`` devices and device counts
for a language model (``llm.py``, with ``plan_llm``; ``LLMRun`` names the precisions and kernels), and
``recommend_serving`` continuous-batching serving plans for one (``llm_serving.py``); all filter and sort through
one ranker (``ranking.py``) and return a ``RecommendResult`` (``results.py``) in base units.
"""

from ..errors import NothingFeasibleError
from .constraints import AUTO_DTYPES, RANK_BY, SEGMENTS, Constraints, auto_dtypes
from .llm import LLMPlan, LLMRun, plan_llm, recommend_llm
from .llm_serving import ServingAsk, recommend_serving
from .models import recommend
from .results import LLMRecommendation, LLMServingRecommendation, Recommendation, RecommendResult, Rejection

__all__ = [
    "AUTO_DTYPES", "RANK_BY", "SEGMENTS", "Constraints", "LLMPlan", "LLMRecommendation", "LLMRun",
    "LLMServingRecommendation", "NothingFeasibleError", "RecommendResult", "Recommendation", "Rejection",
    "ServingAsk", "plan_llm", "recommend", "recommend_llm", "recommend_serving",
    "auto_dtypes",
]
