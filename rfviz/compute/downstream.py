"""Downstream truth: what a kernel approximation does to a model fitted on it, beside its closed-form kernel error.

* **Kernel ridge regression.** Ridge regression on features φ(x) (no intercept, targets centred on the training
  mean) is kernel ridge regression with the Gram matrix K̂ = ΦΦᵀ (the primal–dual identity), so its test RMSE
  against exact kernel ridge (scikit-learn's ``KernelRidge``, same α, same centring) measures only the
  approximation. Gaussian kernel e^{−scale²|x−y|²/2}; symmetric feature maps only (a ridge model uses one φ).
* **Softmax attention.** A = rownorm(e^{QKᵀ}) and Â = rownorm(φ_q(Q)φ_k(K)ᵀ) (Performer); the error is
  ‖ÂV − AV‖_F/‖AV‖_F, asymmetric maps included (query and key sides).
* **Comparator.** scikit-learn's ``Nystroem`` (data-dependent landmarks) at the same feature length.
* **Does the kernel MSE predict it?** Spearman's rank correlation, over estimators × lengths, between the
  closed-form relative Gram error (training pairs, resp. query–key pairs) and the downstream error; every
  downstream number is a mean over ``repeats`` feature draws with its standard error.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from ..engine import spawn_seed, work_seconds
from ..gram_engine import GRAM_MAX_SECONDS, feature_count, frobenius_sq_closed_form, kernel_matrix
from ..params import Cost, ParameterError, require_cost
from .catalog import make_estimator

RIDGE_ESTIMATORS = ("trig", "trig_phase", "positive", "positive_antithetic", "gerf")
"""Symmetric maps compared in the ridge study (GERF with s = 1)."""
ATTENTION_ESTIMATORS = ("trig", "positive", "positive_antithetic", "gerf", "hybrid_angular")
"""Estimators of the softmax kernel compared in the attention study (asymmetric maps with their two sides)."""
PAGE_RIDGE_ESTIMATORS = ("trig", "positive_antithetic", "gerf")
"""The ridge maps of the Your-data page's panel (and the default of ``rfviz downstream --task ridge``)."""
PAGE_LENGTHS = (32, 64, 128)
"""The feature lengths of the Your-data page's panel (and the command's default)."""
REGRESSION_SETTINGS = {"diabetes": (0.3, 1.0), "synthetic": (0.6, 0.05)}
"""Regression set → (input scale, ridge α) of the page's panel: inputs × scale (mean norm near 1), α to the noise."""
VALUE_DIM = 4
"""Columns of the attention values V drawn from the seed (``attention_values``)."""
CLOSED_FORM_SECONDS_PER_PAIR_COORDINATE = 6e-8
"""Seconds of one closed-form relative Gram error per pair and input coordinate (hybrid angular, the slowest of
the maps compared: 5.9e-8 on 400 × 400 digits pairs at d = 64, one core; trig, positive, GERF 0.8–1.2e-8)."""
CLOSED_FORM_BYTES_PER_PAIR_COORDINATE = 32.0
"""Peak bytes of that closed form per pair and coordinate (measured: about 20 for hybrid angular, 9 for the
others, as growth of the peak resident memory on 400 × 400 digits pairs)."""
SECONDS_PER_REPEAT = 0.01
"""Fixed seconds of one (method, length, repeat) beside its multiply-adds: a feature draw, a scikit-learn fit and its
prediction (measured 2026-11-28 on the shared 2-core VM: 5.4 ms per ridge repeat on the synthetic set, 6 ms per
attention repeat on iris at length 16, 18 ms per Nyström repeat; erring slow)."""
MAX_SECONDS = GRAM_MAX_SECONDS
"""Longest downstream study run without a time budget in force (the CLI's and the API's default): the same limit as
``rfviz gram``'s Monte Carlo (``rfviz.gram_engine.GRAM_MAX_SECONDS``, ten minutes)."""


@dataclass(frozen=True)
class Row:
    """One (method, length) of a downstream study: mean and standard error over the repeats."""

    method: str
    length: int
    m: int | None
    error: float
    stderr: float
    kernel_error: float | None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"method": self.method, "length": self.length, "m": self.m, "error": self.error,
                "stderr": self.stderr, "kernel_relative_error": self.kernel_error, **self.extra}


