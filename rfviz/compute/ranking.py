"""Which estimator, tuned, for my data: every applicable estimator, its parameters chosen on the data by minimising
the closed-form relative Gram error, ranked at equal feature-vector length (what a model pays in memory and
multiply-adds) and at equal m; the top three confirmed by the Gram Monte Carlo (rfviz.gram_engine) with its reliability
rule.

The Gram error is the closed form summed over the data's pairs, E‖K̂ − K‖²_F = Σ_ij MSE(x_i, y_j) (one draw of
features shared by all entries), divided by ‖K‖²_F; the ranking reports its square root (relative Frobenius error).
What is tuned, per estimator (candidates evaluated in closed form, the best kept):

* the coupling (``iid`` and the couplings with a coupled closed form, ``registries.COUPLED_CLOSED_FORMS``);
* GERF's (s, A): the CRT paper's data statistics (CRT eqs. 8, 12, 14, ``maths.crt.batch_stats``) give the real
  A* of OPRF (CRT Thm 3.3 with the batch's mean Z) and the complex A minimising the batch-averaged variance
  (CRT App. 9.10.1, ``maths.crt.fit_gerf_complex``); OPRF's A from the batch's mean Z (``A_from=fixed``);
* the hybrids' split of a length between m base features and n λ features (4m(n + 1) numbers);
* the dot-product sketches' realness q; the Poisson rate λ (CRT Thm 3.4's λ* averaged over the pairs) and the
  geometric p on small grids; Maclaurin's degree allocation is its own Algorithm 3 (``method=optimized``).

The feature length per estimator is probed from its feature map (``rfviz.gram_engine``: trig and antithetic 2m, positive
m, hybrids 4m(n + 1), complex maps twice their count).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..estimators import Estimator, get_estimator
from ..gram_engine import (
    feature_count,
    gram_error,
    gram_study_cost,
    log_frobenius_sq_closed_form,
    log_kernel_matrix,
    with_family_agreement,
)
from ..maths import crt
from ..params import CPU_DEVICE_PARAM, Cost, Param, ParameterError, check, require_cost
from ..registries import COUPLED_CLOSED_FORMS, COUPLINGS, IID
from ..sampling import resolve_device
from .catalog import estimators_for_kernel, make_estimator
from .features import HYBRID_N, SECONDS_PER_EVALUATION

LENGTH_PARAM = Param("length", 256, "int", "feature-vector length (real numbers per input) at which the estimators are "
                     "compared", low=1, high=1_000_000, ui_low=8, ui_high=4096, label="feature length")
RANKING_SECONDS_PER_PAIR = 4e-6
"""Seconds per pair of one candidate's closed-form Gram error, averaged over a ranking's mix of estimators (measured
2026-11-27: 0.5 s of CPU idle, 1.8 s under load, for the 13 softmax estimators' ~280 evaluations on digits'
64 × 64 pairs, 0.4-1.6 µs per pair;
the heaviest single closed form, GERF with orthogonal coupling, 6.2 µs; erring slow)."""
CONFIRMED = 3
"""How many of the top estimators the Monte Carlo confirms."""
RANK_STAGES = ("ranking the estimators by their closed forms", "confirming the top three by Monte Carlo")
"""The stages of ``rank_estimators``' progress (the second only with ``repeats``)."""
Q_GRID = (0.5, 0.75, 1.0)
"""Realness q of the dot-product sketches tried (only (2q − 1)² matters)."""
GEOMETRIC_P_GRID = (0.2, 0.4, 0.6, 0.8)
RANKING_NOTE = ("Every estimator of the kernel with a closed form, its parameters tuned on these pairs by minimising "
                "the "
                "closed-form relative Gram error √(Σ MSE)/‖K‖_F (coupling; GERF/OPRF's A from the CRT paper's batch "
                "statistics; the hybrids' split of the length between m and n; sketch q; Poisson λ; geometric p), "
                "ranked at equal feature-vector length (what a model pays: trig and antithetic maps use 2m numbers, "
                "positive m, hybrids 4m(n + 1), complex maps twice their count), with the same parameters at equal m "
                "beside it. The button samples the top three (features shared by all entries; reliability rule and "
                "Holm at 1 % as in the Gram table).")
