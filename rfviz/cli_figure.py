"""``python -m rfviz figure NAME --out FILE.html|FILE.png --data FILE.csv`` and ``figure --list``."""

from __future__ import annotations

import argparse

from .cli import UsageError, command, emit
from .gallery import export_figure, load_gallery


def _run_figure(args: argparse.Namespace) -> int:
    if args.list:
        gallery = load_gallery()
        items = [{"name": g.name, "title": g.title, "paper": g.paper} for g in gallery.values()]
        if args.json:
            emit({"figures": items}, True)
        else:
            for g in items:
                print(f"{g['name']:<28} {g['title']}  ({g['paper']})")
        return 0
    if not args.name:
        raise UsageError("give a figure NAME or --list")
    if not (args.out or args.data):
        raise UsageError("give --out FILE.html|FILE.png and/or --data FILE.csv")
    written = export_figure(args.name, args.out, args.data)
    emit({"figure": args.name, **written}, args.json)
    return 0


@command("figure", "export a paper figure from the gallery as HTML/PNG and its data as CSV")
def _configure_figure(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", nargs="?", help="figure name (see --list)")
    p.add_argument("--list", action="store_true", help="list the gallery's figures")
    p.add_argument("--out", help="output file: .html, or .png (needs a Chromium for kaleido)")
    p.add_argument("--data", help="write the figure's numbers as CSV")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_run_figure)
