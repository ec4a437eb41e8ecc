"""``python -m rfviz figure NAME --out FILE.html|FILE.png --data FILE.csv``, ``figure --list`` and
``figure NAME --check`` (the paper figure gallery, rfviz.gallery)."""

from __future__ import annotations

import argparse
import os
import pathlib

from ..fileio import check_output
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
    if args.out and args.data and os.path.abspath(args.out) == os.path.abspath(args.data):
        raise UsageError("--out and --data must be different files")
    for path, what in ((args.out, "out"), (args.data, "data")):
        if path:
            _check_writable(path, what, args.overwrite)
    written = export_figure(args.name, args.out, args.data)
    emit({"figure": args.name, **written}, args.json)
    return 0


def _is_ours(path: pathlib.Path) -> bool:
    """Whether an existing file looks like rfviz's own figure export (so ``--overwrite`` may replace it): a CSV whose
    first line is rfviz's ``# rfviz`` header, an HTML page with rfviz's parameter line, or a PNG image (which carries
    no mark of its writer)."""
    try:
        if path.stat().st_size > 64 * 2**20:
            return False
        data = path.read_bytes()
    except OSError:
        return False
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return data.startswith(b"# rfviz ")
    if suffix in (".html", ".htm"):
        return b"<title>" in data[:4096] and PARAMETER_MARK in data
    return suffix == ".png" and data.startswith(b"\x89PNG\r\n\x1a\n")


PARAMETER_MARK = b'margin:4px 8px">rfviz '
"""How ``rfviz.figures.export.figure_html`` opens the parameter line above a figure."""


def _check_writable(path: str, what: str, overwrite: bool) -> None:
    """Refuse, before the figure is computed, an output that cannot or must not be written (a missing directory, a
    too-long name, a device, a directory, a symbolic link, an existing file without ``--overwrite`` or one rfviz did
    not write): one line, exit 2 (``rfviz.fileio.check_output``)."""
    check_output(path, overwrite=overwrite, ours=_is_ours, what=what)


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
    p.add_argument("--overwrite", action="store_true",
                   help="replace existing --out/--data files (only figure files rfviz wrote)")
    p.add_argument("--check", action="store_true",
                   help="compare the figure's key numbers with the reference catalog (exit 1 if any is off)")
    p.add_argument("--json", action="store_true", help="print JSON")