@dataclass(frozen=True)
class Study:
    """A downstream study: its rows, the exact model's error, and the rank correlation of kernel and downstream
    errors over the random-feature rows."""

    task: str
    rows: list[Row]
    exact: float
    spearman: float | None

    def to_json(self) -> dict[str, Any]:
        return {"task": self.task, "exact": self.exact, "spearman_kernel_vs_downstream": self.spearman,
                "rows": [r.to_json() for r in self.rows]}


FEATURES_KEY, NYSTROEM_KEY = 0, 1
"""The children of a study's seed (the one seed rule, ``rfviz.engine.spawn_seed``): repeat r draws its random
features with ``spawn_seed(seed, FEATURES_KEY, r)`` and its Nyström landmarks with ``spawn_seed(seed, NYSTROEM_KEY,
r)``."""


def _nystroem_state(seed: int, repeat: int) -> int:
    """scikit-learn's ``random_state`` (< 2³²) of repeat ``repeat``'s Nyström landmarks."""
    return spawn_seed(seed, NYSTROEM_KEY, repeat) % 2**32


def _features(est: Any, X: np.ndarray, seed: int, side: str = "query", samples: Any = None) -> tuple[np.ndarray, Any]:
    """Real features of X for one draw (complex maps as [Re, Im] on the query side, [Re, −Im] on the key side)."""
    if samples is None:
        samples = est.sample(1, X.shape[1], generator=torch.Generator().manual_seed(int(seed)),
                             device=torch.device("cpu"))
    phi = est.features(samples, torch.as_tensor(X, dtype=torch.float64), side)[0]
    if phi.is_complex():
        phi = torch.cat([phi.real, (1.0 if side == "query" else -1.0) * phi.imag], dim=-1)
    return phi.numpy(), samples


def m_for_length(name: str, kernel: str, length: int, d: int, params: dict[str, Any]) -> int | None:
    """The largest m whose feature vector of ``name`` (with ``params``) is at most ``length`` real numbers for inputs
    of dimension ``d``, or None when even m = 1 is longer (feature lengths are affine in m, probed at m = 8, 16).

    Parameters
    ----------
    name : str
        A registered estimator.
    kernel : str
        Its kernel.
    length : int
        The feature-vector length available.
    d : int
        Input dimension.
    params : dict
        The estimator's other parameters.

    Returns
    -------
    int or None
        The m, or None when no m ≥ 1 fits.

    Examples
    --------
    >>> m_for_length("trig", "gaussian", 64, 3, {}), m_for_length("positive", "softmax", 64, 3, {})
    (32, 64)
    """
    row = np.zeros((1, d))
    row[0, 0] = 1.0
    small = [feature_count(make_estimator(name, {**params, "m": m}, kernel), row) for m in (8, 16)]
    slope = (small[1] - small[0]) / 8
    m = math.floor((length - (small[0] - 8 * slope)) / slope)
    return m if m >= 1 else None


def _spearman(a: Sequence[float | None], b: Sequence[float]) -> float | None:
    from scipy.stats import spearmanr

    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and math.isfinite(x)]
    if len(pairs) < 3:
        return None
    rho = spearmanr([p[0] for p in pairs], [p[1] for p in pairs]).statistic
    return float(rho) if math.isfinite(rho) else None


def _mean_se(values: Sequence[float]) -> tuple[float, float]:
    v = np.asarray(values, dtype=float)
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else math.inf


