"""z, p and the family-wise tests (Holm, Bonferroni), the agreement word of a point or a family, and the verdict
of ``rfviz mse`` on one sampled point (``sampled_verdict``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .rules import FWER_LEVEL, PRACTICAL_TRIALS, exact_at_roundoff, precision_loss
from .words import AGREES, DISAGREES, EXACT, PRECISION_LOSS, UNRELIABLE, practical_count, trials_needed_text


def z_against_closed_form(sampled: np.ndarray | float, closed: np.ndarray | float, stderr: np.ndarray | float,
                          stderr_theory: np.ndarray | float | None = None) -> np.ndarray:
    """(sampled − closed) / SE with SE the larger of the sampled ``stderr`` and the predicted ``stderr_theory``
    (NaN where the prediction is unknown). Same units for all four; ±inf where SE is 0 and they differ.

    Examples
    --------
    >>> z_against_closed_form(1.1, 1.0, 0.01, 0.05).round(6).tolist()
    2.0
    """
    se = np.asarray(stderr, dtype=float)
    if stderr_theory is not None:
        theory = np.asarray(stderr_theory, dtype=float)
        se = np.where(np.isnan(theory), se, np.fmax(se, theory))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return (np.asarray(sampled, dtype=float) - np.asarray(closed, dtype=float)) / se


def sample_skewness(values: np.ndarray) -> float:
    """The values' sample skewness m₃/m₂^{3/2} (0 for fewer than 3 values or none that differ): the γ of
    ``skew_corrected_z``.

    Parameters
    ----------
    values : numpy.ndarray
        The values (any shape).

    Returns
    -------
    float

    Examples
    --------
    >>> round(sample_skewness(np.array([0.0, 0.0, 0.0, 1.0])), 4)
    1.1547
    """
    v = np.asarray(values, dtype=float).ravel()
    if v.size < 3:
        return 0.0
    dev = v - np.mean(v)
    m2 = float(np.mean(dev**2))
    return float(np.mean(dev**3)) / m2**1.5 if m2 > 0 else 0.0


def skew_corrected_z(z: np.ndarray | float, skewness: np.ndarray | float, count: int) -> np.ndarray:
    """Hall's transformation of a Studentized mean (P. Hall, J. R. Statist. Soc. B 54 (1992) 221–228), which removes
    the skewness of its distribution:
    T = z + γz²/(3√n) + γ²z³/(27n) + γ/(6√n), for n values of sample skewness γ (T = z where γ is 0 or NaN).

    A mean of squared errors is right-skewed, and its standard error is estimated from the same values, so a sample
    that missed the rare large values has both a low mean and a low standard error: z = (mean − μ)/SE has a heavy
    left tail. Measured on the wine Gram error of complex_exponential (skewness 2.6, 400 repeats, 10⁵ resamples):
    P(z < −2.94) = 0.54 % where the normal says 0.16 %; after the transformation 0.18 % (and 0.17 % above +2.94).
    T is increasing in z (dT/dz = (1 + γz/(3√n))² ≥ 0), so it only moves a z, never reorders two of one sample.

    Parameters
    ----------
    z : float or array
        (mean − μ)/(s/√n), with s the values' standard deviation.
    skewness : float or array
        The values' sample skewness (scipy.stats.skew).
    count : int
        n, the number of values.

    Returns
    -------
    numpy.ndarray
        T, compared with the normal quantiles as z would be.

    Examples
    --------
    >>> round(float(skew_corrected_z(-2.94, 2.6, 400)), 2)
    -2.56
    >>> float(skew_corrected_z(1.5, 0.0, 400)), float(skew_corrected_z(-np.inf, 2.0, 400))
    (1.5, -inf)
    """
    zz = np.asarray(z, dtype=float)
    g = np.nan_to_num(np.asarray(skewness, dtype=float), nan=0.0, posinf=0.0, neginf=0.0)
    root = math.sqrt(max(int(count), 1))
    with np.errstate(over="ignore", invalid="ignore"):
        t = zz + g * zz**2 / (3 * root) + g**2 * zz**3 / (27 * root**2) + g / (6 * root)
    return np.where(np.isfinite(zz), t, zz)  # ±inf (a zero SE) stays as it was, never NaN


def two_sided_p(z: np.ndarray | float) -> np.ndarray:
    """Two-sided normal p-values 2·Φ(−|z|) (NaN stays NaN).

    Examples
    --------
    >>> float(two_sided_p(0.0))
    1.0
    """
    from scipy.special import ndtr

    return 2.0 * ndtr(-np.abs(np.asarray(z, dtype=float)))


def holm(pvalues: np.ndarray, alpha: float = FWER_LEVEL) -> np.ndarray:
    """Holm's step-down rejections at family-wise level ``alpha`` (Holm 1979): sort the m p-values, reject
    p₍ᵢ₎ while p₍ᵢ₎ ≤ alpha/(m − i + 1). NaN p-values are not tested (and do not count in m).

    Examples
    --------
    >>> holm(np.array([0.001, 0.2, 0.004, np.nan]), alpha=0.01).tolist()
    [True, False, True, False]
    """
    p = np.asarray(pvalues, dtype=float)
    flat = p.ravel()
    tested = np.flatnonzero(np.isfinite(flat))
    reject = np.zeros(flat.shape, bool)
    order = tested[np.argsort(flat[tested], kind="stable")]
    m = len(order)
    for rank, idx in enumerate(order):
        if flat[idx] > alpha / (m - rank):
            break
        reject[idx] = True
    return reject.reshape(p.shape)


def family_disagreements(z: np.ndarray, reliable: np.ndarray | None = None, exact: np.ndarray | None = None,
                         alpha: float = FWER_LEVEL) -> np.ndarray:
    """Points where the closed form and the sampled MSE disagree, family-wise error held at ``alpha`` over all the
    points given: Holm over the two-sided p-values of the reliable, non-exact points with a finite z.

    Examples
    --------
    >>> family_disagreements(np.array([0.5, 6.0, -4.0, 9.0]), np.array([True, True, True, False])).tolist()
    [False, True, True, False]
    """
    z = np.asarray(z, dtype=float)
    ok = _tested(z, reliable, exact)
    p = np.where(ok, two_sided_p(np.where(ok, z, 0.0)), np.nan)
    return holm(p, alpha)


def bonferroni_disagrees(z: float | None, reliable: bool, family_size: int, alpha: float = FWER_LEVEL,
                         exact: bool = False) -> bool:
    """One point of a streamed family (a sweep writes rows as they finish, before the family is complete):
    disagrees when it is reliable, not exact, and p ≤ alpha/family_size (family-wise error ≤ alpha, like Holm's
    first step).

    Examples
    --------
    >>> bonferroni_disagrees(4.0, True, 10), bonferroni_disagrees(4.0, True, 10, exact=True)
    (True, False)
    """
    if exact or z is None or not math.isfinite(z) or not reliable:
        return False
    return bool(two_sided_p(z) <= alpha / max(int(family_size), 1))


def _tested(z: np.ndarray, reliable: np.ndarray | None, exact: np.ndarray | None) -> np.ndarray:
    ok = np.isfinite(z)
    if reliable is not None:
        ok &= np.asarray(reliable, bool)
    if exact is not None:
        ok &= ~np.asarray(exact, bool)
    return ok


def family_agreement(z: Sequence[float | None] | np.ndarray, reliable: Sequence[bool | None] | np.ndarray,
                     exact: Sequence[bool] | np.ndarray | None = None,
                     alpha: float = FWER_LEVEL) -> list[str | None]:
    """The agreement word of every point of one family (a table, a grid): ``"exact"`` where ``exact``,
    ``"unreliable"`` where ``reliable`` is False, ``None`` where z is missing or not finite, else ``"disagrees"``
    where Holm at ``alpha`` over the tested points rejects and ``"agrees"`` otherwise.

    Examples
    --------
    >>> family_agreement([0.5, 9.0, None, 30.0, 1e9], [True, True, True, False, True], [0, 0, 0, 0, 1])
    ['agrees', 'disagrees', None, 'unreliable', 'exact']
    >>> family_agreement(np.array([30.0]), np.array([False]))  # numpy bools read as bools
    ['unreliable']
    """
    zz = np.array([np.nan if v is None else float(v) for v in z], dtype=float)
    rel = np.array([r is None or bool(r) for r in reliable], bool)  # None (not sampled) is not "unreliable"
    ex = np.zeros(zz.shape, bool) if exact is None else np.asarray(exact, bool).reshape(zz.shape)
    bad = family_disagreements(zz, rel, ex, alpha)
    words: list[str | None] = []
    for i in range(len(zz)):
        if ex[i]:
            words.append(EXACT)
        elif not rel[i]:
            words.append(UNRELIABLE)
        elif not np.isfinite(zz[i]):
            words.append(None)
        else:
            words.append(DISAGREES if bad[i] else AGREES)
    return words


def agreement(z: float | None, reliable: bool, exact: bool = False, alpha: float = FWER_LEVEL) -> str | None:
    """The agreement word of a single point (a family of one): see ``family_agreement``.

    Examples
    --------
    >>> agreement(2.0, True), agreement(3.0, True), agreement(30.0, False), agreement(1e9, True, exact=True)
    ('agrees', 'disagrees', 'unreliable', 'exact')
    """
    return family_agreement([z], [reliable], [exact], alpha)[0]


def _num(v: float) -> float | None:
    return float(v) if math.isfinite(float(v)) else None


def sampled_verdict(res: Any, log_mse: float | None, n_pairs: int, floor: float) -> dict[str, Any]:
    """The ``mc`` object of ``rfviz mse --json`` from an engine result ``res`` (``rfviz.engine.MCResult``, read by
    attribute) over ``n_pairs`` pairs (an averaging embedding: the mean MSE over the pairs) and the closed-form
    ``log_mse`` (None: none), with every verdict decided by the rules of this module:

    * exact at round-off: closed form and sample both ≤ ``floor`` relative to K² → agreement ``"exact"``, no z;
    * a sample at round-off where the closed form is above it is unreliable (``PRECISION_LOSS``);
    * reliable: the engine's per-pair verdict (theory where fourth moments exist, the sample otherwise);
    * z: ``z_against_closed_form`` (one pair: the larger of the sampled and the predicted standard error);
    * agreement: a family of one at ``FWER_LEVEL`` (``agreement``); ``trials_needed`` is null where it is not a
      practical count, and the warning then says so in words (``trials_needed_text``).

    Examples
    --------
    >>> import rfviz
    >>> rfviz.mse("trig", r=1.0, theta=1.0, d=4, m=10, trials=2000, seed=0).mc.agreement
    'agrees'
    """
    if n_pairs > 1:
        return _pairs_verdict(res, log_mse, n_pairs, floor)
    rel, scale = float(res.rel_mse[0]), float(res.log_scale[0])
    closed_rel = math.nan if log_mse is None else math.exp(min(log_mse - 2.0 * scale, 700.0))
    exact = bool(exact_at_roundoff(closed_rel, rel, floor)) and log_mse is not None
    reliable, warning = bool(res.reliable[0]), res.warning[0]
    if log_mse is not None and precision_loss(closed_rel, rel, floor).item():
        reliable, warning = False, PRECISION_LOSS
    needed = float(res.trials_needed[0])
    if not reliable and needed > PRACTICAL_TRIALS and "practical" not in str(warning) and "no number" not in str(
            warning):
        warning = f"{warning}; {trials_needed_text(needed, res.trials)}"
    bias_z = float(res.bias_z[0])
    out = {"mse": float(res.mse[0]), "stderr": float(res.mse_stderr[0]),
           "log10_mse": float(res.log10_mse[0]) if rel > 0 else None, "mean": float(res.mean[0]),
           "bias_z": _num(bias_z), "trials": res.trials, "device": res.device, "reliable": reliable,
           "warning": warning, "trials_needed": practical_count(needed), "tail_index": _num(res.tail_index[0])}
    if log_mse is not None:
        z = None if exact else _num(float(res.z_against(np.array([log_mse]))[0]))
        out["z_vs_closed_form"] = z
        out["agreement"] = agreement(z, reliable, exact)
    return out


def _pairs_verdict(res: Any, log_mse: float | None, n_pairs: int, floor: float) -> dict[str, Any]:
    """``sampled_verdict`` over a stack of pairs: the mean MSE, its standard error bounded by Σ SE/P (the pairs share
    every draw of the features, so their sampled MSEs are correlated: Var(Σ X_p) ≤ (Σ sd_p)² by Minkowski, whatever
    the correlation; √(Σ SE²)/P, right only for independent pairs, made |z| several times too large), reliable only if
    every pair is, exact only if every pair's sample and the mean closed form are at round-off."""
    mse, stderr = float(np.mean(res.mse)), float(np.sum(res.mse_stderr) / n_pairs)
    warnings = [str(w) for w in np.ravel(res.warning) if w is not None]
    out: dict[str, Any] = {
        "mse": mse, "stderr": stderr, "log10_mse": math.log10(mse) if mse > 0 else None,
        "mean": float(np.mean(res.mean)), "trials": res.trials * n_pairs, "pairs": n_pairs, "device": res.device,
        "reliable": res.all_reliable,
        "warning": f"{len(warnings)} of {n_pairs} pairs unreliable: {warnings[0]}" if warnings else None}
    if log_mse is None:
        return out
    scale = float(np.max(res.log_scale))
    exact = bool(exact_at_roundoff(math.exp(min(log_mse - 2.0 * scale, 700.0)), float(np.max(res.rel_mse)), floor))
    z = None
    if not exact and stderr > 0 and log_mse < 709:
        z = _num(float(z_against_closed_form(mse, math.exp(log_mse), stderr)))
    if z is not None or exact:
        out["z_vs_closed_form"] = z
        out["agreement"] = agreement(z, res.all_reliable, exact)
    return out
