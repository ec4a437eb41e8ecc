"""``python -m rfviz estimators``: the catalog, every registered estimator with its parameters."""

from __future__ import annotations

import argparse

from ..estimators import REGISTRY
from ._output import emit

NAME = "estimators"
HELP = "list every registered estimator with its parameters"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace) -> int:
    catalog = [cls.describe() for cls in REGISTRY.values()]
    if args.json:
        emit({"estimators": catalog}, True)
    else:
        for item in catalog:
            params = ", ".join(f"{p['name']}={p['default']}" for p in item["params"])
            print(f"{item['name']:<22} {item['title']}  [{params}]")
    return 0