POISSON_SCALES = (0.5, 1.0, 2.0)
"""Multiples of the pairs' mean λ* (CRT Thm 3.4) tried for the Poisson rate."""


@dataclass(frozen=True)
class Ranked:
    """One estimator's row: tuned parameters, and its relative Gram error at equal length and at equal m."""

    estimator: str
    params: dict[str, Any]
    tuned: dict[str, str]
    m_equal_length: int | None
    length_equal_length: int | None
    relative_error_equal_length: float | None
    length_equal_m: int | None
    relative_error_equal_m: float | None
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _rel(est: Estimator, q: np.ndarray, k: np.ndarray, log_k2: float) -> float:
    """√(Σ MSE / Σ K²) of one estimator on the data (inf where it overflows)."""
    log_f = log_frobenius_sq_closed_form(est, q, k)
    if log_f is None:
        return math.inf
    return math.exp(0.5 * (log_f - log_k2)) if log_f - log_k2 < 1400 else math.inf


def _length(est: Estimator, row: np.ndarray) -> int | None:
    try:
        return round(feature_count(est, row))
    except NotImplementedError:
        return None


def _candidates(name: str, kernel: str, q: np.ndarray, k: np.ndarray) -> list[tuple[dict[str, Any], dict[str, str]]]:
    """(parameters, what was tuned) to try for one estimator on this data."""
    cls = get_estimator(name)
    names = {p.name for p in cls.spec}
    d = q.shape[1]
    out: list[tuple[dict[str, Any], dict[str, str]]] = [({}, {})]
    if "coupling" in names:
        out = [({"coupling": c}, {"coupling": "closed-form minimum over couplings"})
               for c in (IID, *COUPLED_CLOSED_FORMS) if COUPLINGS[c].min_d <= d]
    if name == "gerf":
        stats = crt.batch_stats(q, k)
        s, a = crt.fit_gerf_complex(stats)
        a_real = float(crt.A_star(stats["Zbar"], d))
        how = "CRT data statistics: real A* (Thm 3.3, batch Z) or complex A (App. 9.10.1)"
        out = [({**c, "A": A, "s": ss}, {**t, "A": how}) for c, t in out
               for A, ss in ((complex(a_real), 1), (a, s))]
    if name == "oprf":
        zbar = crt.batch_stats(q, k)["Zbar"]
        out = [({**c, "A_from": "fixed", "Z": float(zbar)}, {**t, "A": "CRT eq. 8: A* from the batch's mean Z"})
               for c, t in out]
    if name in ("poly_sketch", "tensor_srht"):
        out = [({"q": v}, {"q": "closed-form minimum over q"}) for v in Q_GRID]
    if name == "poisson":
        lam = float(np.mean(crt.lam_star(q[:, None, :], k[None, :, :]))) or 1.0
        out = [({"lam": f * lam}, {"lam": "CRT Thm 3.4 λ* (mean over pairs) × 0.5, 1, 2"}) for f in POISSON_SCALES]
    if name == "hybrid_gaussian":  # its λ normalisation needs one r on data of unequal norms (HRF App. F)
        r_norm = float(np.sqrt(np.mean(np.linalg.norm(q, axis=1)) * np.mean(np.linalg.norm(k, axis=1))))
        out = [({"r_norm": r_norm}, {"r_norm": "the data's geometric-mean norm"})]
    if name == "geometric":
        out = [({"prob": p}, {"prob": "closed-form minimum over p"}) for p in GEOMETRIC_P_GRID]
    return out


