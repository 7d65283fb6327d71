"""Reading a JSON file a user names (a calibration, an LLM config): one line that names the file when it is
missing, unreadable or not JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .errors import TopsAdvisorError


def read_json(path: Path, what: str, error: type[TopsAdvisorError]) -> Any:
    """The parsed contents of ``path``; ``error`` naming it as ``what`` ("calibration file") otherwise."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise error(f"{what} {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"{what} {path} cannot be read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise error(f"{what} {path} is not valid JSON: {exc}") from None