def downstream_cost(n_train: int, n_test: int, d: int, lengths: Sequence[int], methods: int, repeats: int,
                    pairs: int | None = None) -> Cost:
    """The ``Cost`` of a downstream study: features and ridge solves for every method, length and repeat, the exact
    model, and the closed-form relative Gram error of every method and length on the n_train² training pairs (whose
    pairwise differences dominate the memory of a wide data set).

    Parameters
    ----------
    n_train, n_test, d : sizes of the data (attention: n_train = queries + keys, n_test = 0; an upper bound).
    lengths : the feature lengths.
    methods : how many methods (estimators plus Nyström).
    repeats : feature draws per method and length.
    pairs : pairs of the closed-form kernel error (default n_train², the ridge study's training pairs; attention:
        queries × keys).

    Returns
    -------
    Cost

    Examples
    --------
    >>> downstream_cost(300, 100, 10, [64, 128], 6, 10).seconds < 5
    True
    """
    top = max(lengths)
    work = sum((n_train + n_test) * L * d + n_train * L * L + L**3 for L in lengths) * methods * repeats
    work += n_train**3 + n_train**2 * d  # the exact model
    pair_coordinates = float(n_train**2 if pairs is None else pairs) * d
    nbytes = 8.0 * (3 * (n_train + n_test) * top + 2 * n_train * n_train)
    nbytes += pair_coordinates * CLOSED_FORM_BYTES_PER_PAIR_COORDINATE
    seconds = work_seconds(work)  # the engine's time model of the features and the linear algebra
    seconds += len(lengths) * methods * repeats * SECONDS_PER_REPEAT
    seconds += len(lengths) * methods * pair_coordinates * CLOSED_FORM_SECONDS_PER_PAIR_COORDINATE
    return Cost(nbytes, seconds)


def require_downstream_cost(what: str, cost: Cost) -> None:
    """Refuse up front (ParameterError, one line) a study over the memory or time budget in force, or, where no time
    budget is in force, over ``MAX_SECONDS`` (as ``rfviz gram`` refuses a Monte Carlo over its work budget).

    Parameters
    ----------
    what : str
        The study, for the message.
    cost : Cost
        From :func:`downstream_cost`.

    Examples
    --------
    >>> require_downstream_cost("a small study", downstream_cost(300, 100, 10, [64], 2, 10))
    """
    hint = "use fewer repeats, lengths, estimators or points"
    require_cost(what, cost, hint)
    if not cost.seconds <= MAX_SECONDS:
        raise ParameterError(f"{what} would take about {cost.seconds:.3g} s on one core, more than the limit of "
                             f"{MAX_SECONDS:.0f} s; {hint}")


def ridge_study(X_train: np.ndarray, y_train: np.ndarray, X_test: np.ndarray, y_test: np.ndarray, *,
                names: Sequence[str] = RIDGE_ESTIMATORS, lengths: Sequence[int] = (32, 64, 128), repeats: int = 10,
                scale: float = 0.3, alpha: float = 1.0, seed: int = 0, nystroem: bool = True,
                report: Callable[[float], None] | None = None) -> Study:
    """Test RMSE of ridge regression on random features against exact Gaussian kernel ridge.

    Parameters
    ----------
    X_train, y_train, X_test, y_test : np.ndarray
        The regression data (inputs already standardised as the user wants them).
    names : sequence of str
        Symmetric feature maps of the Gaussian kernel.
    lengths : sequence of int
        Feature-vector lengths compared (each map gets the largest m that fits).
    repeats : int
        Feature draws per (map, length).
    scale : float
        Inputs are multiplied by ``scale``: the kernel is e^{−scale²|x−y|²/2} (``gamma = scale²/2``).
    alpha : float
        Ridge penalty (the same for the exact model).
    seed : int
        Seed of the draws.
    nystroem : bool
        Include scikit-learn's Nystroem at each length (at most every training point: one row per distinct
        count).
    report : callable, optional
        ``report(fraction)`` with the share of the study done, after each method and length.

    Returns
    -------
    Study
        ``exact`` the exact model's test RMSE; ``rows`` the mean test RMSE ± stderr per (method, length), with
        the closed-form relative Gram error on the training pairs; ``spearman`` between the two over the
        random-feature rows.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(80, 3)); y = np.sin(X[:, 0])
    >>> s = ridge_study(X[:60], y[:60], X[60:], y[60:], names=["trig"], lengths=[32], repeats=3)
    >>> s.rows[0].method, s.rows[0].error > 0
    ('trig', True)
    """
    from sklearn.kernel_approximation import Nystroem
    from sklearn.kernel_ridge import KernelRidge
    from sklearn.linear_model import Ridge

    if repeats < 2:
        raise ParameterError(f"repeats must be an integer in [2, inf), got {repeats}")
    require_downstream_cost(f"the ridge study ({repeats} repeats)", downstream_cost(
        len(X_train), len(X_test), X_train.shape[1], lengths, len(names) + int(nystroem), repeats))
    Xs, Xt = X_train * scale, X_test * scale
    mean = float(np.mean(y_train))

    def rmse(pred: np.ndarray) -> float:
        return float(np.sqrt(np.mean((pred + mean - y_test) ** 2)))

    exact = rmse(KernelRidge(alpha=alpha, kernel="rbf", gamma=0.5).fit(Xs, y_train - mean).predict(Xt))
    rows: list[Row] = []
    for name in names:
        for length in lengths:
            m = m_for_length(name, "gaussian", length, Xs.shape[1], {})
            if m is None:
                continue
            est = make_estimator(name, {"m": m}, "gaussian")
            errs = []
            for r in range(repeats):
                phi, samples = _features(est, Xs, spawn_seed(seed, FEATURES_KEY, r))
                phi_t, _ = _features(est, Xt, 0, samples=samples)
                model = Ridge(alpha=alpha, fit_intercept=False).fit(phi, y_train - mean)
                errs.append(rmse(model.predict(phi_t)))
            k_err = math.sqrt(frobenius_sq_closed_form(est, Xs, Xs) / float(np.sum(kernel_matrix(est, Xs, Xs) ** 2)))
            rows.append(Row(name, int(phi.shape[1]), m, *_mean_se(errs), k_err))
            _report(report, len(rows) / (len(names) * len(lengths) + int(nystroem)))
        if nystroem and name == names[-1]:
            for components, extra in nystroem_lengths(lengths, len(Xs)).items():
                errs = []
                for r in range(repeats):
                    ny = Nystroem(kernel="rbf", gamma=0.5, n_components=components,
                                  random_state=_nystroem_state(seed, r))
                    phi = ny.fit_transform(Xs)
                    model = Ridge(alpha=alpha, fit_intercept=False).fit(phi, y_train - mean)
                    errs.append(rmse(model.predict(ny.transform(Xt))))
                rows.append(Row("nystroem", int(components), None, *_mean_se(errs), None, extra))
    _report(report, 1.0)
    rf = [r for r in rows if r.method != "nystroem"]
    return Study("kernel ridge regression (test RMSE)", rows, exact,
                 _spearman([r.kernel_error for r in rf], [abs(r.error - exact) for r in rf]))


