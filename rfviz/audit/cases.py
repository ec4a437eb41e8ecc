"""The audits: which library's feature map, in which setting, against which of rfviz's closed forms
(``AUDITS``), and ``run_audit``, which runs each through the lab in a plugin process
(``rfviz.plugin_process.check_feature_map_isolated``) and says, per case, whether the map agrees with rfviz's
closed form for the same mechanism or how large its measured bias is."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import importlib.util
import os
import resource
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..params import ParameterError

LIBRARIES: tuple[str, ...] = ("scikit-learn", "gpytorch", "performer-pytorch")
"""The audited libraries (``rfviz audit [LIBRARY ...]``), by their pip names; the extra ``rfviz[audit]`` pins
them."""
AUDIT_WORKERS = 2
"""Cases run at once (each in its own plugin process): the 2 cores of the reference machine."""


@dataclass(frozen=True)
class AuditCase:
    """One audited feature map.

    Parameters
    ----------
    library : the pip name (one of ``LIBRARIES``).
    module : its import name (to tell whether it is installed).
    name : the case's name in the report.
    setting : the library call, in words.
    features : the adapter's spec ``rfviz.audit.<module>:<function>`` (``rfviz check --features`` takes it).
    kernel : softmax or gaussian.
    mse : the spec of rfviz's closed form for the same mechanism.
    mechanism : that closed form, in words.

    Examples
    --------
    >>> AUDITS[0].library
    'scikit-learn'
    """

    library: str
    module: str
    name: str
    setting: str
    features: str
    kernel: str
    mse: str
    mechanism: str

    def command(self, seed: int = 0, trials: int | None = None) -> str:
        """The ``rfviz check`` command that reproduces this case (its seed and trials where not the defaults).

        Parameters
        ----------
        seed : int
            The lab's seed (shown when not 0).
        trials : int, optional
            The lab's trials (shown when given).

        Returns
        -------
        str
        """
        return (f"rfviz check --features {self.features} --kernel {self.kernel} --mse {self.mse}"
                + (f" --seed {seed}" if seed else "") + (f" --trials {trials}" if trials else ""))


AUDITS: tuple[AuditCase, ...] = (
    AuditCase("scikit-learn", "sklearn", "RBFSampler",
              "RBFSampler(gamma=0.5, n_components=64, random_state=<drawn>).fit(X).transform(X)",
              "rfviz.audit.sklearn_maps:rbf_sampler", "gaussian", "rfviz.audit.sklearn_maps:rbf_sampler_mse",
              "trig_phase, m = 64, Gaussian kernel"),
    AuditCase("gpytorch", "gpytorch", "RFFKernel",
              "RFFKernel(num_samples=32) in float64, lengthscale 1, _featurize(X, normalize=True)",
              "rfviz.audit.gpytorch_maps:rff_kernel", "gaussian", "rfviz.audit.gpytorch_maps:rff_kernel_mse",
              "trig, m = 32 (64 features), Gaussian kernel"),
    AuditCase("performer-pytorch", "performer_pytorch", "FAVOR+ (gaussian_orthogonal_random_matrix)",
              "W = gaussian_orthogonal_random_matrix(32, d, scaling=0); φ(x) = exp(Wx − |x|²/2)/√32",
              "rfviz.audit.performer_maps:favor_plus", "softmax", "rfviz.audit.performer_maps:favor_plus_mse",
              "positive, m = 32, orthogonal coupling (ORF), softmax kernel"),
    AuditCase("performer-pytorch", "performer_pytorch", "FAVOR+, sign-fixed twin (rfviz's adapter)",
              "the same with Q's columns multiplied by sign(diag R) (Haar-distributed blocks)",
              "rfviz.audit.performer_maps:favor_plus_sign_fixed", "softmax",
              "rfviz.audit.performer_maps:favor_plus_mse",
              "positive, m = 32, orthogonal coupling (ORF), softmax kernel"),
)


def library_version(library: str) -> str | None:
    """The installed version of a pip distribution, or None when it is not installed.

    Parameters
    ----------
    library : str
        The pip name.

    Returns
    -------
    str or None

    Examples
    --------
    >>> library_version("numpy") is not None
    True
    """
    try:
        return importlib.metadata.version(library)
    except importlib.metadata.PackageNotFoundError:
        return None


def select(libraries: Sequence[str] | None) -> list[AuditCase]:
    """The cases of the named libraries (all when None or empty); ParameterError naming the valid ones.

    Parameters
    ----------
    libraries : sequence of str, optional
        Some of ``LIBRARIES``.

    Returns
    -------
    list of AuditCase
    """
    names = list(libraries or LIBRARIES)
    unknown = [n for n in names if n not in LIBRARIES]
    if unknown:
        raise ParameterError(f"library must be one of {', '.join(LIBRARIES)}, got {unknown[0][:40]!r}")
    return [c for c in AUDITS if c.library in names]


def finding(report: Any) -> dict[str, Any]:
    """What one lab report says about an audited map: the verdict, the bias z range, the closed-form z range and
    agreement, direction dependence, in numbers and one sentence.

    Parameters
    ----------
    report : rfviz.lab.LabReport
        The lab's report on the case.

    Returns
    -------
    dict
        verdict, exit_code, trials, d, seed, the bias and closed-form z ranges, closed_form_agrees,
        closed_form_points, direction_dependent, summary and sentence.
    """
    z = [np.asarray(report.bias_z, float)[np.asarray(report.bias_tested, bool)]]
    z.append(np.array([p["z"] for p in report.extra_pairs if p["tested"]], float))
    bias_z = np.concatenate(z)
    cf = np.asarray(report.closed_form_z if report.closed_form_z is not None else [], float).ravel()
    cf_tested = (np.asarray(report.closed_form_tested, bool).ravel() if report.closed_form_tested is not None
                 else np.zeros(0, bool))
    cf_z = np.concatenate([cf[cf_tested], np.array([p["cf_z"] for p in report.extra_pairs
                                                     if p.get("cf_tested")], float)])
    out = {"verdict": report.verdict, "exit_code": report.exit_code, "trials": report.trials, "d": report.d,
           "seed": report.seed, "bias_z_min": _num(bias_z.min() if bias_z.size else None),
           "bias_z_max": _num(bias_z.max() if bias_z.size else None),
           "closed_form_agrees": report.closed_form_agrees,
           "closed_form_z_min": _num(cf_z.min() if cf_z.size else None),
           "closed_form_z_max": _num(cf_z.max() if cf_z.size else None),
           "closed_form_points": int(cf_z.size), "direction_dependent": report.direction_dependent,
           "summary": report.summary()}
    out["sentence"] = _sentence(out)
    return out


def _num(v: Any) -> float | None:
    return None if v is None or not np.isfinite(v) else round(float(v), 2)


def _sentence(f: dict[str, Any]) -> str:
    cf = ("" if f["closed_form_points"] == 0 else
          f"; closed-form MSE z from {f['closed_form_z_min']:+.2f} to {f['closed_form_z_max']:+.2f} at "
          f"{f['closed_form_points']} tested points")
    if f["verdict"] == "bias detected":
        where = ", direction-dependent" if f["direction_dependent"] else ""
        return f"biased{where}: bias z from {f['bias_z_min']:+.1f} to {f['bias_z_max']:+.1f}{cf}"
    if f["closed_form_agrees"]:
        worst = max(abs(f["bias_z_min"]), abs(f["bias_z_max"]))
        return f"agrees with rfviz's closed form, no bias found (bias |z| ≤ {worst:.2f}){cf}"
    if f["verdict"] == "unbiased":
        return f"no bias found; rfviz's closed form not tested at enough points at these trials{cf}"
    return f"{f['verdict']}{cf}"


def _run_case(case: AuditCase, seed: int, settings: dict[str, Any], threads: int) -> dict[str, Any]:
    from ..plugin_process import PluginLimits, check_feature_map_isolated

    row: dict[str, Any] = {**asdict(case), "version": library_version(case.library),
                           "command": case.command(seed, settings.get("trials"))}
    if row["version"] is None or importlib.util.find_spec(case.module) is None:
        return {**row, "status": "skipped", "reason": f"{case.library} is not installed (pip install rfviz[audit])"}
    start = time.monotonic()
    try:
        limits = dataclasses.replace(PluginLimits.from_env(), threads=threads)
        report = check_feature_map_isolated(case.features, case.kernel, [], mse=case.mse, seed=seed, limits=limits,
                                            **settings)
    except ParameterError as exc:
        return {**row, "status": "failed", "reason": str(exc), "seconds": round(time.monotonic() - start, 1)}
    return {**row, "status": "ran", **finding(report), "seconds": round(time.monotonic() - start, 1),
            "report": report}


def run_audit(libraries: Sequence[str] | None = None, *, seed: int = 0, workers: int = AUDIT_WORKERS,
              progress: Callable[[str], None] | None = None, **settings: Any) -> dict[str, Any]:
    """Run the audits of ``libraries`` (default all) through the lab, each case in its own plugin process,
    ``workers`` at a time.

    Parameters
    ----------
    libraries : sequence of str, optional
        Some of ``LIBRARIES``.
    seed : int
        The lab's seed for every case.
    workers : int
        Cases run at once.
    progress : callable, optional
        Told each case's name as it finishes.
    **settings
        The lab's other settings (``trials``, ``d``, …; default the lab's defaults).

    Returns
    -------
    dict
        ``cases`` (one row per case: library, version, setting, mechanism, command, status, verdict, z ranges,
        sentence, seconds, and the ``report``), ``wall_seconds`` and ``cpu_seconds`` (this process and its
        finished children).

    Examples
    --------
    >>> run_audit(["scikit-learn"])["cases"][0]["verdict"]  # doctest: +SKIP
    'unbiased'
    """
    cases = select(libraries)
    threads = max(1, (os.cpu_count() or 1) // max(1, int(workers)))  # each case its share of the cores
    cpu0 = _cpu_seconds()
    start = time.monotonic()

    def one(case: AuditCase) -> dict[str, Any]:
        row = _run_case(case, seed, settings, threads)
        if progress is not None:
            progress(case.name)
        return row

    with ThreadPoolExecutor(max_workers=max(1, int(workers))) as pool:
        rows = list(pool.map(one, cases))
    return {"cases": rows, "seed": seed, "workers": workers, "wall_seconds": round(time.monotonic() - start, 1),
            "cpu_seconds": round(_cpu_seconds() - cpu0, 1)}


def _cpu_seconds() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def audit_json(result: dict[str, Any]) -> dict[str, Any]:
    """``run_audit``'s result without the full lab reports (what ``rfviz audit --json`` prints; each row's
    ``summary`` is its report's one sentence, and its ``command`` reproduces the full report).

    Parameters
    ----------
    result : dict
        ``run_audit``'s result.

    Returns
    -------
    dict

    Examples
    --------
    >>> audit_json({"cases": [{"name": "x", "report": object()}], "seed": 0})
    {'cases': [{'name': 'x'}], 'seed': 0}
    """
    return {**result, "cases": [{k: v for k, v in row.items() if k != "report"} for row in result["cases"]]}


def export_audit_html(result: dict[str, Any], out: str) -> str:
    """Write the audit's figure (``rfviz.figures.audit.audit_figure``) as a self-contained HTML file, headless, as
    the gallery exports its figures (``figure_html``, written atomically).

    Parameters
    ----------
    result : ``run_audit``'s result.
    out : the path, ending in .html.

    Returns
    -------
    str
        The path written.

    Examples
    --------
    >>> export_audit_html(run_audit(), "audit.html")  # doctest: +SKIP
    'audit.html'
    """
    from ..figures.audit import audit_figure
    from ..figures.export import figure_html
    from ..fileio import atomic_write

    if not str(out).lower().endswith((".html", ".htm")):
        raise ParameterError(f"--html must end in .html, got {str(out)[:80]!r}")
    rows = audit_json(result)["cases"]
    params = {"seed": result.get("seed"), "cases": len(rows)}
    atomic_write(out, figure_html(audit_figure(rows), title="rfviz audit", params=params))
    return str(out)


def audit_text(result: dict[str, Any]) -> str:
    """The audit in words (what ``rfviz audit`` prints): per case the library and version, the call, rfviz's
    closed form, the finding and the command that reproduces it; then the wall and CPU time.

    Parameters
    ----------
    result : dict
        ``run_audit``'s result.

    Returns
    -------
    str

    Examples
    --------
    >>> print(audit_text({"cases": [], "wall_seconds": 1.0, "cpu_seconds": 0.5, "seed": 0}))
    rfviz audit, seed 0: 0 case(s) in 1 s (CPU 0.5 s)
    """
    lines = [f"rfviz audit, seed {result.get('seed', 0)}: {len(result['cases'])} case(s) in "
             f"{result['wall_seconds']:g} s (CPU {result['cpu_seconds']:g} s)"]
    for row in result["cases"]:
        version = row.get("version") or "not installed"
        lines += ["", f"{row['library']} {version}: {row['name']}", f"  call        {row['setting']}",
                  f"  vs          rfviz's closed form: {row['mechanism']}"]
        if row.get("status") != "ran":
            lines.append(f"  {row.get('status', '?'):<11} {row.get('reason', '')}")
            continue
        lines += [f"  finding     {row['verdict']}: {row['sentence']} ({row['trials']} trials, d = {row['d']}, "
                  f"{row['seconds']:g} s)", f"  reproduce   {row['command']}"]
    return "\n".join(lines)
