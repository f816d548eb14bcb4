"""The closed schema, generated from the document (docs/certificate-format.md, Appendix A).

The tables of Appendix A are parsed from the page itself: for every object level its keys, their
JSON types, whether they are required and the first version that allows them. From them alone
this module generates, at one instance of every level in a set of valid documents (certificates
of versions 1 to 3 with every layer kind, residual targets and checkpoints, skips of every form,
draw records and masks, redraws, provenance and witnesses, and impossibility documents of every
witness kind), the documents that break the table — an unknown key (a made-up one and every key
of every other level), each required key missing, each key given a value of every JSON type its
row does not allow, each key of a later version in an older document — and demands that both
arithmetics refuse each one with rule ``format`` and the key named.

Where the instances are found is decided here from the document's prose (which key of which
object holds what), not with the checker's own dispatch. The tables are also compared with the
checker's (:func:`exactnorm.checker.schema.schemas`), and the comparison and the generated cases
are shown to fail when either side changes.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from exactnorm.checker import schema as code_schema
from exactnorm.checker.kinds import RULES
from tests.checker import corpus
from tests.helpers import both

ROOT = Path(__file__).resolve().parents[2]
FORMAT_DOC = ROOT / "docs" / "certificate-format.md"


class Row(NamedTuple):
    key: str
    types: tuple[str, ...]
    required: bool
    since: int


# ---------------------------------------------------------------- the tables, from the page

_HEAD = re.compile(r"^\*\*Schema: `([^`]+)`\*\*\s*$")
_ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|\s*([a-z ]+?)\s*\|\s*(yes|no)\s*\|\s*([0-9]+)\s*\|")


def document_tables(text: str) -> dict[str, list[Row]]:
    """Every ``**Schema: `level`**`` heading of the page and the rows of the table after it."""
    tables: dict[str, list[Row]] = {}
    level = None
    for line in text.splitlines():
        head = _HEAD.match(line)
        if head:
            level = head.group(1)
            assert level not in tables, f"two tables for {level}"
            tables[level] = []
            continue
        if level is None:
            continue
        row = _ROW.match(line)
        if row:
            key, types, req, since = row.groups()
            tables[level].append(Row(key, tuple(types.split(" or ")), req == "yes", int(since)))
        elif line.strip() and not line.startswith("|"):
            level = None
    return tables


def checker_tables() -> dict[str, list[Row]]:
    roots = [code_schema.CERTIFICATE, code_schema.IMPOSSIBILITY]
    roots += [r.target_schema for r in RULES.values()] + [r.frozen_schema for r in RULES.values()]
    return {level: [Row(k.name, tuple(k.types.split(" or ")), k.required, k.since)
                    for k in s.keys] for level, s in code_schema.schemas(*roots).items()}


def differences(page: dict[str, list[Row]], code: dict[str, list[Row]]) -> list[str]:
    out = [f"level {level!r} is in {'the page' if level in page else 'the checker'} only"
           for level in sorted(set(page) ^ set(code))]
    for level in sorted(set(page) & set(code)):
        if page[level] != code[level]:
            out.append(f"{level}: page {page[level]} != checker {code[level]}")
    return out


@pytest.fixture(scope="module")
def tables() -> dict[str, list[Row]]:
    return document_tables(FORMAT_DOC.read_text(encoding="utf-8"))


def test_the_page_and_the_checker_hold_the_same_tables(tables):
    assert len(tables) >= 35 and all(tables.values())
    assert differences(tables, checker_tables()) == []


@pytest.mark.parametrize("edit", ["row added", "required flipped", "type changed",
                                  "version changed", "table dropped", "rows reordered"])
def test_a_changed_page_is_noticed(edit):
    text = FORMAT_DOC.read_text(encoding="utf-8")
    row = "| `bias` | array or object | yes | 1 |"
    assert row in text
    if edit == "row added":
        text = text.replace(row, row + " numbers |\n| `scale` | array | no | 1 |", 1)
    elif edit == "required flipped":
        text = text.replace(row, "| `bias` | array or object | no | 1 |", 1)
    elif edit == "type changed":
        text = text.replace(row, "| `bias` | array | yes | 1 |", 1)
    elif edit == "version changed":
        text = text.replace(row, "| `bias` | array or object | yes | 2 |", 1)
    elif edit == "table dropped":
        text = text.replace("**Schema: `column mask`**", "Column mask:", 1)
    else:
        text = text.replace("| `gamma` | array or object | yes | 1 |",
                            "| `beta` | array or object | yes | 1 |", 1)
    assert differences(document_tables(text), checker_tables()) != []


# ---------------------------------------------------------------- the documents


@pytest.fixture(scope="module")
def documents() -> dict[str, dict]:
    return corpus.documents()


def test_the_documents_are_valid(documents):
    for name, doc in documents.items():
        v = both(doc)
        assert v.ok, (name, v)


# ---------------------------------------------------------------- where each level stands

_NUMBERS = ("weight", "bias", "gamma", "beta", "lower", "upper", "point", "y", "plus", "minus")
Path_ = tuple[Any, ...]


def _forms(value: Any, path: Path_) -> Iterator[tuple[str, Path_]]:
    """The object forms a number's place may hold (§1): compact numbers, a weight by reference,
    the compact forms of a skip."""
    if not isinstance(value, dict):
        return
    if "den" in value:
        yield "compact numbers", path
    elif "random" in value:
        yield "weight by reference", path
        yield from _record(value["random"], path + ("random",))
    elif "identity" in value:
        yield "identity form", path
    elif "selection" in value:
        yield "selection form", path


def _record(value: Any, path: Path_) -> Iterator[tuple[str, Path_]]:
    yield "draw record", path
    mask = value.get("mask")
    if isinstance(mask, dict):
        yield ("column mask" if "columns" in mask else "Bernoulli mask"), path + ("mask",)


def _source(value: Any, path: Path_) -> Iterator[tuple[str, Path_]]:
    if isinstance(value, dict) and value.get("kind") == "fixed":
        yield "fixed declaration", path
    elif isinstance(value, dict):
        yield from _record(value, path)


def _numbers_and_sources(obj: dict, path: Path_) -> Iterator[tuple[str, Path_]]:
    for key in _NUMBERS:
        if key in obj:
            yield from _forms(obj[key], path + (key,))
    if "source" in obj:
        yield from _source(obj["source"], path + ("source",))


def instances(doc: dict) -> Iterator[tuple[str, Path_]]:
    """(level, path) of every object of ``doc``, as §0–§10 describe where each stands."""
    impossible = doc.get("format") == "exactnorm.impossibility"
    yield ("impossibility document" if impossible else "certificate"), ()
    yield "domain", ("domain",)
    yield from _numbers_and_sources(doc["domain"], ("domain",))
    yield "target", ("target",)
    yield ("impossibility network" if impossible else "network"), ("network",)
    for i, layer in enumerate(doc["target"]["layers"]):
        path = ("target", "layers", i)
        yield f"target layer ({layer.get('kind', 'dense')})", path
        yield from _numbers_and_sources(layer, path)
        if "skip" in layer:
            yield "target skip", path + ("skip",)
            yield from _forms(layer["skip"]["weight"], path + ("skip", "weight"))
    for j, layer in enumerate(doc["network"]["layers"]):
        path = ("network", "layers", j)
        kind = layer.get("kind", "dense")
        yield ("impossibility frozen layer" if impossible else f"frozen layer ({kind})"), path
        yield from _numbers_and_sources(layer, path)
        for t, skip in enumerate(layer.get("skip", [])):
            yield f"{kind} skip", path + ("skip", t)
            yield from _numbers_and_sources(skip, path + ("skip", t))
        if "residual" in layer:
            yield "residual", path + ("residual",)
            yield from _forms(layer["residual"]["weight"], path + ("residual", "weight"))
    for t, _ in enumerate(doc.get("redraws", [])):
        yield "redraws entry", ("redraws", t)
    for key in ("provenance", "witnesses"):
        if key in doc:
            yield key, (key,)
    witness = doc.get("witness")
    if witness is not None:
        kind = witness["kind"]
        level = {"rank": "rank witness", "kink": "kink witness"}.get(kind)
        if kind == "fredholm":
            level = f"Fredholm witness (scale {witness['scale']})"
        if kind == "aligned":
            level = "aligned witness (minor)" if "minor" in witness else "aligned witness (value)"
        yield level, ("witness",)
        yield from _numbers_and_sources(witness, ("witness",))
        if "gradients" in witness:
            yield "gradients", ("witness", "gradients")
            yield from _numbers_and_sources(witness["gradients"], ("witness", "gradients"))


def _at(doc: Any, path: Path_) -> Any:
    for part in path:
        doc = doc[part]
    return doc


def first_instances(documents: dict[str, dict]) -> dict[str, tuple[str, Path_]]:
    """For every level, the first document (in the fixture's order) where it stands and its
    path."""
    found: dict[str, tuple[str, Path_]] = {}
    for name, doc in documents.items():
        for level, path in instances(doc):
            found.setdefault(level, (name, path))
    return found


def test_every_level_of_the_page_stands_in_a_document(tables, documents):
    assert sorted(set(tables) - set(first_instances(documents))) == []


# ---------------------------------------------------------------- the generated cases

#: one value of every JSON type
VALUES = {"integer": 7, "string": "x", "array": [7], "object": {"zz": 7}, "boolean": True,
          "null": None}


class Case(NamedTuple):
    what: str
    key: str
    apply: Any  # the edit of the object (in place); returns an undo


def _set(key: str, value: Any) -> Any:
    def apply(obj: dict) -> Any:
        had, old = key in obj, obj.get(key)
        obj[key] = copy.deepcopy(value)
        return lambda: obj.__setitem__(key, old) if had else obj.pop(key)
    return apply


def _remove(key: str) -> Any:
    def apply(obj: dict) -> Any:
        old = obj.pop(key)
        return lambda: obj.__setitem__(key, old)
    return apply


def cases(level: str, rows: list[Row], every_key: set[str], version: int,
          present: set[str]) -> Iterator[Case]:
    own = {r.key for r in rows}
    for key in sorted({"zz_unknown"} | (every_key - own)):
        yield Case("unknown key", key, _set(key, 1))
    for row in rows:
        if row.required and row.key in present:
            yield Case("missing key", row.key, _remove(row.key))
        for name, value in VALUES.items():
            if name not in row.types:
                yield Case(f"{name} where {' or '.join(row.types)} stands", row.key,
                           _set(row.key, value))
        if row.since > version:
            yield Case(f"a key of version {row.since} in version {version}", row.key,
                       _set(row.key, VALUES[row.types[0]]))


def run_cases(doc: dict, path: Path_, level: str, tables: dict[str, list[Row]],
              follow: frozenset[tuple[str, str]] = frozenset()) -> list[str]:
    """Every case of ``level`` at ``path`` in ``doc`` (edited in place and restored); the cases
    not refused with rule ``format`` naming their key (those of ``follow`` last, marked)."""
    every_key = {r.key for rows in tables.values() for r in rows}
    version = doc["version"] if doc["format"] == "exactnorm.certificate" else 3
    obj = _at(doc, path)
    failures = []
    for case in cases(level, tables[level], every_key, version, set(obj)):
        undo = case.apply(obj)
        try:
            v = both(doc)
        finally:
            undo()
        if v.ok or v.rule != "format" or f'"{case.key}"' not in v.message:
            failures.append((case.key, f"{level} {path}: {case.what} {case.key!r} -> "
                                       f"{v.rule}: {v.message[:160]}"))
    return [text for key, text in failures if (level, key) not in follow] + \
        [f"to follow: {text}" for key, text in failures if (level, key) in follow]


#: (level, key) of cases a reader does not yet refuse naming the key (none: the impossibility
#: reader's version refusal names ``"version"`` as the certificate's does)
TO_FOLLOW: set[tuple[str, str]] = set()


LEVELS = sorted(document_tables(FORMAT_DOC.read_text(encoding="utf-8")))


@pytest.mark.parametrize("level", LEVELS)
def test_every_break_of_a_table_is_refused_naming_its_key(level, tables, documents):
    name, path = first_instances(documents)[level]
    doc = documents[name]
    assert both(doc).ok
    failures = run_cases(doc, path, level, tables, frozenset(TO_FOLLOW))
    assert both(doc).ok  # restored
    assert [f for f in failures if not f.startswith("to follow")] == []
    follow = {key for lev, key in TO_FOLLOW if lev == level}
    if follow:
        assert failures, f"{level}: {sorted(follow)} now pass: remove them from TO_FOLLOW"
        pytest.xfail(f"to follow with the impossibility reader: {failures[0]}")


def test_a_reader_that_stops_closing_a_level_fails_the_cases(tables, documents, monkeypatch):
    """The generated cases catch a reader that no longer closes one level (here a draw record
    that accepts one more key, and one that no longer requires its seed); a page that lists a
    key the reader does not know is caught by the comparison of the tables
    (:func:`test_a_changed_page_is_noticed`)."""
    name, path = first_instances(documents)["draw record"]
    doc = documents[name]
    record = code_schema.DRAW_RECORD
    assert run_cases(doc, path, "draw record", tables) == []
    monkeypatch.setattr(record, "passed", {})  # the shapes that passed: forgotten after
    monkeypatch.setattr(record, "allowed", record.allowed | {"zz_unknown"})
    monkeypatch.setattr(record, "types", dict(record.types, zz_unknown=frozenset({int})))
    assert any("unknown key 'zz_unknown'" in f
               for f in run_cases(doc, path, "draw record", tables))
    monkeypatch.undo()
    monkeypatch.setattr(record, "passed", {})
    monkeypatch.setattr(record, "required_set", record.required_set - {"seed"})
    assert any("missing key 'seed'" in f for f in run_cases(doc, path, "draw record", tables))
