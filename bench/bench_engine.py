"""Benchmark of the Monte-Carlo engine. Not a test: prints a table.

For each estimator, at d = 64, m = 64 and a 32 × 32 (θ, r) grid with equal trials, it measures
  (a) throughput in feature evaluations per second: trials × pairs × 2 inputs × F / time, where F is the number
      of random features per input (2m for trig and positive_antithetic: sin/cos or e^{±ω·u}; m for positive).
      This is the work of a feature-map implementation, which evaluates φ(x) and φ(y) for every trial;
  (b) that throughput as a fraction of the machine's element-wise torch.exp (torch.cos for trig) rate measured in
      the same run, same device and dtype: the practical limit, one transcendental per feature evaluation;
  (c) the speed-up over a straightforward numpy reference written the way the papers' code is: a per-trial Haar
      matrix from scipy.stats.ortho_group (orthogonal coupling) or a Gaussian matrix (iid), and a Python loop over
      the points computing φ(x), φ(y) and their inner product.
It also prints the transcendentals the engine really executes per second (it evaluates K̂ from the combined
exponent ω·(x ± y), so it needs fewer than 2·F per pair) and the agreement (z) of the two MSE estimates.

Usage: python bench/bench_engine.py [--threads 1] [--trials 128] [--device cpu] [--dtypes float64,float32]
"""

from __future__ import annotations

import argparse
import os
import sys


def _parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=1, help="torch and BLAS threads (default 1)")
    p.add_argument("--trials", type=int, default=128, help="trials for the engine AND the numpy reference")
    p.add_argument("--d", type=int, default=64)
    p.add_argument("--m", type=int, default=64)
    p.add_argument("--grid", type=int, default=32, help="grid side: grid × grid (θ, r) pairs")
    p.add_argument("--coupling", default="orthogonal", choices=("orthogonal", "iid"))
    p.add_argument("--estimators", default="trig,positive,positive_antithetic")
    p.add_argument("--device", default="cpu", help="auto, cpu or cuda")
    p.add_argument("--dtypes", default="float64,float32",
                   help="engine dtypes, comma-separated (float64 is the CPU default; float32 is opt-in there)")
    p.add_argument("--repeats", type=int, default=3, help="engine timings: best of this many runs")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args()


ARGS = _parse() if __name__ == "__main__" else None
if ARGS is not None:  # thread counts must be fixed before numpy/torch load their thread pools
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(ARGS.threads)

import math  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402

import numpy as np  # noqa: E402
import scipy.stats  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import rfviz  # noqa: E402
from rfviz.engine import monte_carlo_grid  # noqa: E402
from rfviz.geometry import canonical_pair  # noqa: E402
from rfviz.sampling import resolve_device  # noqa: E402

# Per estimator: (features per input F, transcendentals the engine executes per (trial, pair), limit function).
FEATURES: dict[str, tuple[Callable[[int], int], Callable[[int], int], str]] = {
    "trig": (lambda m: 2 * m, lambda m: m, "cos"),
    "positive": (lambda m: m, lambda m: m, "exp"),
    "positive_antithetic": (lambda m: 2 * m, lambda m: 2 * m, "exp"),
}


