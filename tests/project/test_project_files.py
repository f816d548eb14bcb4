"""LICENSE, CITATION.cff and CHANGELOG.md exist and agree with pyproject.toml."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_license_is_bsd3_as_pyproject_says():
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("BSD 3-Clause License") and "exactnorm developers" in text
    assert 'license = { text = "BSD-3-Clause" }' in (ROOT / "pyproject.toml").read_text()


def test_citation_names_the_project_and_the_paper():
    cff = (ROOT / "CITATION.cff").read_text()
    assert cff.startswith("cff-version: 1.2.0")
    assert "preferred-citation:" in cff and "references:" in cff
    assert cff.count("arXiv:2302.07937") == 2
    assert "The Expressive Power of Tuning Only the Normalization Layers" in cff
    for name in ("Giannou", "Rajput", "Papailiopoulos"):
        assert f"family-names: {name}" in cff
    # the version's one home is the leaf module that pyproject.toml reads dynamically
    assert 'version = { attr = "exactnorm.version.__version__" }' in (
        ROOT / "pyproject.toml").read_text()
    leaf = (ROOT / "exactnorm" / "version.py").read_text()
    version = re.search(r'^__version__ = "([^"]+)"', leaf, re.M)
    assert version is not None and f"version: {version.group(1)}" in cff


def test_changelog_has_the_first_landing_and_the_unreleased_round():
    log = (ROOT / "CHANGELOG.md").read_text()
    assert "## [0.2.0] — unreleased" in log and "## [0.1.0]" in log
    assert log.index("[0.2.0]") < log.index("[0.1.0]")
