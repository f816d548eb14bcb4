"""Single-entry mutations of valid certificates: every one is rejected, or proven still correct.

A mutation that the checker accepts must really be harmless: we rebuild the mutated frozen network
and target and demand exact equality on box corners and random rational points. Both checker
modes must return the same verdict on every mutant.
"""

from __future__ import annotations

import copy
from fractions import Fraction

import numpy as np
import pytest

from exactnorm import api, checker, checker_flint
from exactnorm.certificate import read_frozen, read_target
from exactnorm.constructions.theorem1 import certify_theorem1
from exactnorm.errors import ExactnormError
from exactnorm.exact.rationals import format_number, parse_number
from tests.helpers import case_target, sample_points

N_DOCS = 6
MUTATIONS_PER_DOC = 40


def numeric_slots(doc):
    """Every mutable numeric location as (kind, path)."""
    slots = []
    for i, L in enumerate(doc["target"]["layers"]):
        slots += [("target W", ("target", "layers", i, "weight", r, c))
                  for r, row in enumerate(L["weight"]) for c in range(len(row))]
        slots += [("target b", ("target", "layers", i, "bias", r)) for r in range(len(L["bias"]))]
    for j, L in enumerate(doc["network"]["layers"]):
        slots += [("gamma", ("network", "layers", j, "gamma", r)) for r in range(len(L["gamma"]))]
        slots += [("beta", ("network", "layers", j, "beta", r)) for r in range(len(L["beta"]))]
        slots += [("V", ("network", "layers", j, "weight", r, c))
                  for r, row in enumerate(L["weight"]) for c in range(len(row))]
    for side in ("lower", "upper"):
        slots += [("domain", ("domain", side, k)) for k in range(len(doc["domain"][side]))]
    return slots


def get_parent(doc, path):
    node = doc
    for key in path[:-1]:
        node = node[key]
    return node, path[-1]


def mutate(doc, rng):
    """One random single-entry mutation; returns (description, mutant)."""
    mut = copy.deepcopy(doc)
    kind = rng.choice(["number", "number", "number", "checkpoint", "activation"])
    if kind == "checkpoint":
        cps = mut["network"]["checkpoints"]
        k = int(rng.integers(0, len(cps)))
        cps[k] += int(rng.choice([-1, 1]))
        return f"checkpoint[{k}]", mut
    if kind == "activation":
        if rng.random() < 0.5:
            L = mut["network"]["layers"][int(rng.integers(0, len(mut["network"]["layers"])))]
        else:
            L = mut["target"]["layers"][int(rng.integers(0, len(mut["target"]["layers"])))]
        L["activation"] = "identity" if L["activation"] == "relu" else "relu"
        return "activation flip", mut
    slots = numeric_slots(mut)
    what, path = slots[int(rng.integers(0, len(slots)))]
    parent, key = get_parent(mut, path)
    old = parse_number(parent[key])
    delta = Fraction(int(rng.choice([-2, -1, 1, 2])), int(rng.choice([1, 3])))
    parent[key] = format_number(old + delta)
    return f"{what} {path}", mut


def harmless(mut) -> bool:
    """Exact evaluation of the mutated pair on corners and random points."""
    try:
        g = read_target(mut)
        f = read_frozen(mut)
    except ExactnormError:
        return False
    return all(f.evaluate(x) == g.evaluate(x) for x in sample_points(g, 8, seed=0))


@pytest.mark.parametrize("i", range(N_DOCS))
def test_mutations_rejected_or_proven_harmless(i):
    g = case_target(20 + i)
    # version 1: the identity and stability rules; version-2 provenance mutants: test_checker_v2
    doc = api.certificate_document(certify_theorem1(g, seed=i, retry=3), version=1)
    assert checker.check_certificate(doc).ok
    rng = np.random.default_rng(i)
    accepted = 0
    for _ in range(MUTATIONS_PER_DOC):
        desc, mut = mutate(doc, rng)
        pure = checker.check_certificate(mut)
        fast = checker_flint.check_certificate(mut)
        assert (pure.ok, pure.rule, pure.layer, pure.neuron) == \
            (fast.ok, fast.rule, fast.layer, fast.neuron), desc
        if pure.ok:
            accepted += 1
            assert harmless(mut), f"checker accepted a harmful mutation: {desc}"
        else:
            assert pure.message, desc
    # nearly all mutations must be caught; accepted ones were proven harmless above. On a box
    # with a coordinate lower = upper (a point box here) many mutations are true claims (the
    # identity rule compares maps on the box), so the count is bounded on full boxes only.
    if all(parse_number(a) < parse_number(b)
           for a, b in zip(doc["domain"]["lower"], doc["domain"]["upper"])):
        assert accepted <= MUTATIONS_PER_DOC // 4


def test_total_mutation_count():
    assert N_DOCS * MUTATIONS_PER_DOC >= 200


def test_mutated_gamma_names_layer():
    doc = api.certificate_document(certify_theorem1(api.demo_target(), seed=0), version=1)
    mut = copy.deepcopy(doc)
    g0 = parse_number(mut["network"]["layers"][2]["gamma"][3])
    mut["network"]["layers"][2]["gamma"][3] = format_number(g0 + 1)
    v = checker.check_certificate(mut)
    assert not v.ok and v.layer in (3, 4)