def attention_study(Q: np.ndarray, K: np.ndarray, V: np.ndarray, *, names: Sequence[str] = ATTENTION_ESTIMATORS,
                    lengths: Sequence[int] = (32, 64, 128), repeats: int = 10, seed: int = 0,
                    nystroem: bool = True, report: Callable[[float], None] | None = None) -> Study:
    """Relative error ‖ÂV − AV‖_F/‖AV‖_F of softmax attention from random features (Performer's Â) and Nyström.

    Parameters
    ----------
    Q, K, V : np.ndarray
        Queries (N, d), keys (M, d), values (M, v).
    names : sequence of str
        Estimators of the softmax kernel (asymmetric maps use their query and key sides).
    lengths, repeats, seed, nystroem : as in :func:`ridge_study`.
    report : callable, optional
        ``report(fraction)`` with the share of the study done, as in :func:`ridge_study`.

    Returns
    -------
    Study
        ``exact`` is 0; rows hold the mean relative output error ± stderr and the closed-form relative Gram error on
        the query–key pairs; ``spearman`` between the two.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> Q, K, V = rng.normal(size=(16, 4)) * 0.4, rng.normal(size=(16, 4)) * 0.4, rng.normal(size=(16, 2))
    >>> s = attention_study(Q, K, V, names=["positive"], lengths=[32], repeats=3, nystroem=False)
    >>> 0 < s.rows[0].error < 1
    True
    """
    from sklearn.kernel_approximation import Nystroem

    require_downstream_cost(f"the attention study ({repeats} repeats)", downstream_cost(
        len(Q) + len(K), 0, Q.shape[1], lengths, len(names) + int(nystroem), repeats, pairs=len(Q) * len(K)))
    probe = make_estimator("positive", {"m": 1}, "softmax")
    kmat = kernel_matrix(probe, Q, K)
    out = (kmat / kmat.sum(1, keepdims=True)) @ V
    norm = float(np.linalg.norm(out))

    def err(khat: np.ndarray) -> float:
        return float(np.linalg.norm((khat / khat.sum(1, keepdims=True)) @ V - out)) / norm

    rows: list[Row] = []
    for name in names:
        for length in lengths:
            m = m_for_length(name, "softmax", length, Q.shape[1], {})
            if m is None:
                continue
            est = make_estimator(name, {"m": m}, "softmax")
            errs = []
            for r in range(repeats):
                pq, samples = _features(est, Q, spawn_seed(seed, FEATURES_KEY, r), "query")
                pk, _ = _features(est, K, 0, "key", samples)
                errs.append(err(pq @ pk.T))
            k_err = math.sqrt(frobenius_sq_closed_form(est, Q, K) / float(np.sum(kmat**2)))
            rows.append(Row(name, int(pq.shape[1]), m, *_mean_se(errs), k_err))
            _report(report, len(rows) / (len(names) * len(lengths) + int(nystroem)))
    if nystroem:
        both = np.vstack([Q, K])
        for components, extra in nystroem_lengths(lengths, len(both)).items():
            errs = []
            for r in range(repeats):
                ny = Nystroem(kernel=lambda a, b: float(np.exp(a @ b)), n_components=components,
                              random_state=_nystroem_state(seed, r)).fit(both)
                errs.append(err(ny.transform(Q) @ ny.transform(K).T))
            rows.append(Row("nystroem", int(components), None, *_mean_se(errs), None, extra))
    _report(report, 1.0)
    rf = [r for r in rows if r.method != "nystroem"]
    return Study("softmax attention (relative output error)", rows, 0.0,
                 _spearman([r.kernel_error for r in rf], [r.error for r in rf]))


