"""Shared test setup: single-threaded torch (CI has 2 cores), the reference folder, and the ``unit`` tier.

Tiers: ``slow`` (Monte-Carlo heavy), ``browser`` (headless Chromium) and ``integration`` (a subprocess, a Streamlit
AppTest run, a sleep, a server or the network) are declared by the tests; every other test is marked ``unit`` here,
and ``python -m pytest -m unit`` is the one-minute tier. Under ``unit``, starting a subprocess or a process,
``time.sleep``, a socket connection and a Streamlit AppTest run raise, so a test that belongs to a heavier tier fails
loudly instead of slowing the tier down.
"""

from __future__ import annotations

import multiprocessing.process
import pathlib
import signal
import socket
import subprocess
import sys
import time

import pytest
import torch
from hypothesis import settings

# Property tests draw from a fixed seed so that CI is reproducible (a failure found once is found every run).
settings.register_profile("rfviz", derandomize=True, database=None)
settings.load_profile("rfviz")

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
REFERENCE = ROOT.parent / "shared" / "reference"

torch.set_num_threads(max(1, min(2, torch.get_num_threads())))

# A suite started as a background job of a non-interactive shell (``./run test &``, a CI runner's wrapper) inherits
# SIGINT ignored, and so would every command a test starts: the Ctrl-C tests would then wait on a child that cannot
# be interrupted. The tests run as from a terminal: SIGINT raises KeyboardInterrupt here, and children get the default.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

HEAVIER_TIERS = ("slow", "browser", "integration")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark ``unit`` every collected test that carries none of the heavier tiers' markers."""
    for item in items:
        if not any(item.get_closest_marker(name) for name in HEAVIER_TIERS):
            item.add_marker(pytest.mark.unit)


class UnitTierViolation(RuntimeError):
    """A ``unit`` test did what only the heavier tiers may do (a subprocess, a process, a sleep)."""


@pytest.fixture(autouse=True)
def _unit_tier_guard(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under ``unit``, make ``subprocess.Popen``, ``Process.start``, ``time.sleep``, connections and AppTest raise."""
    if request.node.get_closest_marker("unit") is None:
        return

    def refuse(what: str):
        def refused(*args, **kwargs):
            raise UnitTierViolation(f"{request.node.nodeid} is in the unit tier but called {what}: mark it "
                                    "@pytest.mark.integration (or slow)")
        return refused

    monkeypatch.setattr(subprocess.Popen, "_execute_child", refuse("subprocess.Popen"))  # Popen stays a class
    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", refuse("multiprocessing Process.start"))
    monkeypatch.setattr(time, "sleep", refuse("time.sleep"))
    monkeypatch.setattr(socket.socket, "connect", refuse("socket.connect"))
    app_test = sys.modules.get("streamlit.testing.v1.app_test")  # imported by the test module, if it uses AppTest
    if app_test is not None:
        monkeypatch.setattr(app_test.AppTest, "run", refuse("Streamlit's AppTest.run"))


@pytest.fixture(scope="session")
def reference_dir() -> pathlib.Path:
    return REFERENCE
