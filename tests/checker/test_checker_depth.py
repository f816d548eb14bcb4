"""Both checkers at depth (issue 14): trade-off certificates with long identity-skip chains and
compact 0/1 skips, checked with identical verdicts, and hostile edits of exactly those parts
refused identically; the flint checker's column pieces and denominator reduction compared with
plain ``Fraction`` arithmetic written here."""

from __future__ import annotations

import copy
import math
from fractions import Fraction
from typing import Any

import pytest
from flint import fmpz, fmpz_mat
from hypothesis import given
from hypothesis import strategies as st

from exactnorm import checker, checker_flint
from exactnorm.certificate import certificate_document, expand_skip
from exactnorm.checker import budget, provenance, regenerate
from exactnorm.checker.arithmetic import PureArithmetic
from exactnorm.checker.kinds import window
from exactnorm.checker_flint import arithmetic as flint_arithmetic
from exactnorm.constructions.tradeoff import certify_tradeoff
from exactnorm.model.targets import random_target
from tests.helpers import both

# ------------------------------------------------------------------ a deep certificate


@pytest.fixture(scope="module")
def deep_doc() -> dict[str, Any]:
    """24-8-3, block 1, selection routing: 73 + 25 frozen layers in two segments."""
    g = random_target((24, 8, 3), seed=5, box=(Fraction(0), Fraction(1)))
    return certificate_document(certify_tradeoff(g, block=1, seed=2))


def test_deep_tradeoff_certificate_is_valid_for_both(deep_doc):
    v = both(deep_doc)
    assert v.ok, v.message
    assert v.facts["frozen_layers"] == 3 * 24 + 1 + 3 * 8 + 1
    skips = [s["weight"] for L in deep_doc["network"]["layers"] for s in L.get("skip", [])]
    assert {"identity"} in [set(w) for w in skips]
    assert {"selection", "columns"} in [set(w) for w in skips]


def _layers_with_skip(doc: dict[str, Any], kind: str) -> list[int]:
    return [j for j, L in enumerate(doc["network"]["layers"])
            if any(s["kind"] == kind for s in L.get("skip", []))]


def _edit(doc: dict[str, Any], kind: str, position: int, change: Any) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    j = _layers_with_skip(out, kind)[position]
    skip = next(s for s in out["network"]["layers"][j]["skip"] if s["kind"] == kind)
    change(skip)
    return out


def _shift_selection(skip: dict[str, Any]) -> None:
    sel = skip["weight"]["selection"]
    sel[0] = (sel[0] + 1) % skip["weight"]["columns"]


EDITS = {
    # another input coordinate routed into block 5: the sum is another map (rule identity)
    "routes another column": ("selection", 5, _shift_selection, "identity"),
    "selection out of range": ("selection", 2, lambda s: s["weight"]["selection"].__setitem__(
        0, s["weight"]["columns"]), "shape"),
    "selection negative": ("selection", 2, lambda s: s["weight"]["selection"].__setitem__(
        0, -1), "shape"),
    "selection index is a bool": ("selection", 2, lambda s: s["weight"]["selection"].__setitem__(
        0, True), "shape"),
    "selection too short": ("selection", 2, lambda s: s["weight"]["selection"].pop(), "shape"),
    "columns wrong": ("selection", 0, lambda s: s["weight"].__setitem__("columns", 23), "shape"),
    "identity of the wrong size": ("identity", 3, lambda s: s["weight"].__setitem__(
        "identity", 9), "shape"),
    "identity declared selection": ("identity", 3, lambda s: s.__setitem__("kind", "selection"),
                                    "skip"),
    "selection declared identity": ("selection", 3, lambda s: s.__setitem__("kind", "identity"),
                                    "skip"),
    "compact skip with a source": ("identity", 1, lambda s: s.__setitem__(
        "source", {"kind": "fixed", "why": "x"}), "provenance"),
    "extra key": ("identity", 1, lambda s: s["weight"].__setitem__("scale", 2), "format"),
    "identity written out, one entry off": ("identity", 4, lambda s: s.__setitem__(
        "weight", [[int(r == c and r > 0) for c in range(8)] for r in range(8)]), "skip"),
    # the accumulator skipped: block 6's contribution is lost (rule identity)
    "accumulator from an earlier node": ("identity", 6, lambda s: s.__setitem__(
        "from", s["from"] - 3), "identity"),
}


@pytest.mark.parametrize("name", sorted(EDITS))
def test_hostile_edits_of_skips_refused_identically(deep_doc, name):
    kind, position, change, rule = EDITS[name]
    v = both(_edit(deep_doc, kind, position, change))
    assert not v.ok and v.rule == rule, (name, v)


@pytest.mark.parametrize("part", ["gamma", "beta"])
def test_one_block_numerator_off_is_refused_identically(deep_doc, part):
    for j in (1, 40, 72, 80):  # hidden and output layers of blocks in both segments
        doc = copy.deepcopy(deep_doc)
        vec = doc["network"]["layers"][j][part]
        vec["num"][0] = str(int(vec["num"][0]) + 1)
        v = both(doc)
        assert not v.ok and v.rule in ("identity", "stability"), (j, part, v)


def test_expanded_skips_give_the_same_verdicts(deep_doc):
    doc = copy.deepcopy(deep_doc)
    for L in doc["network"]["layers"]:
        for s in L.get("skip", []):
            s["weight"] = expand_skip(s["weight"])
    v = both(doc)
    assert v.ok and v.message == checker.check_certificate(deep_doc).message


