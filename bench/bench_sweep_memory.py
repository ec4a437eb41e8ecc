"""Peak resident memory of the ``rfviz sweep`` driver against the grid size (flat from 10⁵ to 10⁷ points).

Runs ``python -m rfviz sweep positive d=2 m=1 --grid r=… theta=… --trials 2 --block-trials 2 --backend local``
(cheap tasks) for each grid size, samples the process's resident memory (``/proc/PID/status``: VmRSS, and VmHWM, the
kernel's high-water mark) every 0.25 s, and stops a run with SIGINT (Ctrl-C: the sweep keeps its points) after
``--seconds`` when it has not finished, once memory has had time to stabilise. Prints one Markdown table row per size.

Usage: ``python bench/bench_sweep_memory.py --points 100000 1000000 10000000 --seconds 90``
"""

from __future__ import annotations

import argparse
import math
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rfviz.server.processes import drain, kill_groups  # noqa: E402


def _status_kib(pid: int, key: str) -> int:
    try:
        for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _grid(points: int) -> list[str]:
    """Two axes whose product is ``points`` (each ≤ 10⁵ values, the per-axis limit)."""
    n_theta = 10 ** max(0, math.ceil(math.log10(points)) - 3) if points > 1000 else 1
    n_r = points // n_theta
    return [f"r=0.1:1:{n_r}", f"theta=0:3:{n_theta}"] if n_theta > 1 else [f"r=0.1:1:{n_r}"]


def measure(points: int, seconds: float, out_dir: pathlib.Path) -> dict[str, float | int | str]:
    """Run one sweep of ``points`` cheap points for at most ``seconds``; its memory and progress."""
    out = out_dir / f"mem-{points}.csv"
    cmd = [sys.executable, "-m", "rfviz", "sweep", "positive", "d=2", "m=1", "--grid", *_grid(points),
           "--trials", "2", "--block-trials", "2", "--device", "cpu", "--quiet", "--out", str(out)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    started = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    samples: list[tuple[float, int]] = []
    hwm = 0
    stopped = False
    while proc.poll() is None:
        rss, hwm = _status_kib(proc.pid, "VmRSS"), max(hwm, _status_kib(proc.pid, "VmHWM"))
        samples.append((time.monotonic() - started, rss))
        if not stopped and time.monotonic() - started > seconds:
            proc.send_signal(signal.SIGINT)
            stopped = True
        if time.monotonic() - started > seconds + 120:  # SIGINT not honoured within 2 minutes: killed, bounded
            kill_groups([proc])
        time.sleep(0.25)
    err = drain(proc.stderr, seconds=5)  # bounded: a leftover child holding the pipe cannot block it
    wall = time.monotonic() - started
    done = sum(1 for _ in open(out)) - 1 if out.exists() else 0
    half = [r for t, r in samples if t >= wall / 2 and r > 0]  # 0: the process had exited
    return {"points": points, "rss_peak_mib": hwm / 1024, "rss_2nd_half_min_mib": min(half, default=0) / 1024,
            "rss_2nd_half_max_mib": max(half, default=0) / 1024, "done": done, "wall_s": wall,
            "stopped": "SIGINT" if stopped else "finished", "rc": proc.returncode, "err": err.strip()[-200:]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--points", type=int, nargs="+", default=[100_000, 1_000_000, 10_000_000])
    p.add_argument("--seconds", type=float, default=90.0, help="stop a run (Ctrl-C) after this long")
    args = p.parse_args()
    print("| grid points | driver peak RSS (MiB) | RSS in the 2nd half of the run (MiB) | points done | run |")
    print("|---:|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.points:
            r = measure(n, args.seconds, pathlib.Path(tmp))
            span = f"{r['rss_2nd_half_min_mib']:.0f}–{r['rss_2nd_half_max_mib']:.0f}"
            print(f"| {n:.0e} | {r['rss_peak_mib']:.0f} | {span} | {r['done']} | {r['stopped']} after "
                  f"{r['wall_s']:.0f} s |", flush=True)
            if r["rc"] not in (0, 130):
                print(f"  (exit {r['rc']}: {r['err']})", flush=True)


if __name__ == "__main__":
    main()
