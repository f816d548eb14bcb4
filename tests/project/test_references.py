"""The repository refers only to documents it contains: no section of a specification or a design
note kept elsewhere is cited by the package, its documentation, tests, benchmarks or examples (the
material the project needs is in docs/, in its own words: docs/model.md and the other pages)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: citations of documents outside the repository (written so that this file does not match)
_SPEC, _NOTES, _SHARED = "SPEC", "front" + "ier", "/work" + "/shared"
OUTSIDE = re.compile(rf"{_SPEC}(\.md)?\s*§|{_SPEC}'s|{_NOTES}\.md|{_SHARED}")


def test_no_reference_to_a_document_outside_the_repository():
    found = []
    for folder in ("exactnorm", "docs", "tests", "benchmarks", "examples"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix not in (".py", ".md", ".toml", ".txt") or "__pycache__" in path.parts:
                continue
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if OUTSIDE.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()[:80]}")
    for name in ("README.md", "CHANGELOG.md", "pyproject.toml"):
        text = (ROOT / name).read_text(encoding="utf-8")
        found += [f"{name}: {m.group(0)}" for m in OUTSIDE.finditer(text)]
    assert not found, found


def test_the_pages_the_code_cites_exist():
    """A ``docs/<page>.md`` named in the package's docstrings and comments is a page of docs/."""
    pages = {p.name for p in (ROOT / "docs").glob("*.md")}
    cited = set()
    for path in (ROOT / "exactnorm").rglob("*.py"):
        cited |= set(re.findall(r"docs/([\w-]+\.md)", path.read_text(encoding="utf-8")))
    assert cited and cited <= pages, sorted(cited - pages)
