"""Where the tests find the repository's files, whatever folder a test module sits in."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
FIXTURES = TESTS / "fixtures"
EXAMPLES = REPO / "examples"
HF_CONFIGS = FIXTURES / "hf_configs"
