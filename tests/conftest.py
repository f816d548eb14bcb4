"""Shared pytest configuration: Hypothesis profiles.

Select a profile with ``HYPOTHESIS_PROFILE``; without it the ``ci`` profile is loaded, so README's
test command runs the same examples on every machine and every run:

* ``ci`` (default): derandomized (examples derived from each test's name, the same every run), no
  example database (nothing replayed from earlier runs), about 50 examples per test, no deadline;
* ``dev``: opt-in random exploration, Hypothesis' usual random search with 100 examples and the
  local example database, no deadline;
* ``thorough``: opt-in long random fuzzing, 2000 examples per test, no deadline.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from hypothesis import HealthCheck, settings

DEFAULT_PROFILE = "ci"

settings.register_profile("ci", derandomize=True, database=None, max_examples=50, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
# derandomize=False explicitly: Hypothesis derandomizes its own defaults when it detects CI, and
# the opt-in profiles must explore at random wherever they run
settings.register_profile("dev", max_examples=100, deadline=None, derandomize=False)
settings.register_profile("thorough", max_examples=2000, deadline=None, derandomize=False,
                          suppress_health_check=[HealthCheck.too_slow])


def profile_name(environ: Mapping[str, str]) -> str:
    """The Hypothesis profile for an environment: ``HYPOTHESIS_PROFILE`` if set, else ``ci``."""
    return environ.get("HYPOTHESIS_PROFILE") or DEFAULT_PROFILE


settings.load_profile(profile_name(os.environ))


# Subprocesses run this checkout, never an installed copy: ``python -m exactnorm`` in a test's
# subprocess finds the checkout first on PYTHONPATH (tests.helpers.checkout_env does the same for a
# test that builds its own environment).
_CHECKOUT = str(Path(__file__).resolve().parents[1])
if os.environ.get("PYTHONPATH", "").split(os.pathsep)[0] != _CHECKOUT:
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (_CHECKOUT, os.environ.get("PYTHONPATH")) if p)
