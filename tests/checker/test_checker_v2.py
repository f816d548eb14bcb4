"""Version-2 certificates in both checkers: frozen weights regenerated from draw records
(docs/certificate-format.md), compact ``{"den", "num"}`` numbers, the rule ``provenance`` and the
verdict that names what was proven.

The version-2 certificates are built here from a real Theorem-1 construction: its frozen
matrices are checked against the reference regenerator (``exactnorm.checker.regenerate``) and then
replaced by their records (by reference) or kept with their records (explicit). Every mutant
of issue 15.4 must be refused with rule ``provenance`` by both checkers
with identical verdicts.
"""

from __future__ import annotations

import copy
import math
from fractions import Fraction

import pytest

from exactnorm import api, checker
from exactnorm.checker.regenerate import regenerate_integers
from exactnorm.constructions.theorem1 import certify_theorem1
from exactnorm.exact.rationals import format_number, parse_number
from exactnorm.model.targets import random_target
from tests.helpers import both


def v2_documents(seed: int) -> tuple[dict, dict]:
    """(by reference, explicit with sources) for a 3-3-2 relu/identity target.

    The construction records the draw of every frozen matrix; the documents are the version-1
    document with plain lists (allowed in version 2) whose weights are replaced by their records
    (by reference) or kept next to them (explicit). The writer's own version-2 documents of the
    same construction must check too.
    """
    g = random_target((3, 3, 2), seed=5, activations=["relu", "identity"])
    c = certify_theorem1(g, seed=seed)
    doc = api.certificate_document(c, version=1)
    records = [layer.record for layer in c.network.layers]
    doc["version"] = 2
    by_ref, explicit = copy.deepcopy(doc), copy.deepcopy(doc)
    layers = doc["network"]["layers"]
    assert len(layers) == len(records) == 4
    for j, (layer, rec) in enumerate(zip(layers, records)):
        assert layer["weight"] == regenerate_integers(rec)  # the draw is what was used
        by_ref["network"]["layers"][j]["weight"] = {"random": rec}
        explicit["network"]["layers"][j]["source"] = rec
    for mode in ("reference", "explicit"):
        assert both(api.certificate_document(c, version=2, frozen_weights=mode)).ok
    return by_ref, explicit


@pytest.fixture(scope="module")
def docs() -> dict[int, tuple[dict, dict]]:
    return {seed: v2_documents(seed) for seed in (0, 1)}


def test_v2_by_reference_and_explicit_are_valid_and_say_what_was_proven(docs):
    by_ref, explicit = docs[0]
    for doc in (by_ref, explicit):
        v = both(doc)
        assert v.ok, v
        assert v.facts["regenerated"] == 4 and v.facts["explicit"] == 0
        assert v.facts["seed"] == 0 and v.facts["version"] == 2
        assert v.facts["target_widths"] == [3, 3, 2] and v.facts["dimension"] == 3
        assert "4 frozen matrices regenerated from seed 0" in v.message
        assert "for target 3-3-2" in v.message and "theorem1" in v.message
    # version 1 of the same proof: nothing regenerated, everything explicit
    v1 = copy.deepcopy(explicit)
    v1["version"] = 1
    for layer in v1["network"]["layers"]:
        layer.pop("source")
    v = both(v1)
    assert v.ok and v.facts["regenerated"] == 0 and v.facts["explicit"] == 4


def verdict_of_mutant(doc: dict) -> checker.Verdict:
    v = both(doc)
    assert not v.ok
    return v


def test_rescaled_row_with_halved_gamma_is_refused(docs):
    """f = g still holds (row ×2, γ_k / 2), but the matrix is no longer the seeded draw."""
    _, explicit = docs[0]
    mut = copy.deepcopy(explicit)
    layer = mut["network"]["layers"][0]
    assert both(mut).ok
    layer["weight"][1] = [2 * x for x in layer["weight"][1]]
    layer["gamma"][1] = format_number(parse_number(layer["gamma"][1]) / 2)
    # the claim itself is still true: version 1 (no provenance) accepts it
    as_v1 = copy.deepcopy(mut)
    as_v1["version"] = 1
    for L in as_v1["network"]["layers"]:
        L.pop("source")
    assert both(as_v1).ok
    v = verdict_of_mutant(mut)
    assert (v.rule, v.layer, v.neuron) == ("provenance", 1, 1)
    assert "network layer 1: weight[1][0]" in v.message and "draw record gives" in v.message


def test_flipped_entry_is_refused(docs):
    _, explicit = docs[0]
    mut = copy.deepcopy(explicit)
    mut["network"]["layers"][1]["weight"][0][2] *= -1
    if mut["network"]["layers"][1]["weight"][0][2] == 0:
        mut["network"]["layers"][1]["weight"][0][2] = 1
    v = verdict_of_mutant(mut)
    assert (v.rule, v.layer, v.neuron) == ("provenance", 2, 0)
    assert "weight[0][2]" in v.message


