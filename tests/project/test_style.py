"""The code base stays ruff clean (configuration in pyproject.toml)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_ruff_clean():
    if importlib.util.find_spec("ruff") is None:
        pytest.skip("ruff is not installed (it is part of the test extra)")
    paths = [p for p in ("exactnorm", "tests", "benchmarks", "examples") if (ROOT / p).exists()]
    res = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", *paths], cwd=ROOT,
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stdout[-3000:]


def test_mypy_clean():
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed")
    res = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental"], cwd=ROOT,
                         capture_output=True, text=True, check=False, timeout=900)
    assert res.returncode == 0, res.stdout[-3000:]
