"""``rfviz.audit`` (and ``rfviz audit``): the random features of scikit-learn, GPyTorch and performer-pytorch run
through the estimator lab against rfviz's closed forms (``rfviz.audit.run_audit``: each case in its own plugin
process), as a typed result."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from ..audit import LIBRARIES, audit_json, audit_text, export_audit_html, run_audit
from ..params import CHECK_TRIALS_PARAM, SEED_PARAM, ParameterError
from .results import Result
from .validation import api_function


@dataclasses.dataclass(frozen=True)
class AuditCaseResult(Result):
    """One audited feature map: the library and its version, the call, rfviz's closed form, what the lab found.

    Parameters
    ----------
    library, version, name, setting, mechanism, command : str
        The pip name, its installed version (None: not installed), the case, the library call, rfviz's closed form
        for the same mechanism, and the ``rfviz check`` command that reproduces it.
    status : str
        ``ran``, ``skipped`` (library not installed) or ``failed``.
    verdict : str or None
        The lab's verdict (``unbiased``, ``bias detected``, …) when it ran.
    finding : dict
        The numbers: bias and closed-form z ranges, agreement, direction dependence, trials, seconds, the sentence,
        or the reason it did not run.
    report : rfviz.lab.LabReport or None
        The lab's full report (not in ``to_dict()``).
    absent : frozenset of str
        Fields left out of ``to_dict()`` (``rfviz.api.results.Result``).

    Examples
    --------
    >>> AuditCaseResult("x", None, "m", "s", "c", "cmd", "skipped", None, {"reason": "not installed"}).status
    'skipped'
    """

    library: str
    version: str | None
    name: str
    setting: str
    mechanism: str
    command: str
    status: str
    verdict: str | None
    finding: dict[str, Any]
    report: Any = dataclasses.field(default=None, repr=False, compare=False, metadata={"json": False})


@dataclasses.dataclass(frozen=True)
class AuditResult(Result):
    """What ``rfviz audit`` found: one row per case, the seed, and the wall and CPU time of the run.

    Parameters
    ----------
    cases : list of AuditCaseResult
        One row per audited feature map.
    seed : int
        The lab's seed.
    wall_seconds, cpu_seconds : float
        The run's wall time, and the CPU time of this process and its finished plugin processes.
    raw : dict
        ``run_audit``'s result (``to_text()``, ``to_html()`` read it; not in ``to_dict()``).
    absent : frozenset of str
        Fields left out of ``to_dict()`` (``rfviz.api.results.Result``).

    Examples
    --------
    >>> AuditResult([], 0, 1.0, 0.5, {}).to_dict()["cases"]
    []
    """

    cases: list[AuditCaseResult]
    seed: int
    wall_seconds: float
    cpu_seconds: float
    raw: dict[str, Any] = dataclasses.field(default_factory=dict, repr=False, compare=False, metadata={"json": False})

    def to_text(self) -> str:
        """The audit in words (``rfviz audit``).

        Returns
        -------
        str
            One block per case: library and version, the call, rfviz's closed form, the finding, the command.
        """
        return audit_text(self.raw)

    def to_html(self, out: str) -> str:
        """Write the audit's HTML report to ``out`` (headless, like the gallery's export).

        Parameters
        ----------
        out : str
            The file, ending in .html.

        Returns
        -------
        str
            The path written.
        """
        return export_audit_html(self.raw, out)


FINDING_KEYS = ("trials", "d", "bias_z_min", "bias_z_max", "closed_form_agrees", "closed_form_z_min",
                "closed_form_z_max", "closed_form_points", "direction_dependent", "sentence", "summary", "seconds",
                "reason")


def _case(row: dict[str, Any]) -> AuditCaseResult:
    return AuditCaseResult(library=row["library"], version=row.get("version"), name=row["name"],
                           setting=row["setting"], mechanism=row["mechanism"], command=row["command"],
                           status=row["status"], verdict=row.get("verdict"),
                           finding={k: row[k] for k in FINDING_KEYS if k in row}, report=row.get("report"))


@api_function({"trials": CHECK_TRIALS_PARAM, "seed": SEED_PARAM})
def audit(libraries: Sequence[str] | None = None, *, trials: int | None = None, seed: int = 0) -> AuditResult:
    """Audit other libraries' random features against rfviz's closed forms (``rfviz audit``).

    Each library's feature map (a thin adapter in ``rfviz.audit``) runs through the estimator lab in its own plugin
    process, two at a time; a library that is not installed (``pip install rfviz[audit]``) is skipped with the
    reason.

    Parameters
    ----------
    libraries : sequence of str, optional
        Some of ``rfviz.audit.LIBRARIES`` (scikit-learn, gpytorch, performer-pytorch); default all.
    trials : int, optional
        The lab's trials per point (default the lab's, 4000).
    seed : int
        The lab's seed.

    Returns
    -------
    AuditResult
        One row per case (verdict, z ranges, the sentence, the reproducing command) and the run's wall and CPU time.

    Examples
    --------
    >>> import rfviz
    >>> res = rfviz.audit(["scikit-learn"], trials=2000)  # doctest: +SKIP
    >>> res.cases[0].verdict  # doctest: +SKIP
    'unbiased'
    """
    if libraries is not None and (isinstance(libraries, str) or not all(isinstance(x, str) for x in libraries)):
        raise ParameterError(f"libraries must be a list of names from {', '.join(LIBRARIES)}, got "
                             f"{str(libraries)[:60]!r}")
    settings = {} if trials is None else {"trials": int(trials)}
    raw = run_audit(libraries, seed=int(seed), **settings)
    out = audit_json(raw)
    return AuditResult(cases=[_case(row) for row in raw["cases"]], seed=out["seed"],
                       wall_seconds=out["wall_seconds"], cpu_seconds=out["cpu_seconds"], raw=raw)