@pytest.mark.parametrize("form", [0, 1], ids=["by-reference", "explicit"])
def test_hybrid_of_two_seeds_is_refused(docs, form):
    """Segment 1 from the seed-0 certificate, segment 2 from the seed-1 one: each segment is a
    true proof, but the frozen network is no single seeded draw."""
    hybrid = copy.deepcopy(docs[0][form])
    hybrid["network"]["layers"][2:] = copy.deepcopy(docs[1][form]["network"]["layers"][2:])
    v = verdict_of_mutant(hybrid)
    assert (v.rule, v.layer) == ("provenance", 3)
    assert "seed 1" in v.message and "seed 0" in v.message


def test_record_naming_another_seed_is_refused(docs):
    _, explicit = docs[0]
    mut = copy.deepcopy(explicit)
    for layer in mut["network"]["layers"]:
        layer["source"]["seed"] = 1
    v = verdict_of_mutant(mut)
    assert (v.rule, v.layer) == ("provenance", 1)
    assert "draw record gives" in v.message


def test_v2_weight_without_record_or_declaration_is_refused(docs):
    _, explicit = docs[0]
    mut = copy.deepcopy(explicit)
    mut["network"]["layers"][2].pop("source")
    v = verdict_of_mutant(mut)
    assert (v.rule, v.layer) == ("provenance", 3)
    assert "neither a draw record nor a fixed declaration" in v.message
    # declared fixed, it is accepted and counted as given explicitly
    mut["network"]["layers"][2]["source"] = {"kind": "fixed", "why": "a test says so: 10/3"}
    v = both(mut)
    assert v.ok and v.facts["regenerated"] == 3 and v.facts["explicit"] == 1


def test_repeated_stream_key_is_refused(docs):
    by_ref, _ = docs[0]
    mut = copy.deepcopy(by_ref)
    rec = mut["network"]["layers"][0]["weight"]["random"]
    mut["network"]["layers"][2]["weight"] = {"random": copy.deepcopy(rec)}
    v = verdict_of_mutant(mut)
    assert v.rule in ("provenance", "shape") and v.layer == 3


def test_malformed_record_is_refused_with_the_layer(docs):
    by_ref, _ = docs[0]
    mut = copy.deepcopy(by_ref)
    mut["network"]["layers"][1]["weight"]["random"]["generator"] = "numpy"
    v = verdict_of_mutant(mut)
    assert (v.rule, v.layer) == ("provenance", 2) and "unknown generator" in v.message


def test_random_skip_needs_a_record():
    """A version-2 certificate with a random skip and no record: refused."""
    doc = {"format": "exactnorm.certificate", "version": 2,
           "domain": {"lower": [0], "upper": [1]},
           "target": {"layers": [{"weight": [[3]], "bias": [0], "activation": "identity"}]},
           "network": {"layers": [
               {"input": 0, "weight": [[1]], "gamma": [1], "beta": [0], "activation": "relu",
                "source": {"kind": "fixed", "why": "identity"}},
               {"input": 1, "weight": [[1]], "gamma": [1], "beta": [0], "activation": "identity",
                "source": {"kind": "fixed", "why": "identity"},
                "skip": []}],
               "checkpoints": [2]}}
    doc["target"]["layers"][0]["weight"] = [[1]]
    assert both(doc).ok
    doc["target"]["layers"][0]["weight"] = [[3]]
    doc["network"]["layers"] = [
        doc["network"]["layers"][0],
        {"input": 1, "weight": [[1]], "gamma": [1], "beta": [0], "activation": "identity",
         "source": {"kind": "fixed", "why": "identity"},
         "skip": [{"from": 0, "weight": [[2]], "kind": "random"}]},
        {"input": 2, "weight": [[1]], "gamma": [1], "beta": [0], "activation": "identity",
         "source": {"kind": "fixed", "why": "identity"}}]
    doc["network"]["checkpoints"] = [3]
    v = both(doc)
    assert (v.rule, v.layer) == ("provenance", 2) and "skip 0" in v.message
    as_v1 = copy.deepcopy(doc)
    as_v1["version"] = 1
    assert both(as_v1).ok  # the same claim without the provenance rule


def test_compact_numbers_read_as_their_values(docs):
    by_ref, _ = docs[0]
    compact = copy.deepcopy(by_ref)
    for layer in compact["network"]["layers"]:
        values = [Fraction(parse_number(x)) for x in layer["gamma"]]
        den = math.lcm(*(x.denominator for x in values))
        layer["gamma"] = {"den": str(den), "num": [str(int(x * den)) for x in values]}
    compact["domain"]["upper"] = {"den": 2, "num": [2 * int(parse_number(x))
                                                    for x in by_ref["domain"]["upper"]]}
    a, b = both(compact), both(by_ref)
    assert (a.ok, a.rule, a.message) == (b.ok, b.rule, b.message)
    assert {k: v for k, v in a.facts.items() if not k.startswith("work")} == \
        {k: v for k, v in b.facts.items() if not k.startswith("work")}
    bad = copy.deepcopy(compact)
    bad["network"]["layers"][0]["gamma"]["den"] = 0
    v = verdict_of_mutant(bad)
    assert v.rule == "number" and "gamma.den" in v.message
    bad["network"]["layers"][0]["gamma"] = {"den": 1, "num": ["1/2"] * 9}
    assert verdict_of_mutant(bad).rule == "number"
    bad["network"]["layers"][0]["gamma"] = {"den": 1, "nums": []}
    v = verdict_of_mutant(bad)
    assert v.rule == "format" and 'unknown key "nums"' in v.message
