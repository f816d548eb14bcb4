"""The documentation stays equal to the program: the CLI reference names every verb and every
option of the parser, the README stays short with the way to certify one's own model on its first
screen, and the documentation index lists every page."""

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
