"""Width/depth trade-off (docs/constructions.md): round trips for every block size and both
routings, the structure of the blocks (each system sees only its block), exact f = g,
mutations, CLI options.

Independent paths: both checkers (standard library and python-flint) must agree on every
certificate; block systems are re-derived here from the certificate's frozen matrices (their
realized matrices recomputed entry by entry in Fractions) and must sum to the target.
"""

from __future__ import annotations

import copy
from fractions import Fraction

import numpy as np
import pytest

from exactnorm import api
from exactnorm.certificate import read_frozen
from exactnorm.cli import main
from exactnorm.constructions.tradeoff import certify_tradeoff, input_blocks
from exactnorm.errors import InputError
from exactnorm.exact.linalg import to_fractions
from exactnorm.exact.rationals import format_number, parse_number
from exactnorm.model.network import TargetNetwork
from exactnorm.model.targets import random_target
from tests.helpers import case_target, fmpq_to_fraction, sample_points

ROUTINGS = ("selection", "mask")


def checked(doc):
    fast, pure = api.check(doc), api.check(doc, pure=True)
    assert fast == pure, (fast, pure)
    return fast


def random_case(i: int) -> TargetNetwork:
    """Target ``i``: widths 1–5, depth 1–3; every third has a rank-one first layer u vᵀ."""
    rng = np.random.default_rng(900 + i)
    depth = int(rng.integers(1, 4))
    widths = [int(w) for w in rng.integers(1, 6, size=depth + 1)]
    acts = [str(a) for a in rng.choice(["relu", "identity"], size=depth)]
    g = random_target(widths, seed=i, activations=acts, box=(Fraction(-2), Fraction(1, 3)))
    if i % 3:
        return g
    weights = [to_fractions(layer.weight) for layer in g.layers]
    u = [Fraction(int(x), 2) for x in rng.integers(-3, 4, size=widths[1])]
    v = [Fraction(int(x)) for x in rng.integers(-3, 4, size=widths[0])]
    weights[0] = [[a * b for b in v] for a in u]
    biases = [[fmpq_to_fraction(x) for x in layer.bias] for layer in g.layers]
    return TargetNetwork.from_lists(weights, biases, acts, lower=g.lower, upper=g.upper)


def expected_depth(d_in: int, k: int, routing: str) -> int:
    t = len(input_blocks(d_in, k))
    if t == 1:
        return 2
    return (3 if routing == "selection" else 2) * t + 1


@pytest.mark.parametrize("routing", ROUTINGS)
@pytest.mark.parametrize("k", [1, 2, 3, 5])
@pytest.mark.parametrize("i", range(12))
def test_round_trip_random_targets(i, k, routing):
    g = random_case(i)
    c = api.certify(g, "tradeoff", block=k, seed=i, retry=30, routing=routing)
    assert checked(api.certificate_document(c)).ok
    node = 0
    for tl, rep in zip(g.layers, c.reports):
        d_out, d_in = tl.shape
        n_blocks = len(input_blocks(d_in, k))
        assert len(rep.widths) == expected_depth(d_in, k, routing)
        if n_blocks == 1:  # k ≥ d_in: exactly Theorem 1
            assert rep.widths == (d_in * d_out, d_out)
        else:
            assert max(rep.widths) == max(d_out * k, d_out, k if routing == "selection" else 0)
            assert rep.systems == n_blocks
        node += len(rep.widths)
        assert node in c.network.checkpoints
    for x in sample_points(g, 5, seed=i):
        assert c.network.evaluate(x) == g.evaluate(x)


@pytest.mark.parametrize("i", range(0, 16, 3))
def test_round_trip_shared_cases(i):
    """The awkward shared cases: zero rows, rank one, degenerate box coordinates (lo = hi)."""
    g = case_target(i)
    for routing in ROUTINGS:
        c = certify_tradeoff(g, block=2, seed=i, retry=30, routing=routing)
        assert checked(api.certificate_document(c)).ok
        for x in sample_points(g, 3, seed=i):
            assert c.network.evaluate(x) == g.evaluate(x)


