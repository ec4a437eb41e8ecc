"""Measured feature-map time on this device, cached per device: the time budget of the decision core.

``DeviceTimer.seconds(name, params, X, m)`` times ``rfviz.sklearn.RandomFeatures(...).transform(X)`` — the map as a
model runs it, projections drawn once by ``fit`` and not timed — as the best of ``TIMING_REPEATS`` runs, and
``largest_m`` inverts it: feature-map time is affine in m for every built-in map (a fixed cost plus m projections;
the structured couplings, SORF and Fastfood, are O(d log d) per block instead of O(d²)), so two measured m give the
line, and the m it predicts is measured once more and stepped down until it fits.

Measurements are cached in a small JSON file, ``$XDG_CACHE_HOME/rfviz/feature_times.json`` (else
``~/.cache/rfviz/feature_times.json``), keyed by the device (CPU model, torch threads) and the map (estimator, its
parameters, the data's shape, m). The file is written atomically (``rfviz.fileio.atomic_write``) and trusted only as
far as parsing plain numbers: anything that is not a JSON object of objects of finite non-negative numbers, or a
file over ``MAX_CACHE_BYTES``, is ignored (and replaced at the next write).
"""

from __future__ import annotations

import json
import math
import os
import platform
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .fileio import atomic_write
from .params import ParameterError

CACHE_FILE = "feature_times.json"
MAX_CACHE_BYTES = 1_000_000
"""A cache file larger than this is not read (and the next write starts it afresh)."""
MAX_ENTRIES = 5000
"""Entries kept per device (the oldest dropped first)."""
TIMING_REPEATS = 3
"""transform() runs per measurement; the fastest is kept (the others carry the machine's other load)."""
PROBE_M = (8, 64)
"""The m at which the affine time line is measured."""
MAX_TIMED_M = 1_000_000


def cache_path() -> Path:
    """Where the cache lives: ``$XDG_CACHE_HOME/rfviz/feature_times.json`` or ``~/.cache/rfviz/...``.

    Returns
    -------
    Path

    Examples
    --------
    >>> cache_path().name
    'feature_times.json'
    """
    base = os.environ.get("XDG_CACHE_HOME") or ""
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".cache"
    return root / "rfviz" / CACHE_FILE


def device_key() -> str:
    """The device the times belong to: CPU model (or architecture) and torch's thread count.

    Returns
    -------
    str
    """
    import torch

    model = platform.machine()  # (platform.processor() would start a subprocess: uname -p)
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"cpu:{model[:80]}|threads:{torch.get_num_threads()}"


def read_cache(path: Path) -> dict[str, dict[str, float]]:
    """The cache's entries, keeping only plain finite non-negative numbers (empty where the file is absent, too large
    or not such a JSON object).

    Parameters
    ----------
    path : Path

    Returns
    -------
    dict

    Examples
    --------
    >>> read_cache(Path("/nonexistent/feature_times.json"))
    {}
    """
    try:
        if not path.is_file() or path.stat().st_size > MAX_CACHE_BYTES:
            return {}
        raw = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(raw, dict):
        return {}
    out: dict[str, dict[str, float]] = {}
    for dev, entries in raw.items():
        if isinstance(dev, str) and isinstance(entries, dict):
            out[dev] = {k: float(v) for k, v in entries.items() if isinstance(k, str) and
                        isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v >= 0}
    return out


def _entry_key(name: str, params: Mapping[str, Any], shape: tuple[int, int], m: int) -> str:
    text = json.dumps({k: str(v) for k, v in sorted(params.items()) if k != "m"}, sort_keys=True)
    return f"{name}|{text}|{shape[0]}x{shape[1]}|m={m}"


class DeviceTimer:
    """Feature-map time of an estimator on this device, measured once and cached (see the module's docstring).

    Parameters
    ----------
    path : Path, optional
        The cache file (default ``cache_path()``); None-like ``False`` keeps times in memory only.
    repeats : int
        transform() runs per measurement.

    Examples
    --------
    >>> t = DeviceTimer(path=False)
    >>> X = np.random.default_rng(0).normal(size=(16, 4)) * 0.3
    >>> t.seconds("trig", {"kernel": "gaussian"}, X, 32) > 0
    True
    """

    def __init__(self, path: Path | bool | None = None, repeats: int = TIMING_REPEATS) -> None:
        self.path: Path | None = None if path is False else (cache_path() if path in (None, True) else Path(path))
        self.repeats = max(1, int(repeats))
        self.device = device_key()
        self._memory: dict[str, float] = {}
        if self.path is not None:
            self._memory.update(read_cache(self.path).get(self.device, {}))

    def _measure(self, name: str, params: Mapping[str, Any], X: np.ndarray, m: int) -> float:
        from .sklearn import RandomFeatures

        own = {k: v for k, v in params.items() if k not in ("m", "coupling", "kernel")}
        rf = RandomFeatures(name, m=m, coupling=params.get("coupling"), kernel=params.get("kernel"),
                            params=own or None, random_state=0).fit(X)
        best = math.inf
        for _ in range(self.repeats):
            start = time.perf_counter()
            rf.transform(X)
            best = min(best, time.perf_counter() - start)
        return best

    def seconds(self, name: str, params: Mapping[str, Any], X: np.ndarray, m: int) -> float:
        """Seconds of ``transform(X)`` for the map at m (cached).

        Parameters
        ----------
        name : str
            A registered estimator.
        params : mapping
            Its other parameters (``kernel``, ``coupling`` included).
        X : np.ndarray
            The data mapped (its shape is part of the key).
        m : int
            Random projections.

        Returns
        -------
        float
        """
        key = _entry_key(name, params, (int(X.shape[0]), int(X.shape[1])), int(m))
        if key not in self._memory:
            self._memory[key] = self._measure(name, params, X, int(m))
            self._save()
        return self._memory[key]

    def _save(self) -> None:
        if self.path is None:
            return
        entries = dict(list(self._memory.items())[-MAX_ENTRIES:])
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            cache = read_cache(self.path)
            cache[self.device] = entries
            atomic_write(self.path, json.dumps(cache))
        except (OSError, ParameterError):
            pass  # a cache that cannot be written only costs a re-measurement

    def largest_m(self, name: str, params: Mapping[str, Any], X: np.ndarray, seconds: float) -> int | None:
        """The largest m whose measured ``transform(X)`` takes at most ``seconds`` (None: not even m = 1).

        Parameters
        ----------
        name, params, X : as for :meth:`seconds`.
        seconds : float
            The budget.

        Returns
        -------
        int or None
        """
        lo_m, hi_m = PROBE_M
        try:
            t_lo, t_hi = self.seconds(name, params, X, lo_m), self.seconds(name, params, X, hi_m)
        except (ParameterError, ValueError, NotImplementedError):
            return None
        slope = max((t_hi - t_lo) / (hi_m - lo_m), 1e-12)
        m = int(min(MAX_TIMED_M, max(1, math.floor(lo_m + (seconds - t_lo) / slope))))
        while m > 1 and self._seconds_within_memory(name, params, X, m) > seconds:
            m = max(1, int(m * 0.8))
        return m if self._seconds_within_memory(name, params, X, m) <= seconds else None

    def _seconds_within_memory(self, name: str, params: Mapping[str, Any], X: np.ndarray, m: int) -> float:
        """``seconds``, or inf where the map at m is over the memory budget (the transformer refuses it before any
        work): a time budget never asks for more features than memory allows."""
        try:
            return self.seconds(name, params, X, m)
        except ParameterError:
            return math.inf
