"""The plugin process: ``python -m rfviz._plugin_worker REQUEST.json`` (started by ``rfviz.plugin_process``).

It limits itself (RLIMIT_AS, RLIMIT_CPU, RLIMIT_FSIZE) before any plugin code runs, reports its stage in the status file
(``import``, ``the smoke test``, ``the check<TAB>fraction``), and writes its answer, ``{"value": …}`` or
``{"error": one line, "kind": …}``, as JSON data (``rfviz.plugin_process.answer_json``: plain types, arrays as
``.npy`` bytes, rfviz's report types field by field; never a pickle) renamed into place. It ends with
``os._exit`` so threads a plugin left running cannot keep it alive; whatever the plugin forked is killed with its
process group by the parent.
"""

from __future__ import annotations

import json
import os
import resource
import sys
from typing import Any


def _set_limits(limits: dict[str, Any]) -> None:
    for key, which in (("memory_bytes", resource.RLIMIT_AS), ("cpu_s", resource.RLIMIT_CPU),
                       ("file_bytes", resource.RLIMIT_FSIZE)):
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
    from .plugin_process import check_target, from_wire

    return check_target(payload["target"], payload["extra_plugins"], from_wire(payload["params"]),
                        payload["compare"], progress=lambda f: _status(status, "the check", f), **payload["kwargs"])


def _check_features(payload: dict[str, Any], status: str) -> Any:
    from .lab.feature_map import check_feature_map_spec

    _status(status, "the check")
    return check_feature_map_spec(payload["features"], payload["kernel"], mse=payload["mse"],
                                  biased=payload["biased"], compare=payload["compare"],
                                  progress=lambda f: _status(status, "the check", f), **payload["kwargs"])


def _discover(payload: dict[str, Any], status: str) -> list[Any]:
    from .plugin_process import PluginInfo
    from .plugins import load_plugin, split_spec

    spec = payload["spec"]
    target, _ = split_spec(spec)
    return [PluginInfo.of(cls, f"{target}:{cls.__name__}") for cls in load_plugin(spec)]


def _answer(request: dict[str, Any], status: str) -> str:
    """The task's answer as JSON text: its value, or one line saying why there is none."""
    from . import plugins
    from .params import ParameterError, memory_budget_scope
    from .plugin_process import answer_json

    try:
        with memory_budget_scope(request["memory_budget"]):
            task = {"check": _check, "check_features": _check_features, "discover": _discover}[request["task"]]
            return answer_json(task(request["payload"], status))
    except plugins.PluginError as exc:
        return answer_json(error=str(exc))
    except ParameterError as exc:
        return answer_json(error=str(exc), kind="parameter")
    except MemoryError:
        return answer_json(error="the plugin process ran out of memory (its address-space limit is "
                                 "RFVIZ_PLUGIN_MEMORY)")
    except BaseException as exc:  # plugin code may raise anything; the answer is still one line
        return answer_json(error=f"{type(exc).__name__}: {' '.join(str(exc).split())}")


def main(request_path: str) -> None:
    """Run the request's task and write its answer (see the module docstring)."""
    with open(request_path, encoding="utf-8") as f:
        request = json.load(f)
    _set_limits(request["limits"])
    sys.path[:] = [p for p in request["sys_path"] if p] + [p for p in sys.path if p not in request["sys_path"]]
    status = request["status"]
    from . import plugins

    plugins.IN_PLUGIN_PROCESS = True
    plugins.STAGE_HOOK = lambda stage: _status(status, stage)
    _status(status, "import")
    text = _answer(request, status)
    tmp = f"{request['answer']}.tmp"
    with open(tmp, "w", encoding="ascii") as f:
        f.write(text)
    os.replace(tmp, request["answer"])
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1])
