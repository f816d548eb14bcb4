"""The suite tests this checkout, in folders that mirror the package.

* the test process and every subprocess import the checkout's ``exactnorm``, never an installed
  copy (``tests/conftest.py`` puts the checkout first on ``PYTHONPATH``);
* every test module lives in a folder named after the package folder it tests (``tests/checker``
  for ``exactnorm/checker``, …), or in ``tests/kinds`` (the contract every layer kind passes) or
  ``tests/project`` (architecture, documents, style); shared helpers live in ``tests/helpers.py``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import exactnorm
from tests.helpers import ROOT, checkout_env

#: test folders that are not a package folder
CROSS_CUTTING = {"kinds", "project"}


def test_the_test_process_imports_the_checkout():
    assert Path(exactnorm.__file__).resolve().is_relative_to(ROOT / "exactnorm")


def test_a_subprocess_imports_the_checkout_even_from_elsewhere(tmp_path):
    probe = "import exactnorm, sys; sys.stdout.write(exactnorm.__file__)"
    for env in (None, checkout_env({"PATH": "/usr/bin:/bin"})):
        res = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env,
                             capture_output=True, text=True, check=True)
        assert Path(res.stdout).resolve().is_relative_to(ROOT / "exactnorm"), res.stdout


def misplaced(root: Path) -> tuple[list[str], list[str]]:
    """``(flat test modules, test folders that mirror no package folder)`` of a checkout."""
    package_folders = {p.name for p in (root / "exactnorm").iterdir()
                       if p.is_dir() and (p / "__init__.py").exists()}
    flat = sorted(p.name for p in (root / "tests").glob("test_*.py"))
    folders = {p.relative_to(root / "tests").parts[0]
               for p in (root / "tests").rglob("test_*.py") if p.parent != root / "tests"}
    return flat, sorted(folders - package_folders - CROSS_CUTTING)


def test_test_folders_mirror_the_package():
    assert misplaced(ROOT) == ([], [])
    for folder in (ROOT / "tests").iterdir():
        if folder.is_dir() and any(folder.rglob("test_*.py")):
            assert (folder / "__init__.py").exists(), folder


def test_the_folder_rule_can_fail(tmp_path):
    (tmp_path / "exactnorm" / "model").mkdir(parents=True)
    (tmp_path / "exactnorm" / "model" / "__init__.py").write_text("")
    for name in ("model/test_ok.py", "misc/test_x.py", "test_flat.py"):
        (tmp_path / "tests" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "tests" / name).write_text("")
    assert misplaced(tmp_path) == (["test_flat.py"], ["misc"])
