"""``python -m rfviz figure NAME --out FILE.html|FILE.png --data FILE.csv``, ``figure --list`` and
``figure NAME --check`` (the paper figure gallery, rfviz.gallery)."""

from __future__ import annotations

import argparse
import errno
import os
import pathlib

from ..gallery import check_key_numbers, export_figure, get_figure, load_gallery
from ..textio import UsageError
from ._output import emit

NAME = "figure"
HELP = "export a paper figure from the gallery as HTML/PNG and its data as CSV"


def run(args: argparse.Namespace) -> int:
    if args.list:
        gallery = load_gallery()
        if args.json:
            emit({"figures": [{"name": g.name, "title": g.title, "paper": g.paper, "params": g.params,
                               "explorer": g.explorer_link(), "catalog_numbers": len(g.catalog)}
                              for g in gallery.values()]}, True)
        else:
            for g in gallery.values():
                print(f"{g.name:<30} {g.title}")
        return 0
    if not args.name:
        raise UsageError("give a figure NAME or --list")
    if args.check:
        return _check(args.name, args.json)
    if not (args.out or args.data):
        raise UsageError("give --out FILE.html|FILE.png and/or --data FILE.csv (or --check)")
    get_figure(args.name)  # an unknown name is reported before any path
    for path in (args.out, args.data):
        if path:
            _check_writable(path)
    written = export_figure(args.name, args.out, args.data)
    emit({"figure": args.name, **written}, args.json)
    return 0


def _check_writable(path: str) -> None:
    """Refuse an output path that cannot be written (missing directory, a too-long name, a device) before the
    figure is computed; the OSError becomes one line (exit 2) in ``rfviz.cli.main``."""
    target = pathlib.Path(path)
    parent = target.parent if str(target.parent) else pathlib.Path(".")
    if not parent.is_dir():
        raise OSError(errno.ENOENT, "the directory does not exist", str(parent))
    name_max = os.pathconf(parent, "PC_NAME_MAX") if hasattr(os, "pathconf") else 255
    if len(target.name.encode()) > name_max:
        raise OSError(errno.ENAMETOOLONG, f"file name longer than {name_max} bytes", target.name[:40] + "...")
    if target.exists() and not target.is_file():
        raise OSError(errno.EISDIR, "not a regular file", str(target))
    if not os.access(parent, os.W_OK):
        raise OSError(errno.EACCES, "the directory is not writable", str(parent))


def _check(name: str, as_json: bool) -> int:
    """Compare the figure's key numbers with the reference catalog; exit status 1 if any is off."""
    entry = get_figure(name)
    checks = check_key_numbers(name)
    if as_json:
        emit({"figure": name, "source": entry.source,
              "checks": [{"key": c.key, "catalog": c.printed, "rfviz": c.rfviz, "tolerance": c.tolerance, "ok": c.ok,
                          "note": c.note} for c in checks]}, True)
    else:
        print(f"{entry.title}\nsource: {entry.source}")
        for c in checks:
            mark = "ok " if c.ok else "OFF"
            print(f"  {mark} {c.key:<42} catalog {c.printed:>14}  rfviz {c.rfviz:.10g}" + (f"  [{c.note}]" if c.note
                                                                                           else ""))
        print(f"{sum(c.ok for c in checks)}/{len(checks)} key numbers match to the printed precision")
    return 0 if all(c.ok for c in checks) else 1


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", nargs="?", help="figure name (see --list)")
    p.add_argument("--list", action="store_true", help="list the gallery's figures")
    p.add_argument("--out", help="output file: .html (plotly.js embedded), or .png (needs a Chromium for kaleido)")
    p.add_argument("--data", help="write the figure's numbers as CSV")
    p.add_argument("--check", action="store_true",
                   help="compare the figure's key numbers with the reference catalog (exit 1 if any is off)")
    p.add_argument("--json", action="store_true", help="print JSON")
