"""Declarative parameter specs: each estimator and command declares its parameters once; the app, CLI, API and
tests read them.

Three modules, one job each:

- ``rfviz.params.core``: the ``Param`` type and validation (``Param.validate`` for Python values, strict: never
  text; ``Param.parse`` for text, used only by the CLI, URL query parameters and sweep manifests), ``check``,
  ``check_list``, ``check_int``, ``validated`` and ``ParameterError``;
- ``rfviz.params.catalogue``: the shared ``*_PARAM`` constants and the app's caps;
- ``rfviz.params.budgets``: the memory and time budgets (scopes, ``Cost``, ``require_*``).

Every public name is re-exported here, so ``from rfviz.params import X`` works for all of them. Importing this
package loads neither torch nor the estimator catalog.
"""

from __future__ import annotations

from .budgets import (
    DEFAULT_MEMORY_BUDGET,
    MAX_MEMORY_BUDGET,
    MEMORY_BUDGET_PARAM,
    SERVER_MEMORY_BUDGET,
    SERVER_TIME_BUDGET,
    Cost,
    current_memory_budget,
    current_time_budget,
    format_bytes,
    memory_budget_scope,
    parse_bytes,
    require_cost,
    require_fits,
    require_time,
    server_budget_scope,
    time_budget_scope,
)
from .catalogue import (
    APP_INT_CAPS,
    CHECK_TRIALS_PARAM,
    CLI_D_PARAM,
    CLI_TRIALS_PARAM,
    COUPLED_D_PARAM,
    COUPLING_PARAM,
    CPU_DEVICE_PARAM,
    D_PARAM,
    DEGREE_PARAM,
    DEVICE_PARAM,
    DIM_PARAM,
    ENGINE_SEED_PARAM,
    ENGINE_TRIALS_PARAM,
    ESTIMATOR_DEGREE_PARAM,
    KERNEL_PARAM,
    LAB_D_PARAM,
    LAB_TRIALS_PARAM,
    M_PARAM,
    R_MAX_PARAM,
    R_PARAM,
    SAMPLES_PARAM,
    SEED_PARAM,
    THETA_PARAM,
    TRIALS_PARAM,
    app_param,
)
from .core import (
    MAX_DIMENSION,
    MAX_LIST_LENGTH,
    MAX_TRIALS,
    Kind,
    Param,
    ParameterError,
    check,
    check_int,
    check_list,
    validate_params,
    validated,
)

__all__ = [
    "APP_INT_CAPS", "CHECK_TRIALS_PARAM", "CLI_D_PARAM", "CLI_TRIALS_PARAM", "COUPLED_D_PARAM", "COUPLING_PARAM",
    "CPU_DEVICE_PARAM", "DEFAULT_MEMORY_BUDGET", "DEGREE_PARAM", "DEVICE_PARAM", "DIM_PARAM", "D_PARAM",
    "ENGINE_SEED_PARAM", "ENGINE_TRIALS_PARAM", "ESTIMATOR_DEGREE_PARAM", "KERNEL_PARAM", "LAB_D_PARAM",
    "LAB_TRIALS_PARAM", "MAX_DIMENSION", "MAX_LIST_LENGTH", "MAX_MEMORY_BUDGET", "MAX_TRIALS", "MEMORY_BUDGET_PARAM",
    "M_PARAM", "R_MAX_PARAM", "R_PARAM", "SAMPLES_PARAM", "SEED_PARAM", "SERVER_MEMORY_BUDGET", "SERVER_TIME_BUDGET",
    "THETA_PARAM", "TRIALS_PARAM", "Cost", "Kind", "Param", "ParameterError", "app_param", "check", "check_int",
    "check_list", "current_memory_budget", "current_time_budget", "format_bytes", "memory_budget_scope",
    "parse_bytes", "require_cost", "require_fits", "require_time", "server_budget_scope", "time_budget_scope",
    "validate_params", "validated",
]