def _m_for_length(name: str, kernel: str, params: Mapping[str, Any], length: int, row: np.ndarray) -> int | None:
    """The largest m whose feature vector is at most ``length`` long (features are affine in m)."""
    try:
        small = [_length(make_estimator(name, {**params, "m": m}, kernel), row) for m in (8, 16)]
    except ParameterError:
        return None
    if small[0] is None or small[1] is None:  # caught by _best: the reason replaces "no m fits the length"
        raise NotImplementedError(f"{name} has no feature map: its parameters are chosen for each pair (an oracle "
                                  "of the closed form), so it has no feature vector; compared at equal m only")
    slope = (small[1] - small[0]) / 8
    offset = small[0] - 8 * slope
    m = math.floor((length - offset) / slope) if slope > 0 else None
    return m if m is not None and m >= 1 else None


def _best(name: str, kernel: str, options: Iterable[tuple[dict[str, Any], dict[str, str]]],
          m_of: Callable[[dict[str, Any]], int | None], q: np.ndarray, k: np.ndarray, log_k2: float
          ) -> tuple[float, dict[str, Any], dict[str, str], int | None, str]:
    """The candidate with the smallest relative Gram error at the m ``m_of`` gives it (and why the last candidate
    that could not be evaluated failed)."""
    best: tuple[float, dict[str, Any], dict[str, str], int | None] = (math.inf, {}, {}, None)
    why = ""
    for params, tuned in options:
        try:
            m = m_of(params)
            if m is None:
                why = why or "no m fits the length"
                continue
            est = make_estimator(name, {**params, "m": m}, kernel)
            est.check_dimension(q.shape[1])
            rel = _rel(est, q, k, log_k2)
        except (ParameterError, FloatingPointError, OverflowError, NotImplementedError) as exc:
            why = " ".join(str(exc).split())[:200]
            continue
        if rel < best[0] or best[3] is None:
            best = (rel, params, tuned, m)
    return (*best, why)


def _hybrid_options() -> list[tuple[dict[str, Any], dict[str, str]]]:
    return [({"n": n}, {"n": "closed-form minimum over the split of the length between m and n"})
            for n in HYBRID_N]


def rank_one(name: str, kernel: str, q: np.ndarray, k: np.ndarray, length: int, m: int, log_k2: float) -> Ranked:
    """One estimator tuned on the data at equal length and at equal m.

    Parameters
    ----------
    name, kernel : the estimator and the target kernel.
    q, k : np.ndarray
        Queries (N, d) and keys (M, d).
    length : int
        The feature-vector length of the equal-length comparison.
    m : int
        The m of the equal-m comparison.
    log_k2 : float
        log ‖K‖²_F of the data.

    Returns
    -------
    Ranked
    """
    row = np.zeros((1, q.shape[1]))
    row[0, 0] = 1.0
    options = _candidates(name, kernel, q, k)
    if "n" in {p.name for p in get_estimator(name).spec}:
        options = [({**c, **h}, {**t, **ht}) for c, t in options for h, ht in _hybrid_options()]
    rel_l, params_l, tuned_l, m_l, why = _best(name, kernel, options, lambda p: _m_for_length(name, kernel, p, length,
                                                                                          row), q, k, log_k2)
    # equal m: the parameters tuned at equal length, at this m (a hybrid's n stays the one its length chose)
    rel_m, params_m, _, _, _ = _best(name, kernel, [(params_l, tuned_l)] if m_l is not None else options,
                                     lambda p: m, q, k, log_k2)
    note = "" if m_l is not None else f"not applicable to this data at length {length}: {why}"
    len_l = _length(make_estimator(name, {**params_l, "m": m_l}, kernel), row) if m_l is not None else None
    len_m = _length(make_estimator(name, {**params_m, "m": m}, kernel), row) if math.isfinite(rel_m) else None
    shown = make_estimator(name, {**params_l, "m": m_l or m}, kernel).params
    return Ranked(name, {key: v for key, v in shown.items() if key != "m"}, tuned_l, m_l, len_l,
                  rel_l if math.isfinite(rel_l) else None, len_m, rel_m if math.isfinite(rel_m) else None, note)


