"""Rank devices for a workload under constraints (pure: predictions in, ranked recommendations out).

``recommend`` ranks devices for a model's workload (``models.py``), ``recommend_llm`` devices and device counts
for a language model (``llm.py``, with ``plan_llm``); both filter and sort through one ranker
(``ranking.py``) and return a ``RecommendResult`` (``results.py``) in base units.
"""

from ..errors import NothingFeasibleError
from .constraints import AUTO_DTYPES, RANK_BY, SEGMENTS, Constraints, auto_dtypes
from .llm import LLMPlan, plan_llm, recommend_llm
from .models import recommend
from .results import LLMRecommendation, Recommendation, RecommendResult, Rejection

__all__ = [
    "AUTO_DTYPES", "RANK_BY", "SEGMENTS", "Constraints", "LLMPlan", "LLMRecommendation", "NothingFeasibleError",
    "RecommendResult",
    "Recommendation", "Rejection", "plan_llm", "recommend", "recommend_llm",
    "auto_dtypes",
]
