"""Regression tests for the amplification classes of issue 38 (documents rebuilt by
tests/checker/hostile_round4.py at the smallest sizes that show each class; the real sizes are
rows of benchmarks/bench_hostile.py): witness checks and the reading of explicit matrices are
bounded and counted before they run, in the units of the walk, with the same verdict from both
arithmetics."""

from __future__ import annotations

import pytest

import tests.checker.hostile_round3 as H
import tests.checker.hostile_round4 as H4
from exactnorm.checker import budget, impossibility, modular, numbers, provenance
from exactnorm.checker_flint import linear
from tests.helpers import both, refused


def _det_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record every modular determinant either arithmetic computes."""
    calls: list[int] = []
    for cls in (modular.PureLinear, linear.FlintLinear):
        real = cls.det_mod
        monkeypatch.setattr(cls, "det_mod", lambda self, rows, p, real=real:
                            calls.append(len(rows)) or real(self, rows, p))
    return calls


def test_a_rank_minor_is_counted_in_the_units_of_the_walk():
    """A valid rank witness's work includes its determinant's packed elimination
    (``budget.det_mod_cost``, cubic in the minor) while the document grows linearly."""
    small, large = both(H4.rank_minor(20)), both(H4.rank_minor(40))
    assert small.ok and large.ok and large.facts["witness"] == "rank", large.message
    bits = H4.PRIME.bit_length()
    assert large.facts["work"] - small.facts["work"] >= \
        budget.det_mod_cost(40, bits) - budget.det_mod_cost(20, bits)
    assert budget.det_mod_cost(800, bits) > 6 * budget.det_mod_cost(400, bits)  # cubic
    assert large.facts["work_budget"] == small.facts["work_budget"] == 5 * 10**9


def test_the_determinant_is_refused_before_it_is_computed(monkeypatch):
    calls = _det_calls(monkeypatch)
    monkeypatch.setattr(impossibility, "det_mod_cost", lambda n, pbits: 10**16)
    v = refused(H4.rank_minor(20), "limit", "20 x 20 minor")
    assert "units of work" in v.message and calls == []


def test_a_4095_wide_minor_is_refused_before_anything_is_regenerated(monkeypatch):
    """The 55 KB document of issue 38 whose minor would take hours under --pure: refused by the
    default budget at once, no matrix regenerated, no determinant computed."""
    calls = _det_calls(monkeypatch)
    drawn: list[int] = []
    regen = provenance.regenerate_integers
    monkeypatch.setattr(provenance, "regenerate_integers",
                        lambda *a, **k: drawn.append(1) or regen(*a, **k))
    v = refused(H4.rank_minor(4095), "limit", "4095 x 4095 minor")
    assert "5,000,000,000 units" in v.message and calls == [] and drawn == []


@pytest.mark.parametrize("build", [H4.explicit_map, H4.explicit_given],
                         ids=["certificate", "impossibility"])
def test_an_explicit_map_above_the_limit_is_refused_before_it_is_read(monkeypatch, build):
    """An explicit n × n matrix with more entries than one structure may hold is refused by
    rule ``limit`` before a single entry is converted (a small limit makes n small)."""
    converted: list[int] = []
    real = numbers.integer
    monkeypatch.setattr(numbers, "integer",
                        lambda *a, **k: converted.append(1) or real(*a, **k))
    monkeypatch.setattr(numbers, "MAX_MAP_ENTRIES", 40 * 40 - 1)
    doc = build(40)
    refused(doc, "limit", "40 x 40 entries")
    # everything converted before the refusal is the box, the target and the witness's
    # point: never the 1,600 entries of the map
    assert len(converted) < 2 * 1600
    monkeypatch.setattr(numbers, "MAX_MAP_ENTRIES", 40 * 40)  # at the limit: read
    assert "40 x 40 entries" not in both(doc).message


def test_a_long_vector_is_refused_before_it_is_read(monkeypatch):
    monkeypatch.setattr(numbers, "MAX_MAP_ENTRIES", 99)
    refused(H.compact_denominator_domain(width=100, digits=30), "limit", "100 entries")


def test_strict_parsing_without_the_integer_hook_keeps_the_digit_limit():
    """The parser calls a hook per integer only when some run of digits passes the limit; a
    long run inside a string is no integer literal, a long literal is still refused."""
    doc = H4.rank_minor(3)
    doc["network"]["layers"][0]["source"] = None
    text = numbers.json.dumps(doc).replace('"source": null', '"source": {"kind": "fixed", '
                                           '"why": "' + "7" * 50 + '"}')
    assert both(text, max_digits=40).rule == "provenance"  # parsed: the record has a source
    long_literal = text.replace('"prime": ', '"prime": ' + "1" * 41 + "0 * ", 1)
    assert both(long_literal.replace(" * ", ""), max_digits=40).rule == "number"


def test_a_pooling_chain_is_answered_in_both_arithmetics():
    """The 40-layer pooling chain at a size that shows the class: boxes of every position
    computed by strided slices, counted, the same verdict from both arithmetics."""
    v = both(H.pooling_segments(layers=6, pad=60))
    assert v.ok and v.facts["pooling"] == 6, v.message
    v = both(H.pooling_segments(layers=6, pad=60), max_work=v.facts["work"] // 2)
    assert (v.ok, v.rule) == (False, "limit")