def regression_sets(seed: int = 0) -> dict[str, tuple[np.ndarray, ...]]:
    """The ridge study's data: scikit-learn's bundled diabetes (standardised with the training split's statistics)
    and a synthetic set with a known function, y = sin(1.5 x₁) + x₂²/2 + 0.05·noise, x ~ N(0, I₃); 75 % / 25 %.

    Parameters
    ----------
    seed : int
        Seed of the split and of the synthetic draw.

    Returns
    -------
    dict
        name → (X_train, y_train, X_test, y_test).

    Examples
    --------
    >>> sorted(regression_sets())
    ['diabetes', 'synthetic']
    """
    from sklearn.datasets import load_diabetes
    from sklearn.model_selection import train_test_split

    X, y = load_diabetes(return_X_y=True)
    Xa, Xb, ya, yb = train_test_split(X, y, random_state=seed)
    mu, sd = Xa.mean(0), Xa.std(0)
    rng = np.random.default_rng(seed)
    S = rng.normal(size=(240, 3))
    t = np.sin(1.5 * S[:, 0]) + 0.5 * S[:, 1] ** 2 + 0.05 * rng.normal(size=len(S))
    return {"diabetes": ((Xa - mu) / sd, ya, (Xb - mu) / sd, yb), "synthetic": (S[:180], t[:180], S[180:], t[180:])}


NO_CLOSED_FORM = "— (Nyström: no closed form)"
"""What the page's table shows where a row has no closed-form kernel error (never a raw None)."""


def nystroem_lengths(lengths: Sequence[int], points: int) -> dict[int, dict[str, Any]]:
    """Nyström's column counts for the asked ``lengths``: at most one column per fitted point, so a length over
    ``points`` is capped there (stated in the row: ``asked_length`` and ``cap`` in its JSON, the page's table).

    Parameters
    ----------
    lengths : sequence of int
        The feature lengths asked for.
    points : int
        How many points Nyström is fitted on.

    Returns
    -------
    dict
        Column count → the row's extra fields (empty when not capped); one entry per distinct count.

    Examples
    --------
    >>> nystroem_lengths([64, 128, 256], 180)
    {64: {}, 128: {}, 180: {'asked_length': 256, 'cap': 'Nyström has at most one column per point (180 points)'}}
    """
    out: dict[int, dict[str, Any]] = {}
    for length in lengths:
        components = min(int(length), int(points))
        extra = {} if components == length else {
            "asked_length": int(length), "cap": f"Nyström has at most one column per point ({points} points)"}
        out.setdefault(components, extra)
    return out


