"""Where the tests find the repository's files, whatever folder a test module sits in."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
FIXTURES = TESTS / "fixtures"
EXAMPLES = REPO / "examples"
HF_CONFIGS = FIXTURES / "hf_configs"


def load_script(relative: str, name: str):
    """Import a repository script (``benchmarks/reports/published_score.py``) as module ``name``, registered in
    ``sys.modules`` (dataclasses look their module up)."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(name, REPO / relative)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