# ------------------------------------------------------------------ column pieces


def _dense(node: Any, rows: int, width: int) -> tuple[list[list[Fraction]], list[Fraction]]:
    pieces, cn, cden, support = node
    assert support >= {t for cols, _, _ in pieces for t in cols}
    A = [[Fraction(0)] * width for _ in range(rows)]
    for cols, M, den in pieces:
        for r, row in enumerate(M.tolist()):
            for t, x in zip(cols, row):
                A[r][t] += Fraction(int(x), int(den))
    return A, [Fraction(int(x), int(cden)) for x in cn.entries()]


@st.composite
def piece_maps(draw: Any, rows: int, width: int) -> Any:
    """A map of pieces on disjoint column sets, each with its own denominator.

    Shrinks towards fewer, smaller pieces with denominator 1."""
    columns = draw(st.permutations(range(width)))
    cuts = sorted(draw(st.lists(st.integers(0, width), max_size=3)))
    pieces = []
    for a, b in zip([0, *cuts], [*cuts, draw(st.integers(0, width))]):
        cols = sorted(columns[a:b])
        if not cols:
            continue
        entries = draw(st.lists(st.integers(-20, 20), min_size=rows * len(cols),
                                max_size=rows * len(cols)))
        pieces.append((cols, fmpz_mat(rows, len(cols), entries), fmpz(draw(st.integers(1, 12)))))
    consts = draw(st.lists(st.integers(-20, 20), min_size=rows, max_size=rows))
    support = frozenset(t for cols, _, _ in pieces for t in cols)
    return pieces, fmpz_mat(rows, 1, consts), fmpz(draw(st.integers(1, 12))), support


@given(st.data())
def test_adding_piece_maps_is_adding_matrices(data):
    rows, width = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 6))
    m1, m2 = data.draw(piece_maps(rows, width)), data.draw(piece_maps(rows, width))
    total = checker_flint.FlintArithmetic().add(m1, m2)
    (A1, c1), (A2, c2) = _dense(m1, rows, width), _dense(m2, rows, width)
    assert _dense(total, rows, width) == (
        [[x + y for x, y in zip(r1, r2)] for r1, r2 in zip(A1, A2)],
        [x + y for x, y in zip(c1, c2)])
    seen = [t for cols, _, _ in total[0] for t in cols]
    assert len(seen) == len(set(seen))  # pieces stay on disjoint columns
    # the materialized checkpoint form denotes the same map
    cols, A, consts, den = checker_flint.FlintArithmetic().plain(total)
    dense_A, dense_c = _dense(total, rows, width)
    assert [[Fraction(A[r][cols.index(t)], den) if t in cols else Fraction(0)
             for t in range(width)] for r in range(rows)] == dense_A
    assert [Fraction(x, den) for x in consts] == dense_c


@given(st.lists(st.integers(-50, 50), min_size=1, max_size=8), st.integers(1, 400))
def test_reduced_piece_is_in_lowest_common_terms(entries, den):
    piece = ([0], fmpz_mat(len(entries), 1, entries), fmpz(den))
    out = flint_arithmetic._reduced(piece)
    if not any(entries):
        assert out is None
        return
    _, A, d = out
    assert [Fraction(int(x), int(d)) for x in A.entries()] == [Fraction(x, den) for x in entries]
    smallest = math.lcm(*(Fraction(x, den).denominator for x in entries))
    assert d == smallest
    # the pure checker's reduction agrees
    pure = PureArithmetic().reduced(([0], [[x] for x in entries], [0] * len(entries), den))
    assert pure[3] == smallest


# ------------------------------------------------------------------ progress


def test_progress_reports_every_layer_and_cannot_change_the_verdict(deep_doc):
    from exactnorm import api

    for pure in (True, False):
        seen: list[tuple[int, int]] = []
        v = api.check(deep_doc, pure=pure, progress=lambda d, t, seen=seen: seen.append((d, t)))
        assert v == api.check(deep_doc, pure=pure)
        total = len(deep_doc["network"]["layers"])
        assert seen[-1] == (total, total) and all(t == total for _, t in seen)
        assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_cli_check_prints_plain_progress_off_a_terminal(deep_doc, tmp_path, capsys, monkeypatch):
    from exactnorm.certificate import save_certificate
    from exactnorm.cli import main

    monkeypatch.setattr("exactnorm.commands._common.PLAIN_PROGRESS_SECONDS", 0)
    path = tmp_path / "deep.json.gz"
    save_certificate(deep_doc, path)
    assert main(["check", str(path), "--both"]) == 0
    err = capsys.readouterr().err
    assert "check (pure): 98/98 frozen layers" in err
    assert "check (flint): 98/98 frozen layers" in err
    assert "nan" not in err  # no ETA before the first layer is done


@pytest.mark.parametrize("limit", [4, 8, 40, 100, 150, 191, 192, 10_000])
def test_map_size_limit_counts_the_same_columns_in_both_checkers(deep_doc, monkeypatch, limit):
    """Rule ``limit`` is a resource bound, counted on the map's columns: the flint checker's
    pieces must count exactly the pure checker's columns (the accumulator reaches 8 × 24)."""
    for module in (budget, provenance, window, regenerate):
        monkeypatch.setattr(module, "MAX_MAP_ENTRIES", limit)
    v = both(deep_doc)
    assert v.ok == (limit >= 8 * 24), v
    if not v.ok:  # the same bound also refuses draw records above it (8 × 8 = 64 entries)
        assert v.rule == ("limit" if limit >= 64 else "provenance"), v