CLOCK: Callable[[], float] = time.perf_counter
"""Wall clock on a GPU; process CPU time on the CPU (set in main), so that other processes sharing the cores
do not inflate either the engine's or the reference's time."""


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def elementwise_rate(fn: str, device: torch.device, dtype: torch.dtype) -> float:
    """Best element-wise rate (elements/s) of torch.exp or torch.cos over cache-sized and large tensors."""
    op = getattr(torch, fn)
    best = 0.0
    for n in (2**16, 2**18, 2**20, 2**22):
        a = torch.rand(n, device=device, dtype=dtype) * 4 - 2
        out = torch.empty_like(a)
        op(a, out=out)
        reps = max(3, 2**24 // n)
        _sync(device)
        t = CLOCK()
        for _ in range(reps):
            op(a, out=out)
        _sync(device)
        best = max(best, n * reps / (CLOCK() - t))
    return best


def numpy_reference(name: str, x: np.ndarray, y: np.ndarray, m: int, trials: int, coupling: str,
                    seed: int) -> tuple[float, np.ndarray, np.ndarray]:
    """The papers' style: one Haar matrix per trial (scipy), a Python loop over points. Returns (seconds,
    MSE, its standard error) for the softmax kernel SM(x, y) = e^{x·y}."""
    rng = np.random.default_rng(seed)
    d = x.shape[-1]
    P = len(x)
    target = np.exp(np.sum(x * y, -1))
    sq_err = np.empty((trials, P))
    start = CLOCK()
    for t in range(trials):
        if coupling == "orthogonal":
            q = scipy.stats.ortho_group.rvs(d, random_state=rng)[:m]
            w = q * np.sqrt(rng.chisquare(d, size=m))[:, None]
        else:
            w = rng.standard_normal((m, d))
        for i in range(P):
            phi_x = _features_numpy(name, w, x[i])
            phi_y = _features_numpy(name, w, y[i])
            sq_err[t, i] = (phi_x @ phi_y - target[i]) ** 2
    seconds = CLOCK() - start
    return seconds, sq_err.mean(0), sq_err.std(0, ddof=1) / math.sqrt(trials)


def _features_numpy(name: str, w: np.ndarray, u: np.ndarray) -> np.ndarray:
    """φ(u) of the softmax kernel (HRF eq. 2-3, Performers' FAVOR+), as in the papers' reference code."""
    m = w.shape[0]
    p = w @ u
    half = 0.5 * (u @ u)
    if name == "trig":
        return np.exp(half) * np.concatenate([np.sin(p), np.cos(p)]) / np.sqrt(m)
    if name == "positive":
        return np.exp(p - half) / np.sqrt(m)
    return np.exp(np.concatenate([p, -p]) - half) / np.sqrt(2 * m)


def time_engine(est: rfviz.Estimator, r_axis: np.ndarray, theta_axis: np.ndarray, d: int, trials: int,
                device: torch.device, dtype: torch.dtype, repeats: int, seed: int) -> tuple[float, object]:
    """Best wall time of ``repeats`` engine runs on the grid (after one warm-up run)."""
    res = monte_carlo_grid(est, r_axis, theta_axis, d, trials=trials, seed=seed, device=device, dtype=dtype)
    best = math.inf
    for rep in range(max(1, repeats)):
        _sync(device)
        t0 = CLOCK()
        res = monte_carlo_grid(est, r_axis, theta_axis, d, trials=trials, seed=seed + rep, device=device, dtype=dtype)
        _sync(device)
        best = min(best, CLOCK() - t0)
    return best, res


def main(args: argparse.Namespace) -> None:
    global CLOCK
    torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    CLOCK = time.process_time if device.type == "cpu" else time.perf_counter
    dtypes = [getattr(torch, name) for name in args.dtypes.split(",")]
    d, m, g, trials = args.d, args.m, args.grid, args.trials
    r_axis = np.linspace(0.05, 1.2, g)
    theta_axis = np.linspace(0.0, math.pi, g)
    rr, tt = np.meshgrid(r_axis, theta_axis)
    x, y = canonical_pair(rr.ravel(), tt.ravel(), d)
    pairs = len(x)
    rates = {(fn, dt): elementwise_rate(fn, device, dt) for fn in ("exp", "cos") for dt in dtypes}
    cpu = platform.processor() or platform.machine()
    print(f"# rfviz engine benchmark: d={d} m={m} grid={g}x{g} ({pairs} pairs) trials={trials} "
          f"coupling={args.coupling}")
    print(f"# device={device} torch threads={torch.get_num_threads()} (BLAS/OMP threads {args.threads}) "
          f"torch {torch.__version__} numpy {np.__version__} cpu={cpu} cores={os.cpu_count()} "
          f"clock={'process CPU time' if device.type == 'cpu' else 'wall'} load={os.getloadavg()[0]:.1f}")
    for dt in dtypes:
        print(f"# element-wise torch rates ({str(dt)[6:]}): exp {rates[('exp', dt)] / 1e9:.3f} G/s, "
              f"cos {rates[('cos', dt)] / 1e9:.3f} G/s")
    header = (f"{'estimator':<20} {'dtype':<8} {'engine s':>9} {'feat.eval/s':>12} {'(b) frac':>9} {'transc/s':>10} "
              f"{'tr.frac':>8} {'numpy s':>9} {'(c) speedup':>12} {'MSE z':>7} {'peak MiB':>9}")
    print(header)
    print("-" * len(header))
    for name in args.estimators.split(","):
        est = rfviz.create(name, m=m, coupling=args.coupling)
        features, transcendentals, limit_fn = FEATURES[name]
        ref_s, ref_mse, ref_se = numpy_reference(name, x, y, m, trials, args.coupling, args.seed)
        for dt in dtypes:
            best, res = time_engine(est, r_axis, theta_axis, d, trials, device, dt, args.repeats, args.seed)
            rate = rates[(limit_fn, dt)]
            throughput = trials * pairs * 2 * features(m) / best
            executed = trials * pairs * transcendentals(m) / best
            # Agreement of the two MSE estimates at the grid's centre (r ≈ 0.6, θ ≈ π/2). One point only: every
            # grid point sees the same ω in a trial, so z-scores across the grid are strongly correlated.
            centre = (g // 2) * g + g // 2
            eng_mse, eng_se = res.mse.ravel()[centre], res.mse_stderr.ravel()[centre]
            z = (eng_mse - ref_mse[centre]) / math.hypot(eng_se, ref_se[centre])
            print(f"{name:<20} {str(dt)[6:]:<8} {best:>9.4f} {throughput:>12.3e} {throughput / rate:>9.2f} "
                  f"{executed:>10.3e} {executed / rate:>8.2f} {ref_s:>9.2f} {ref_s / best:>11.0f}x "
                  f"{z:>7.2f} {res.peak_bytes / 2**20:>9.1f}")
    print("# (b) frac = feature evaluations/s ÷ element-wise rate (same dtype) of the feature's transcendental (exp, "
          "or cos for trig);\n#   tr.frac = transcendentals the engine actually executes/s ÷ that rate. numpy "
          "reference: float64, same trials.")
    print("# MSE z = z-score of engine minus numpy-reference MSE at the grid centre (|z| < 3 if they agree).")


if __name__ == "__main__":
    main(ARGS)
