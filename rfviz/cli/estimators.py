"""``python -m rfviz estimators``: the catalog, every registered estimator with its parameters."""

from __future__ import annotations

import argparse

from ..estimators import REGISTRY
from ._output import emit, table

NAME = "estimators"
HELP = "list every registered estimator with its parameters"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print JSON")


def _default(value: object) -> str:
    """A default as typed on the command line: a complex number ``{'re': a, 'im': b}`` as ``a+bj``."""
    if isinstance(value, dict) and set(value) == {"re", "im"}:
        return str(complex(value["re"], value["im"])).strip("()")
    return str(value)


def run(args: argparse.Namespace) -> int:
    catalog = [cls.describe() for cls in REGISTRY.values()]
    if args.json:
        emit({"estimators": catalog}, True)
    else:
        rows = [("name", "title", "known", "parameters (defaults)")]
        for item in catalog:
            params = ", ".join(f"{p['name']}={_default(p['default'])}" for p in item["params"])
            rows.append((item["name"], item["title"], item["known"], params))
        print(table(rows))
    return 0
