"""The plugin process: ``python -m rfviz._plugin_worker REQUEST.json`` (started by ``rfviz.plugin_process``).

It limits itself (RLIMIT_AS, RLIMIT_CPU) before any plugin code runs, reports its stage in the status file
(``import``, ``the smoke test``, ``the check<TAB>fraction``), and writes its answer, ``{"value": …}`` or
``{"error": one line, "kind": …}``, as a pickle renamed into place. It ends with ``os._exit`` so threads a plugin
left running cannot keep it alive; whatever the plugin forked is killed with its process group by the parent.
"""

from __future__ import annotations

import json
import os
import pickle
import resource
import sys
from typing import Any


def _set_limits(limits: dict[str, Any]) -> None:
    for key, which in (("memory_bytes", resource.RLIMIT_AS), ("cpu_s", resource.RLIMIT_CPU)):
        value = limits.get(key)
        if value is not None:
            _soft, hard = resource.getrlimit(which)
            value = int(value) if hard == resource.RLIM_INFINITY else min(int(value), hard)
            resource.setrlimit(which, (value, hard))


def _status(path: str, stage: str, fraction: float | None = None) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(stage if fraction is None else f"{stage}\t{fraction:.4f}")
    os.replace(tmp, path)


def _check(payload: dict[str, Any], status: str) -> Any:
    from .plugin_process import check_target

    return check_target(payload["target"], payload["extra_plugins"], payload["params"], payload["compare"],
                        progress=lambda f: _status(status, "the check", f), **payload["kwargs"])


def _discover(payload: dict[str, Any], status: str) -> list[Any]:
    from .plugin_process import PluginInfo
    from .plugins import load_plugin, split_spec

    spec = payload["spec"]
    target, _ = split_spec(spec)
    return [PluginInfo(cls.name, str(cls.title), str(getattr(cls, "description", "")),
                       str(getattr(cls, "reference", "")), tuple(cls.spec), f"{target}:{cls.__name__}")
            for cls in load_plugin(spec)]


def main(request_path: str) -> None:
    """Run the request's task and write its answer (see the module docstring)."""
    with open(request_path, encoding="utf-8") as f:
        request = json.load(f)
    _set_limits(request["limits"])
    sys.path[:] = [p for p in request["sys_path"] if p] + [p for p in sys.path if p not in request["sys_path"]]
    status = request["status"]
    from . import plugins
    from .params import ParameterError, memory_budget_scope

    plugins.STAGE_HOOK = lambda stage: _status(status, stage)
    _status(status, "import")
    answer: dict[str, Any]
    try:
        with memory_budget_scope(request["memory_budget"]):
            task = {"check": _check, "discover": _discover}[request["task"]]
            answer = {"value": task(request["payload"], status)}
    except plugins.PluginError as exc:
        answer = {"error": str(exc), "kind": "plugin"}
    except ParameterError as exc:
        answer = {"error": str(exc), "kind": "parameter"}
    except MemoryError:
        answer = {"error": "the plugin process ran out of memory (its address-space limit is RFVIZ_PLUGIN_MEMORY)",
                  "kind": "plugin"}
    except BaseException as exc:  # plugin code may raise anything; the answer is still one line
        answer = {"error": f"{type(exc).__name__}: {' '.join(str(exc).split())}", "kind": "plugin"}
    try:
        data = pickle.dumps(answer)
    except Exception as exc:  # e.g. a plugin parameter that cannot be pickled
        data = pickle.dumps({"error": f"the plugin's result cannot be sent back: {type(exc).__name__}: {exc}",
                             "kind": "plugin"})
    tmp = f"{request['result']}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, request["result"])
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1])
