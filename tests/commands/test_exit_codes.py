"""One exit code per situation, the same in README, docs/cli.md, docs/security.md and the user
guide: each
prints the table of :data:`exactnorm.commands._exits.EXIT_CODES`, and every exit code their text
names is one of the table's (a mutation of any copy fails)."""

from __future__ import annotations

import re

import pytest

from exactnorm.commands._exits import EXIT_CODES, exit_code_table
from tests.helpers import ROOT

DOCUMENTS = ("README.md", "docs/cli.md", "docs/security.md", "docs/user-guide.md")


def tables_in(text: str) -> list[str]:
    """Every Markdown table whose header is ``| code | meaning |``."""
    return [m.group(0).rstrip("\n") for m in re.finditer(
        r"^\| code \| meaning \|\n\|---\|---\|\n(?:\|.*\|\n?)+", text, re.M)]


@pytest.mark.parametrize("name", DOCUMENTS)
def test_each_document_prints_the_one_table(name):
    tables = tables_in((ROOT / name).read_text())
    assert tables == [exit_code_table()], f"{name}: copy exit_code_table() (docs/gen_cli.py)"


@pytest.mark.parametrize("name", DOCUMENTS)
def test_every_code_a_document_names_is_in_the_table(name):
    text = (ROOT / name).read_text()
    codes = {code for code, _ in EXIT_CODES}
    named = {int(n) for n in re.findall(r"exit(?: code)?s? (\d+)", text)}
    named |= {int(n) for n in re.findall(r"exit (\d+)(?:,| or) (\d+)", text) for n in n}
    assert named and named <= codes, named - codes


def test_the_comparison_can_fail():
    table = exit_code_table()
    changed = table.replace("| `2` | usage", "| `1` | usage")
    assert tables_in(changed + "\n") != [table]
    assert tables_in("| code | meaning |\n|---|---|\n| `0` | fine |\n") != [table]


def test_limits_have_one_code_each():
    """A limit of reading is exit 2 (an input error), a limit of the check exit 1 (INVALID);
    the documents say so in the same words as the table."""
    meanings = dict(EXIT_CODES)
    assert "--max-width" in meanings[2] and "--max-bytes" in meanings[2]
    assert "--max-work" in meanings[1] and "limit" in meanings[1]
    security = (ROOT / "docs" / "security.md").read_text()
    assert "limit of *reading*" in security and "is exit code 2" in security
    assert "makes the verdict `INVALID` (exit code 1)" in security
