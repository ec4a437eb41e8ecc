"""The Python face of rfviz: one function per command, each returning a frozen, typed result.

``rfviz.mse``, ``rfviz.density``, ``rfviz.psi``, ``rfviz.gram``, ``rfviz.check``, ``rfviz.sweep``,
``rfviz.features_needed``, ``rfviz.rank_estimators``, ``rfviz.downstream`` and ``rfviz.api.audit`` (only here:
``rfviz.audit`` is the package of the audits' adapters) take Python values (numbers, numpy
scalars, lists and arrays, text only where a name is expected) and compute what ``rfviz COMMAND ... --json``
prints: the CLI parses its text into the same values and calls the same functions. ``result.to_dict()`` is made
from the result (``rfviz.api.results.Result``); attributes keep their types (``result.mse``, ``result.mc.stderr``,
``result.params["A"]`` a complex number where A is one; rows are typed too, e.g. ``GramRow``).

Each function declares its parameter constraints once, as data (``fn.parameter_constraints``;
``rfviz.api.validation.PARAMETER_CONSTRAINTS``), and a bad value — text where a number is expected included —
raises ``ParameterError`` (a ValueError and a TypeError) naming the parameter; numeric, memory and library failures
become ``ParameterError`` too. Figure helpers (``result.figure()``, :func:`mse_curve`) return Plotly figures.

One module per command (``mse_command``, ``density_command``, ``psi_command``, ``gram_command``,
``check_command``, ``audit_command``, ``sweep_command``, ``features_needed_command``, ``rank_estimators_command``,
``downstream_command``): its typed core, its result classes and its API function; ``datasets`` loads the data sets
the commands share, ``results`` holds the result base and ``validation`` the constraints.

>>> import rfviz
>>> res = rfviz.mse("trig", r=1.0, theta=1.0, d=4, m=10)
>>> round(res.mse, 6)
0.133553
"""

from __future__ import annotations

from .audit_command import AuditCaseResult, AuditResult, audit
from .check_command import CheckResult, check
from .density_command import DensityResult, density
from .downstream_command import DownstreamResult, DownstreamRow, downstream
from .features_needed_command import FeaturesNeededResult, features_needed
from .gram_command import GramResult, GramRow, gram
from .mse_command import MonteCarloSummary, MSEResult, mse, mse_curve
from .psi_command import PsiResult, psi
from .rank_estimators_command import ConfirmationRow, RankedRow, RankingResult, rank_estimators
from .results import Result
from .sweep_command import SweepResult, sweep
from .validation import PARAMETER_CONSTRAINTS

__all__ = ["PARAMETER_CONSTRAINTS", "AuditCaseResult", "AuditResult", "CheckResult", "ConfirmationRow",
           "DensityResult", "DownstreamResult", "DownstreamRow", "FeaturesNeededResult", "GramResult", "GramRow",
           "MSEResult", "MonteCarloSummary", "PsiResult", "RankedRow", "RankingResult", "Result", "SweepResult",
           "audit", "check", "density", "downstream", "features_needed", "gram", "mse", "mse_curve", "psi",
           "rank_estimators", "sweep"]
