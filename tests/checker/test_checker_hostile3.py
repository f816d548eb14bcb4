"""Regression tests for every class of the third hostile round (issue 30), each in both
arithmetics with the same verdict and message: false acceptances through a convolution segment's
input, crashes, amplification the old budget did not see, provenance grinding, messages. The
documents are rebuilt from their descriptions (tests/checker/hostile_round3.py); the sizes of
the round
are measured by benchmarks/bench_hostile.py, here they are the smallest that show the class."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import tests.checker.hostile_round3 as H
from exactnorm import checker, checker_flint
from exactnorm.certificate import certificate_document
from exactnorm.constructions.theorem1 import certify_theorem1
from exactnorm.model.targets import random_target
from tests.helpers import both

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _long_decimals():
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    yield
    sys.set_int_max_str_digits(old)


def refused(doc: Any, rule: str, words: str, seconds: float = 10, **kw: Any) -> None:
    t0 = time.perf_counter()
    v = both(doc, **kw)
    assert (v.ok, v.rule) == (False, rule) and words in v.message, v
    assert time.perf_counter() - t0 < seconds


def standalone(doc: dict, tmp_path: Path) -> subprocess.CompletedProcess:
    path = tmp_path / "c.json"
    with H._digits():
        path.write_text(json.dumps(doc))
    return subprocess.run([sys.executable, "-m", "exactnorm.checker", str(path)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


def _redrawn() -> dict:
    c = certify_theorem1(random_target([1, 3], seed=0), seed=4, distribution="int:1")
    return certificate_document(c)


# ------------------------------------------------------------------ false acceptance


@pytest.mark.parametrize("variant", ["patch", "larger", "smaller"])
def test_a_later_layer_reading_the_segment_input_is_refused(variant, tmp_path):
    """C′ equal to the patch size: both arithmetics said VALID for a wrong network; C′ larger or
    smaller: one said VALID, the other crashed (exit 3, a traceback from the standalone
    checker)."""
    refused(H.reads_segment_input(variant), "segment", "reads node 0, the input of the "
                                                       "convolution segment")
    res = standalone(H.reads_segment_input(variant), tmp_path)
    assert res.returncode == 1 and res.stdout.startswith("INVALID [segment]"), res
    assert "Traceback" not in res.stderr


def test_the_same_false_acceptance_with_every_matrix_drawn_by_seed():
    refused(H.reads_segment_input_drawn(), "segment", "network layer 2 reads node 0")


# ------------------------------------------------------------------ crashes


def test_a_short_redraw_kernel_is_refused_before_indexing(tmp_path):
    doc = _redrawn()
    doc["redraws"][0]["kernel"] = doc["redraws"][0]["kernel"][:1]
    refused(doc, "provenance", "must be nonzero with 3 entries, got 1")
    res = standalone(doc, tmp_path)
    assert res.returncode == 1 and "Traceback" not in res.stderr


def test_a_pair_second_matrix_is_the_next_layer_not_any_record():
    """The pair's second matrix came from any record with the right key (here a skip with
    fewer columns than the first matrix has rows: an IndexError); now the structure decides, and
    the skip's key is the key of its own position or refused."""
    doc = _redrawn()
    L1, L2 = doc["network"]["layers"]
    m = L1["weight"]["random"]["shape"][0]
    rec = dict(copy.deepcopy(L2["weight"]["random"]), shape=[m, 1])
    L1["skip"] = [{"from": 0, "kind": "random", "weight": {"random": rec}}]
    refused(doc, "provenance", "is not the key of its position")


def test_a_long_box_denominator_is_not_multiplied_into_every_position():
    """A 200,000-digit box denominator and a convolution of 4,096 positions: FLINT built
    channels × positions copies of it (3.3 GB, SIGABRT under a 2 GB cap). Both arithmetics now
    check it within 1 GiB of address space."""
    code = ("import json, resource, sys; resource.setrlimit(resource.RLIMIT_AS, (1 << 30,) * 2);"
            "sys.set_int_max_str_digits(0);"
            "from exactnorm import checker, checker_flint;"
            "doc = json.loads(sys.stdin.read());"
            "a, b = checker_flint.check_certificate(doc), checker.check_certificate(doc);"
            "print(a.ok, b.ok, a == b)")
    with H._digits():
        text = json.dumps(H.big_denominator_conv_box())
    res = subprocess.run([sys.executable, "-c", code], input=text, capture_output=True,
                         text=True, cwd=ROOT, timeout=300)
    assert res.stdout.split() == ["True", "True", "True"], res.stderr[-2000:]


# ------------------------------------------------------------------ amplification


def test_a_padded_convolution_of_64_million_positions_is_refused_at_once():
    refused(H.patch_box_family(), "limit", "64016001 positions exceed this checker's limit")


