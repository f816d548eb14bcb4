"""Shared pytest configuration: Hypothesis profiles.

Select a profile with ``HYPOTHESIS_PROFILE`` (default ``ci`` when the environment variable ``CI``
is set, ``dev`` otherwise):

* ``ci``: derandomized (same examples every run), about 50 examples per test, no deadline;
* ``dev``: Hypothesis' usual random search with 100 examples, no deadline;
* ``thorough``: 2000 examples per test, no deadline (long fuzzing runs).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", derandomize=True, max_examples=50, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile("thorough", max_examples=2000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
# an explicit HYPOTHESIS_PROFILE wins; otherwise CI runs (env CI set) get the reproducible profile
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI")
                                                               else "dev"))


def pytest_collection_modifyitems(config, items):
    """Leave ``slow`` cases out unless a marker expression is given (``-m slow`` runs them),
    as the marker's description in pyproject.toml promises."""
    if config.getoption("markexpr"):
        return
    import pytest

    skip = pytest.mark.skip(reason="slow: select with -m slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
