"""Printing a command's result: JSON, or aligned ``key: value`` lines."""

from __future__ import annotations

import json
from typing import Any

from ..textio import jsonable


def emit(obj: dict[str, Any], as_json: bool) -> None:
    """Print a result as JSON or as aligned ``key: value`` lines."""
    obj = jsonable(obj)
    if as_json:
        print(json.dumps(obj, indent=2))
        return
    for key, value in obj.items():
        print(f"{key:>14}: {json.dumps(value) if isinstance(value, dict | list) else value}")
