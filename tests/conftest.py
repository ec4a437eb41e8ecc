"""Shared test setup: single-threaded torch (CI has 2 cores) and the reference folder."""

from __future__ import annotations

import pathlib
import sys

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


@pytest.fixture(scope="session")
def reference_dir() -> pathlib.Path:
    return REFERENCE