@pytest.mark.parametrize("routing", ROUTINGS)
def test_each_block_system_sees_only_its_block(routing):
    """d = 5, k = 2: blocks {0,1}, {2,3}, {4}; each pair's realized matrix lives on its block."""
    g = random_target((5, 3), seed=4, activations=["relu"])
    c = certify_tradeoff(g, block=2, seed=4, retry=30, routing=routing)
    doc = api.certificate_document(c, version=1)  # reads the explicit frozen weights
    layers = doc["network"]["layers"]

    def mat(rows):
        return [[parse_number(x) for x in row] for row in rows]

    final = layers[-1]
    V_F = mat(final["weight"])
    W = to_fractions(g.layers[0].weight)
    step = 3 if routing == "selection" else 2
    total = [[Fraction(0)] * 5 for _ in range(3)]
    for t, S in enumerate(input_blocks(5, 2)):
        hidden, out = layers[step * t + step - 2], layers[step * t + step - 1]
        V_in = mat(hidden["weight"])
        gamma = [parse_number(x) for x in hidden["gamma"]]
        assert len(gamma) == 3 * len(S)  # a Khatri–Rao system of size d_out·|S_t|
        assert [parse_number(x) for x in out["gamma"]] == [1, 1, 1]
        if routing == "selection":
            routing_layer = layers[step * t]
            assert routing_layer["skip"][0]["kind"] == "selection"
            assert all(parse_number(x) == 0 for x in routing_layer["gamma"] + routing_layer["beta"])
            assert hidden["input"] == step * t + 1 and len(V_in[0]) == len(S)
            full_in = [[row[S.index(col)] if col in S else Fraction(0) for col in range(5)]
                       for row in V_in]
        else:
            assert hidden["input"] == 0 and len(V_in[0]) == 5
            assert all(row[col] == 0 for row in V_in for col in range(5) if col not in S)
            assert all(any(row[col] != 0 for row in V_in) for col in S)
            full_in = V_in
        contribution = [[sum(mat(out["weight"])[r][m] * gamma[m] * full_in[m][col]
                             for m in range(len(gamma))) for col in range(5)] for r in range(3)]
        assert all(contribution[r][col] == 0 for r in range(3) for col in range(5)
                   if col not in S)
        total = [[a + b for a, b in zip(x, y)] for x, y in zip(total, contribution)]
        if t > 0:
            assert out["skip"][0]["kind"] == "identity"
    # V_F · Σ_t (block contributions) = W: the blocks together realize the target exactly
    assert [[sum(V_F[r][s] * total[s][col] for s in range(3)) for col in range(5)]
            for r in range(3)] == W


@pytest.mark.parametrize("d", [1, 3, 4])
def test_block_at_least_d_in_is_theorem1(d):
    g = random_target((d, 2, 2), seed=d)
    thm1 = api.certify(g, "theorem1", seed=0, retry=30)
    for k in (d, d + 3):
        c = api.certify(g, "tradeoff", block=k, seed=0, retry=30)
        assert c.network.widths[:2] == thm1.network.widths[:2] == (2 * d, 2)
        assert checked(api.certificate_document(c)).ok


def test_declared_skips_only():
    g = case_target(3)
    kinds = {s.kind for layer in certify_tradeoff(g, block=1, seed=0, retry=30).network.layers
             for s in layer.skips}
    assert kinds == {"selection", "identity"}
    kinds = {s.kind for layer in certify_tradeoff(g, block=1, seed=0, retry=30,
                                                  routing="mask").network.layers
             for s in layer.skips}
    assert kinds <= {"identity"}


def test_input_blocks_cover_and_reject():
    assert input_blocks(7, 3) == [[0, 1, 2], [3, 4, 5], [6]]
    assert sum(input_blocks(9, 4), []) == list(range(9))
    assert input_blocks(2, 5) == [[0, 1]]
    for bad in (0, -1, True, 1.5):
        with pytest.raises(InputError):
            api.certify(case_target(0), "tradeoff", block=bad)
    with pytest.raises(InputError):
        api.certify(case_target(0), "tradeoff", block=2, routing="dense")
    # without a block the cost model chooses one, as on the command line
    assert api.plan_certify(case_target(0), "tradeoff").options["block"] >= 1


@pytest.mark.parametrize("routing", ROUTINGS)
def test_mutations_rejected_or_still_equal(routing):
    g = random_target((4, 3, 2), seed=11, activations=["relu", "identity"])
    doc = api.certificate_document(certify_tradeoff(g, block=3, seed=1, retry=30,
                                                    routing=routing), version=1)
    total = rejected = 0
    for j, layer in enumerate(doc["network"]["layers"]):
        for field in ("gamma", "beta"):
            for k in range(len(layer[field])):
                mut = copy.deepcopy(doc)
                entry = mut["network"]["layers"][j][field]
                entry[k] = format_number(parse_number(entry[k]) + 1)
                total += 1
                if checked(mut).ok:  # accepted: f = g must still hold at every point tried
                    f = read_frozen(mut)
                    assert all(f.evaluate(x) == g.evaluate(x) for x in sample_points(g, 6, 1))
                else:
                    rejected += 1
    assert rejected >= 0.9 * total


def test_cli_options(tmp_path):
    out = str(tmp_path / "c.json")
    # no --block: the cost model picks one (tests/constructions/test_scale.py checks which)
    assert main(["certify", "--force", "--construction", "tradeoff", "--out", out]) == 0
    assert main(["certify", "--force",
                 "--construction", "theorem1", "--block", "2", "--out", out]) == 2
    assert main(["certify", "--force",
                 "--construction", "lowrank", "--routing", "mask", "--out", out]) == 2
    for routing in ROUTINGS:
        assert main(["certify", "--force",
                     "--construction", "tradeoff", "--block", "1", "--routing",
                     routing, "--retry", "30", "--out", out]) == 0
        assert main(["check", out, "--both"]) == 0
