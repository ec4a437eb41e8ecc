"""Every command shown in README.md and docs/ runs as written.

The ```bash blocks of README.md and docs/**/*.md (generated pages and the build excluded) are extracted; each block
runs line by line (``\\`` continuations joined) in a fresh temporary directory holding a copy of ``examples/``, as in
a clone, and every line must exit with code 0. ``rfviz …`` and ``python -m rfviz …`` run this checkout's rfviz with
this interpreter. Lines that set up an environment (``./run …``, ``pip …``) are not run: they would install
packages; tests/project/test_packaging.py checks the ``./run`` script itself.

Large work is cut by one rule, so that a block still runs what it shows at a small scale (applied alike to every
line of a block, so that a ``--resume`` line continues the sweep its block started):

* ``--trials N`` becomes ``--trials min(N, 2000)`` and ``--repeats N`` becomes ``--repeats min(N, 5)``;
* a sweep grid axis ``name=start:stop:count`` keeps at most 3 values (``count`` becomes ``min(count, 3)``).
"""

from __future__ import annotations

import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SKIPPED_DIRS = {"_build", "_generated", "tutorial"}
NOT_RUN = {"./run": "sets up .venv and runs the app or the whole suite (tests/project/test_packaging.py checks ./run)",
           "pip": "installs packages"}
MAX_TRIALS, MAX_REPEATS, MAX_GRID_COUNT = 2000, 5, 3


def documented_files() -> list[pathlib.Path]:
    docs = [p for p in (ROOT / "docs").rglob("*.md") if not SKIPPED_DIRS & set(p.relative_to(ROOT).parts)]
    return [ROOT / "README.md", *sorted(docs)]


def bash_blocks() -> list[tuple[str, list[str]]]:
    """(where, commands) of every ```bash block; ``where`` is ``file:line``."""
    blocks = []
    for path in documented_files():
        text = path.read_text()
        for match in re.finditer(r"^```bash\n(.*?)^```", text, re.S | re.M):
            line = text.count("\n", 0, match.start()) + 1
            joined = re.sub(r"\\\n\s*", " ", match.group(1))
            commands = [c.strip() for c in joined.splitlines() if c.strip() and not c.strip().startswith("#")]
            blocks.append((f"{path.relative_to(ROOT)}:{line}", commands))
    return blocks


def cut(command: str) -> str:
    """The documented rule: fewer trials and repeats, at most 3 values per start:stop:count grid axis."""
    command = re.sub(r"--trials\s+(\d+)", lambda m: f"--trials {min(int(m[1]), MAX_TRIALS)}", command)
    command = re.sub(r"--repeats\s+(\d+)", lambda m: f"--repeats {min(int(m[1]), MAX_REPEATS)}", command)
    return re.sub(r"(\w+=[^\s:=,]+:[^\s:=,]+):(\d+)\b", lambda m: f"{m[1]}:{min(int(m[2]), MAX_GRID_COUNT)}",
                  command)


def runnable(command: str) -> str:
    """The shell line to run: ``rfviz``/``python`` are this interpreter and this checkout's rfviz."""
    python = shlex.quote(sys.executable)
    command = re.sub(r"^rfviz\b", f"{python} -m rfviz", cut(command))
    return re.sub(r"^python\b", python, command)


def skip_reason(command: str) -> str | None:
    first = command.split()[0]
    return NOT_RUN.get(first)


BLOCKS = bash_blocks()


def test_the_documented_commands_are_found():
    commands = [c for _, block in BLOCKS for c in block]
    assert any(c.startswith("rfviz mse") for c in commands) and any(c.startswith("rfviz sweep") for c in commands)
    assert any(c.startswith("./run test") for c in commands)


def test_the_cutting_rule():
    assert cut("rfviz mse trig --trials 1000000 --json") == "rfviz mse trig --trials 2000 --json"
    assert cut("rfviz gram a iris --repeats 200 --m 8") == "rfviz gram a iris --repeats 5 --m 8"
    assert cut("rfviz sweep p --grid theta=0:3.1416:32 r=0.1:2:2 m=8,16") == \
        "rfviz sweep p --grid theta=0:3.1416:3 r=0.1:2:2 m=8,16"
    assert cut("rfviz mse gerf A=-0.1+0.05i theta=0.785") == "rfviz mse gerf A=-0.1+0.05i theta=0.785"


@pytest.mark.slow
@pytest.mark.parametrize(("where", "commands"), BLOCKS, ids=[w for w, _ in BLOCKS])
def test_documented_commands_run(where, commands, tmp_path):
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "OMP_NUM_THREADS": "1"}
    ran = 0
    for command in commands:
        if skip_reason(command):
            continue
        out = subprocess.run(["bash", "-c", runnable(command)], cwd=tmp_path, env=env, capture_output=True,
                             text=True, timeout=600, stdin=subprocess.DEVNULL)
        assert out.returncode == 0, f"{where}: `{command}` exited with {out.returncode}\n{out.stderr[-3000:]}"
        ran += 1
    if not ran:
        pytest.skip("; ".join(sorted({f"{c.split()[0]}: {skip_reason(c)}" for c in commands})))