def study_table(study: Study, titles: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """A study's rows for a page table (method titles, length, error ± standard error, the kernel error): every
    cell text or a number, never None (a Nyström row has no closed-form error; a capped length says so).

    Parameters
    ----------
    study : Study
    titles : mapping, optional
        Estimator name → the title shown.

    Returns
    -------
    list of dict

    Examples
    --------
    >>> row = Row("nystroem", 180, None, 1.0, 0.1, None, {"asked_length": 256, "cap": "at most 180"})
    >>> study_table(Study("t", [row], 0.0, None))[0]["closed-form rel. Gram error"]
    '— (Nyström: no closed form)'
    """
    return [{"method": "Nyström (scikit-learn)" if r.method == "nystroem" else (titles or {}).get(r.method, r.method),
             "length": (f"{r.length} ({r.extra['asked_length']} asked: {r.extra['cap']})" if "cap" in r.extra
                        else str(r.length)),
             "error": r.error, "± stderr": r.stderr,
             "closed-form rel. Gram error": NO_CLOSED_FORM if r.kernel_error is None else f"{r.kernel_error:.4g}"}
            for r in study.rows]


def attention_values(n_keys: int, seed: int = 0) -> np.ndarray:
    """The attention study's values V: ``VALUE_DIM`` standard normal columns per key, drawn from ``seed``.

    Parameters
    ----------
    n_keys : int
        Number of keys (rows of V).
    seed : int
        Seed of the draw.

    Returns
    -------
    np.ndarray
        Shape (n_keys, VALUE_DIM).

    Examples
    --------
    >>> attention_values(5).shape
    (5, 4)
    """
    return np.random.default_rng(seed).normal(size=(n_keys, VALUE_DIM))


PAGE_STAGES = ("fitting ridge regression on diabetes", "fitting ridge regression on the synthetic set",
               "attention on these queries and keys")
"""The stages of ``page_studies``, in order: its progress runs through them in equal shares."""


def _report(report: Callable[[float], None] | None, fraction: float) -> None:
    if report is not None:
        report(min(1.0, fraction))


def page_studies(queries: np.ndarray, keys: np.ndarray, repeats: int = 8, seed: int = 0,
                 report: Callable[[float], None] | None = None) -> dict[str, Study]:
    """The Your-data page's downstream panel: ridge on diabetes and on the synthetic set, attention on the page's
    queries and keys (values drawn once from ``seed``), lengths 32, 64, 128.

    Parameters
    ----------
    queries, keys : np.ndarray
        The page's data (N, d) and (M, d).
    repeats, seed : feature draws and seed.
    report : callable, optional
        ``report(fraction)``: the progress, through the ``PAGE_STAGES`` in equal shares.

    Returns
    -------
    dict of Study
    """
    share = 1.0 / len(PAGE_STAGES)

    def stage(i: int) -> Callable[[float], None]:
        return lambda f: _report(report, share * (i + f))

    out = {f"ridge · {name}": ridge_study(*parts, names=PAGE_RIDGE_ESTIMATORS, lengths=PAGE_LENGTHS, repeats=repeats,
                                          scale=REGRESSION_SETTINGS[name][0], alpha=REGRESSION_SETTINGS[name][1],
                                          seed=seed, report=stage(i))
           for i, (name, parts) in enumerate(regression_sets(seed).items())}
    out["attention · these pairs"] = attention_study(queries, keys, attention_values(len(keys), seed),
                                                     lengths=PAGE_LENGTHS, repeats=repeats, seed=seed,
                                                     report=stage(len(PAGE_STAGES) - 1))
    return out


# ------------------------------------------------------------------------- one estimator's task errors per draw
def attention_errors(est: Any, Q: np.ndarray, K: np.ndarray, V: np.ndarray, repeats: int, seed: int = 0
                     ) -> np.ndarray:
    """‖ÂV − AV‖_F/‖AV‖_F of one (tuned) estimator for each of ``repeats`` feature draws (draw r seeded by
    ``spawn_seed(seed, FEATURES_KEY, r)`` as in :func:`attention_study`; asymmetric maps with their two sides).

    Parameters
    ----------
    est : Estimator
        An estimator of the softmax kernel with a feature map.
    Q, K, V : np.ndarray
        Queries (N, d), keys (M, d), values (M, v).
    repeats : int
        Feature draws.
    seed : int
        Seed of the draws.

    Returns
    -------
    np.ndarray
        One relative output error per draw (inf where a draw's Â overflows or a row sums to 0).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> Q, K, V = rng.normal(size=(8, 3)) * 0.3, rng.normal(size=(8, 3)) * 0.3, rng.normal(size=(8, 2))
    >>> errs = attention_errors(make_estimator("positive", {"m": 64}, "softmax"), Q, K, V, 3)
    >>> errs.shape, bool(np.all(errs < 1))
    ((3,), True)
    """
    require_cost(f"the attention error ({repeats} draws)", downstream_cost(
        len(Q) + len(K), 0, Q.shape[1], [2 * int(est.params.get("m", 1))], 1, repeats, pairs=len(Q) * len(K)),
        "use fewer repeats or points")
    kmat = kernel_matrix(make_estimator("positive", {"m": 1}, "softmax"), Q, K)
    out = (kmat / kmat.sum(1, keepdims=True)) @ V
    norm = float(np.linalg.norm(out))
    errs = []
    for r in range(repeats):
        pq, samples = _features(est, Q, spawn_seed(seed, FEATURES_KEY, r), "query")
        pk, _ = _features(est, K, 0, "key", samples)
        khat = pq @ pk.T
        with np.errstate(all="ignore"):
            value = float(np.linalg.norm((khat / khat.sum(1, keepdims=True)) @ V - out)) / norm
        errs.append(value if math.isfinite(value) else math.inf)
    return np.asarray(errs)


def ridge_gaps(est: Any, X_train: np.ndarray, y_train: np.ndarray, X_test: np.ndarray, y_test: np.ndarray,
               repeats: int, alpha: float = 1.0, seed: int = 0) -> tuple[np.ndarray, float]:
    """``|RMSE_rf − RMSE_exact|/RMSE_exact`` per feature draw: ridge on one (symmetric, tuned) Gaussian-kernel map
    against exact kernel ridge (scikit-learn's ``KernelRidge``, same α, targets centred on the training mean), as
    :func:`ridge_study` fits them (inputs as given: scale applied by the caller's preprocessing).

    Parameters
    ----------
    est : Estimator
        A symmetric feature map of the Gaussian kernel e^{−|x−y|²/2}.
    X_train, y_train, X_test, y_test : np.ndarray
        The regression data.
    repeats : int
        Feature draws.
    alpha : float
        Ridge penalty of both models.
    seed : int
        Seed of the draws.

    Returns
    -------
    (np.ndarray, float)
        The relative test-RMSE gap per draw, and the exact model's test RMSE.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(60, 3)) * 0.4; y = np.sin(X[:, 0])
    >>> gaps, exact = ridge_gaps(make_estimator("trig", {"m": 64}, "gaussian"), X[:40], y[:40], X[40:], y[40:], 3)
    >>> gaps.shape, exact > 0
    ((3,), True)
    """
    from sklearn.kernel_ridge import KernelRidge
    from sklearn.linear_model import Ridge

    require_cost(f"the ridge gap ({repeats} draws)", downstream_cost(
        len(X_train), len(X_test), X_train.shape[1], [2 * int(est.params.get("m", 1))], 1, repeats),
        "use fewer repeats or points")
    mean = float(np.mean(y_train))

    def rmse(pred: np.ndarray) -> float:
        return float(np.sqrt(np.mean((pred + mean - y_test) ** 2)))

    exact = rmse(KernelRidge(alpha=alpha, kernel="rbf", gamma=0.5).fit(X_train, y_train - mean).predict(X_test))
    gaps = []
    for r in range(repeats):
        phi, samples = _features(est, X_train, spawn_seed(seed, FEATURES_KEY, r))
        phi_t, _ = _features(est, X_test, 0, samples=samples)
        with np.errstate(all="ignore"):
            ok = np.all(np.isfinite(phi)) and np.all(np.isfinite(phi_t))
            value = (abs(rmse(Ridge(alpha=alpha, fit_intercept=False).fit(phi, y_train - mean).predict(phi_t))
                         - exact) / exact) if ok else math.inf
        gaps.append(value)
    return np.asarray(gaps), exact