def test_the_next_box_of_a_convolution_is_bounded():
    refused(H.next_box_of_convolution(), "limit", "positions exceed this checker's limit")
    # below the entry limit, its number sizes: a long box denominator times every position
    refused(H.next_box_number_sizes(digits=50_000, pad=60), "limit",
            "target layer 1: its box would hold")


def test_pooling_segments_are_counted():
    doc = H.pooling_segments(layers=3, pad=100)
    v = both(doc)
    assert v.ok
    positions = 201 * 201
    assert v.facts["work"] >= 3 * positions * 64  # every pooling box entry costs a step
    v = both(doc, max_work=v.facts["work"] - 1)
    assert (v.ok, v.rule, v.layer) == (False, "limit", None) and "target layer" in v.message


def test_redraw_proofs_are_counted_before_they_are_verified(monkeypatch):
    doc = _redrawn()
    calls: list[int] = []
    for ar in (checker.arithmetic.PureArithmetic, checker_flint.FlintArithmetic):
        vanishes = ar.vanishes
        monkeypatch.setattr(ar, "vanishes", lambda self, *a, f=vanishes: calls.append(1)
                            or f(self, *a))
    refused(doc, "limit", "units of work", max_work=10)
    assert calls == []
    assert both(doc).ok and len(calls) == 4  # two proofs, in each arithmetic
    old = H.redraw_checks_before_budget(attempts=20, pad=1000)  # the round's 843-byte file
    refused(old, "format", 'key "redraws" needs version 3')  # a version-2 document
    del old["redraws"]
    refused(old, "segment", "is a conv layer inside the dense segment")


def test_stream_words_of_a_record_are_bounded():
    refused(H.regeneration_words(), "provenance", "stream words, above the limit")


def test_a_compact_denominator_over_a_wide_domain_is_not_copied():
    refused(H.compact_denominator_domain(width=200_000, digits=9000), "limit",
            "domain: the box would hold 2 x 200000 numbers")


def test_wide_layers_by_reference_are_refused_by_the_default_budget():
    refused(H.wide_by_reference(1024), "limit", "units of work")


def test_a_box_with_long_coprime_denominators_is_fast_and_its_messages_cheap():
    """8 inputs with distinct 100,000-bit denominators (their product: 800,000 bits): the
    verdict, and the messages of an unstable neuron or a wrong bias, in seconds (the messages
    reduced a fraction of the product: minutes)."""
    assert both(H.big_denominator_box(100_000)).ok
    refused(H.big_denominator_box(100_000, unstable=True), "stability",
            "(800001-bit integer)", seconds=20)
    refused(H.big_denominator_box(100_000, wrong_bias=True), "identity",
            "pre-activation bias [0] is 0, target layer 1 has 1/3", seconds=20)


# ------------------------------------------------------------------ grinding


def test_ground_key_parts_are_refused():
    doc = certificate_document(certify_theorem1(random_target((1, 1), seed=0), seed=0))
    assert both(doc).ok
    for part, value in ((1, 60490), (2, 5)):
        ground = copy.deepcopy(doc)
        ground["network"]["layers"][0]["weight"]["random"]["key"][part] = value
        refused(ground, "provenance", "is not the key of its position")
    fifth = copy.deepcopy(doc)
    fifth["network"]["layers"][1]["weight"]["random"]["key"].append(0)
    refused(fifth, "provenance", "is not the key of its position")


def test_redraws_of_systems_singular_at_every_attempt_are_refused():
    refused(H.redrawn_nonsquare(209), "redraw", "nor square")
    refused(H.redrawn_pair_m_not_cd(40), "redraw", "with m = c*d")
    # version 2 does not bind keys to positions and has no redraws section: without it the
    # document is accepted, but the verdict claims no redraw
    old = H.redrawn_nonsquare(209, version=2)
    refused(old, "format", 'key "redraws" needs version 3')
    del old["redraws"]
    v = both(old)
    assert v.ok and "not bound to positions" in v.message and "redraw" not in v.message


def test_the_verdict_says_which_seed_rule_holds_and_how_much_a_draw_carries():
    """A 1 × 3 matrix of a seed the writer chose: 12 bits, one seed in 4,096."""
    doc = H.document([0, 0, 0], [1, 1, 1], [{"weight": H.nonzero_draw(7, [1, 1, 0, 0], 1, 3),
                                             "bias": [0], "activation": "identity"}],
                     [H._drawn_layer(0, [1, 1, 0, 0], [1, 3], [1], [0], "identity", seed=7)],
                     [1], version=3)
    v = both(doc)
    assert v.ok and v.facts["seed_rule"] == "chosen" and v.facts["smallest_draw_bits"] == 12
    assert "seed 7 (chosen by the writer)" in v.message and "at least 12 bits" in v.message


def test_all_zero_draws_are_not_called_random():
    v = both(H.zero_draw())
    assert v.ok and "no random frozen matrix" in v.message and v.facts["regenerated"] == 0