def ranking_cost(names: Sequence[str], pairs: int, d: int, length: int = 256) -> Cost:
    """The ``Cost`` of :func:`rank_estimators` in closed forms (the Monte Carlo is costed by ``rfviz.gram_engine``).

    Parameters
    ----------
    names : the estimators ranked.
    pairs, d : the data's query × key pairs and dimension.
    length : the feature length compared (Maclaurin's allocation grows with its m, about length / 2).

    Returns
    -------
    Cost

    Examples
    --------
    >>> ranking_cost(["trig", "positive"], 64 * 64, 4).seconds < 5
    True
    """
    evaluations, extra = 0, 0.0
    for name in names:
        n_options = 3 * (len(HYBRID_N) if "n" in {p.name for p in get_estimator(name).spec} else 1)
        evaluations += 2 * n_options + 4
        if name == "maclaurin":
            from ..estimators.dp import MAX_OPTIMIZED_FEATURES
            from ..maths.dp import optimize_maclaurin_cost

            m = min(MAX_OPTIMIZED_FEATURES, max(1, length // 2))
            extra += 2 * optimize_maclaurin_cost(m, 6).seconds
    per_eval = SECONDS_PER_EVALUATION + pairs * RANKING_SECONDS_PER_PAIR * max(1.0, d / 64)
    return Cost(nbytes=pairs * d * 8.0 * 24, seconds=evaluations * per_eval + extra)


def ranking_table(ranking: Ranking, titles: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The ranking as table rows for a page (estimator titles, the tuned parameters as text, Monte Carlo merged).

    Parameters
    ----------
    ranking : Ranking
    titles : mapping, optional
        Estimator name → the title shown.

    Returns
    -------
    list of dict
    """
    sampled = {c["estimator"]: c for c in ranking.confirmation}
    rows = []
    for i, r in enumerate(ranking.rows, 1):
        tuned = ", ".join(f"{k}={r.params[k]}" for k in r.tuned if k in r.params)
        c = sampled.get(r.estimator)
        rows.append({"rank": i, "estimator": (titles or {}).get(r.estimator, r.estimator),
                     f"m at length {ranking.length}": r.m_equal_length, "length": r.length_equal_length,
                     "rel. Gram error (equal length)": r.relative_error_equal_length,
                     f"length at m = {ranking.m}": r.length_equal_m,
                     f"rel. Gram error (m = {ranking.m})": r.relative_error_equal_m,
                     "tuned": tuned or "—"})
        if sampled:  # Monte-Carlo columns only once the top three were sampled (no empty cells before)
            rows[-1].update({"Monte Carlo √(Σ err²)/‖K‖": (math.sqrt(c["frobenius_sq_mc"] / c["kernel_frobenius_sq"])
                                                          if c and c["frobenius_sq_mc"] is not None else None),
                             "MC reliable": c["reliable"] if c else None,
                             "MC agreement": c["agreement"] if c else None})
        if any(x.note for x in ranking.rows):
            rows[-1]["note"] = r.note
    return rows


@dataclass(frozen=True)
class Ranking:
    """The ranked rows (best first at equal length) and the Monte-Carlo confirmation of the top ones."""

    kernel: str
    length: int
    m: int
    rows: list[Ranked]
    confirmation: list[dict[str, Any]]

    def to_json(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "length": self.length, "m": self.m,
                "ranking": [r.to_json() for r in self.rows], "monte_carlo": self.confirmation}


def rank_estimators(queries: np.ndarray, keys: np.ndarray, kernel: str = "softmax", length: int = 256,
                    m: int | None = None, names: Sequence[str] | None = None, repeats: int = 0, seed: int = 0,
                    device: str = "cpu", report: Callable[[float], None] | None = None) -> Ranking:
    """Rank the estimators of ``kernel`` on a data set, each tuned on it (see the module's docstring).

    Parameters
    ----------
    queries, keys : np.ndarray
        (N, d) and (M, d).
    kernel : str
        ``softmax``, ``gaussian`` or ``dot_product``.
    length : int
        Feature-vector length of the equal-length comparison (real numbers per input).
    m : int, optional
        m of the equal-m comparison (default ``length // 2``).
    names : sequence of str, optional
        The estimators (default: every registered estimator of the kernel with a closed form).
    repeats : int
        Monte-Carlo repeats confirming the top ``CONFIRMED`` (0: closed forms only).
    seed : int
        Seed of the Monte Carlo.
    device : str
        ``cpu``, ``cuda``, ``cuda:N`` or ``auto`` (``params.CPU_DEVICE_PARAM``; CUDA where torch sees none is
        refused before any work).
    report : callable, optional
        ``report(fraction)``: the progress, in two stages (``RANK_STAGES``): ranking by closed forms (all of it
        without ``repeats``, else the first half), then the Monte-Carlo confirmation.

    Returns
    -------
    Ranking
        Rows sorted by the relative Gram error at equal length (None last).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> q = rng.normal(size=(8, 3)) * 0.3
    >>> r = rank_estimators(q, q, "gaussian", length=64, names=["trig", "positive"])
    >>> [row.estimator for row in r.rows][0]
    'trig'
    """
    q, k = np.asarray(queries, dtype=float), np.asarray(keys, dtype=float)
    length = check(length, LENGTH_PARAM)
    m = int(m if m is not None else max(1, length // 2))
    applicable = [n for n in estimators_for_kernel(kernel) if get_estimator(n).has_closed_form]
    names = list(names) if names is not None else applicable
    if len(set(names)) != len(names):
        raise ParameterError(f"names lists an estimator twice: {', '.join(names)}")
    device = str(resolve_device(check(device, CPU_DEVICE_PARAM)))
    for name in names:
        get_estimator(name)  # an unknown name: ParameterError listing the registered ones
        if name not in applicable:
            raise ParameterError(f"{name} does not estimate the {kernel} kernel with a closed form; estimators of "
                                 f"it: {', '.join(applicable)}")
    if not names:
        raise ParameterError(f"no estimator of the {kernel} kernel to rank")
    require_cost(f"ranking {len(names)} estimators on {q.shape[0]} × {k.shape[0]} pairs",
                 ranking_cost(names, q.shape[0] * k.shape[0], q.shape[1], length), "use fewer points or estimators")
    log_k = log_kernel_matrix(make_estimator(names[0], {}, kernel), q, k)[0]
    log_k2 = float(np.logaddexp.reduce(2 * np.ravel(log_k)))
    share = 0.5 if repeats else 1.0
    rows = []
    for i, name in enumerate(names):
        rows.append(rank_one(name, kernel, q, k, int(length), m, log_k2))
        if report is not None:
            report(share * (i + 1) / len(names))
    rows.sort(key=lambda r: (r.relative_error_equal_length is None, r.relative_error_equal_length or 0.0))
    confirmation: list[dict[str, Any]] = []
    if repeats:
        top = [r for r in rows if r.m_equal_length is not None][:CONFIRMED]
        ests = [make_estimator(r.estimator, {**r.params, "m": r.m_equal_length}, kernel) for r in top]
        require_cost(f"the Monte-Carlo confirmation ({repeats} repeats)", gram_study_cost(ests, q, k, repeats),
                     "lower repeats")
        sampled = []
        for i, (r, est) in enumerate(zip(top, ests, strict=True)):
            sampled.append(gram_error(est, q, k, repeats, seed, device, r.estimator))
            if report is not None:
                report(0.5 + 0.5 * (i + 1) / len(top))
        errors = with_family_agreement(sampled)  # Holm over the three
        for err in errors:
            row = err.to_json()
            confirmation.append({key: row[key] for key in (
                "estimator", "frobenius_sq_closed_form", "frobenius_sq_mc", "stderr", "reliable", "z_vs_closed_form",
                "agreement", "warning", "kernel_frobenius_sq")})
    return Ranking(kernel, int(length), m, rows, confirmation)
