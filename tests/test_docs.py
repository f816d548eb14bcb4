"""The documentation stays equal to the program: the CLI reference names every verb and every
option of the parser, the README stays short with the way to certify one's own model on its first
screen, the documentation index lists every page, and the links between pages resolve."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_cli_reference_names_every_verb_and_option():
    from exactnorm.cli import build_parser

    text = (ROOT / "docs" / "cli.md").read_text()
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    sections = dict(re.findall(r"^## exactnorm (\S+)\n(.*?)(?=^## |\Z)", text, re.M | re.S))
    assert set(sections) == set(sub.choices), "regenerate with python docs/gen_cli.py"
    for name, verb in sub.choices.items():
        for action in verb._actions:
            for option in action.option_strings:
                assert option in sections[name], f"{name} {option}: python docs/gen_cli.py"


def test_readme_is_short_and_starts_with_what_a_newcomer_needs():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.encode()) <= 10 * 1024
    assert readme.index("## Certify your own model") < 3000
    assert "<!-- ci:main -->" in readme and "<!-- ci:test -->" in readme


def test_documentation_index_lists_every_page():
    index = (ROOT / "docs" / "index.md").read_text()
    listed = set(re.findall(r"^([a-z0-9-]+)$", index, re.M))
    pages = {p.stem for p in (ROOT / "docs").glob("*.md")} - {"index"}
    assert pages == listed, pages ^ listed


def _heading_anchors(text: str) -> set[str]:
    """The anchors MyST gives headings of levels 1–3 (``myst_heading_anchors = 3`` in conf.py)."""
    anchors = set()
    in_code = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_code = not in_code
            continue
        m = None if in_code else re.match(r"^(#{1,3}) (.+)$", line)
        if m:
            title = m.group(2).replace("`", "").strip().lower()
            anchors.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return anchors


def test_links_between_pages_resolve():
    """Every relative link of a page names a page of docs/ (no ``docs/`` prefix, nothing outside
    the site) and, with ``#anchor``, one of that page's headings. conf.py suppresses MyST's
    missing-reference warning, so this test is what keeps the links valid."""
    pages = {p.name: p.read_text() for p in (ROOT / "docs").glob("*.md")}
    anchors = {name: _heading_anchors(text) for name, text in pages.items()}
    bad = []
    for name, text in pages.items():
        prose = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", prose):
            if re.match(r"[a-z]+:", target):
                continue
            page, _, anchor = target.partition("#")
            page = page or name
            if page not in pages:
                bad.append(f"{name}: {target} (no such page in docs/)")
            elif anchor and anchor not in anchors[page]:
                bad.append(f"{name}: {target} (no such heading)")
    assert not bad, bad
