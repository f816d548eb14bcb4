"""Low-rank construction (docs/constructions.md): certify → check round trips, exact f = g,
factors, mutations.

Independent paths: ranks are recomputed with SymPy (not FLINT's rref used by the construction),
every certificate goes through both checkers (standard library and python-flint) which must give
the same verdict, and f = g is evaluated exactly at box corners and random rational points.
"""

from __future__ import annotations

import copy
import json
from fractions import Fraction

import numpy as np
import pytest
import sympy
from flint import fmpq, fmpq_mat

from exactnorm import api
from exactnorm.certificate import read_frozen, read_target, target_document
from exactnorm.cli import main
from exactnorm.constructions.lowrank import (
    certify_lowrank,
    factors_from_dict,
    factors_from_target_file,
    rank_factorization,
)
from exactnorm.errors import InputError, NumberFormatError, ShapeError
from exactnorm.exact.linalg import to_fmpq_mat, to_fractions
from exactnorm.exact.rationals import format_number, parse_number
from exactnorm.model.network import TargetNetwork
from exactnorm.model.targets import random_target
from tests.helpers import case_target, fmpq_to_fraction, sample_points


def checked(doc):
    """Both checkers on one document; they must agree. Returns the verdict."""
    fast, pure = api.check(doc), api.check(doc, pure=True)
    assert fast == pure, (fast, pure)
    return fast


def sympy_rank(rows) -> int:
    return sympy.Matrix(rows).rank()


def rank_r_weight(rng: np.random.Generator, d_out: int, d_in: int, r: int) -> list:
    """A d_out × d_in rational matrix U·P with inner dimension r (r = 0: the zero matrix)."""
    if r == 0:
        return [[Fraction(0)] * d_in for _ in range(d_out)]
    U = [[Fraction(int(x), int(q)) for x, q in zip(row, rng.integers(1, 4, size=r))]
         for row in rng.integers(-3, 4, size=(d_out, r))]
    P = [[Fraction(int(x)) for x in row] for row in rng.integers(-3, 4, size=(r, d_in))]
    return [[sum(U[i][t] * P[t][j] for t in range(r)) for j in range(d_in)] for i in range(d_out)]


def random_case(i: int) -> TargetNetwork:
    """Target ``i``: widths 1–5, depth 1–3, mixed activations; the first layer's rank cycles
    through 0, 1, full, 2 (found by the construction, never given)."""
    rng = np.random.default_rng(700 + i)
    depth = int(rng.integers(1, 4))
    widths = [int(w) for w in rng.integers(1, 6, size=depth + 1)]
    acts = [str(a) for a in rng.choice(["relu", "identity"], size=depth)]
    g = random_target(widths, seed=i, activations=acts, box=(Fraction(-1), Fraction(3, 2)))
    weights = [to_fractions(layer.weight) for layer in g.layers]
    full = min(widths[0], widths[1])
    r = [0, 1, full, min(2, full)][i % 4]
    weights[0] = rank_r_weight(rng, widths[1], widths[0], r)
    biases = [[fmpq_to_fraction(x) for x in layer.bias] for layer in g.layers]
    return TargetNetwork.from_lists(weights, biases, acts, lower=g.lower, upper=g.upper)


@pytest.mark.parametrize("i", range(24))
def test_round_trip_random_targets(i):
    g = random_case(i)
    c = api.certify(g, "lowrank", seed=i, retry=30)
    assert checked(api.certificate_document(c)).ok
    for tl, rep in zip(g.layers, c.reports):
        d_out, d_in = tl.shape
        r = max(sympy_rank(to_fractions(tl.weight)), 1)  # rank 0 is realized with r = 1
        assert rep.rank == r
        assert rep.widths == (r * d_in, r, r * d_out, d_out)
    assert len(c.network.layers) == 4 * g.depth
    assert c.network.checkpoints == tuple(4 * i for i in range(1, g.depth + 1))
    for x in sample_points(g, 6, seed=i):
        assert c.network.evaluate(x) == g.evaluate(x)


@pytest.mark.parametrize("i", range(0, 16, 3))
def test_round_trip_shared_cases(i):
    """The awkward shared cases: zero rows, rank one, degenerate box coordinates (lo = hi)."""
    g = case_target(i)
    c = certify_lowrank(g, seed=i, retry=30)
    assert checked(api.certificate_document(c)).ok
    for x in sample_points(g, 3, seed=i):
        assert c.network.evaluate(x) == g.evaluate(x)


def test_outer_product_needs_one_intermediate_neuron():
    """W = u vᵀ: the factors are found (not given) and the intermediate node has width 1."""
    u = [Fraction(2, 3), Fraction(-1), Fraction(0), Fraction(5)]
    v = [Fraction(1), Fraction(-2), Fraction(3, 2)]
    g = TargetNetwork.from_lists([[[a * b for b in v] for a in u]], [[1, 0, -1, 2]], ["relu"],
                                 lower=[-1, 0, -2], upper=[1, 1, 2])
    c = certify_lowrank(g, seed=3, retry=30)
    assert c.reports[0].rank == 1
    assert c.network.widths == (3, 1, 4, 4)
    assert checked(api.certificate_document(c)).ok
    for x in sample_points(g, 10, seed=3):
        assert c.network.evaluate(x) == g.evaluate(x)
    thm1 = api.certify(g, "theorem1", seed=3, retry=30)
    assert c.network.tuned_parameters < thm1.network.tuned_parameters


def test_intermediate_node_is_shifted_non_negative_and_cancelled():
    """The P pair's output is P a + t with t = −min over the box, so its exact minimum is 0 and
    the ReLU in between is the identity; the checkpoint pre-activation is still W a + b."""
    g = random_case(2)  # full rank first layer
    c = certify_lowrank(g, seed=2, retry=30)
    lo, hi = g.interval_boxes()[0]
    mid_node = c.network.evaluate_nodes
    corners = g.corners(64)
    U, P = rank_factorization(g.layers[0].weight)
    shifts = None
    for x in corners:
        nodes = mid_node(x)
        Pa = P * fmpq_mat([[xi] for xi in x])
        values = [nodes[2][k] - Pa[k, 0] for k in range(P.nrows())]
        shifts = shifts or values
        assert values == shifts  # the same constant shift t at every corner
        assert all(v >= 0 for v in nodes[2])
    # the exact minimum over the box is attained at a corner and equals 0 per neuron
    assert all(min(mid_node(x)[2][k] for x in corners) == 0 for k in range(P.nrows()))
    assert len(corners) == 2 ** len(lo) and lo <= hi


@pytest.mark.parametrize("rank", [0, 1, 2, 3])
def test_rank_factorization_exact(rank):
    rng = np.random.default_rng(rank)
    W = to_fmpq_mat(rank_r_weight(rng, 4, 5, rank))
    U, P = rank_factorization(W)
    assert U * P == W
    exact = sympy_rank(to_fractions(W))
    assert P.nrows() == max(exact, 1)
    assert sympy_rank(to_fractions(P)) == exact  # the rows of P are independent (or P = 0)


def target_doc(weight, bias, activation="identity", d_in=None):
    d_in = d_in or len(weight[0])
    return {"domain": {"lower": [-1] * d_in, "upper": [1] * d_in},
            "target": {"layers": [{"weight": [[format_number(x) for x in row] for row in weight],
                                   "bias": bias, "activation": activation}]}}


def test_given_factors_per_layer_and_top_level(tmp_path):
    U = [[1], [2], [-1]]
    P = [[2, 0, "1/2", 1]]
    W = [[Fraction(u[0]) * parse_number(p) for p in P[0]] for u in U]
    per_layer = target_doc(W, [0, 1, 0])
    per_layer["target"]["layers"][0]["factors"] = {"U": U, "P": P}
    top = target_doc(W, [0, 1, 0])
    top["factors"] = [{"U": U, "P": P}]
    for doc in (per_layer, top):
        (f,) = factors_from_dict(doc)
        assert f[0] * f[1] == to_fmpq_mat(W)
    both = copy.deepcopy(per_layer)
    both["factors"] = [None]
    with pytest.raises(InputError):
        factors_from_dict(both)
    short = copy.deepcopy(top)
    short["factors"] = []
    with pytest.raises(InputError):
        factors_from_dict(short)
    path = tmp_path / "t.json"
    out = tmp_path / "c.json"
    for doc in (per_layer, top):
        path.write_text(json.dumps(doc))
        assert factors_from_target_file(path)[0] is not None
        assert main(["certify", "--force", "--construction", "lowrank", "--target", str(path),
                     "--retry", "30", "--out", str(out)]) == 0
        cert = json.loads(out.read_text())
        assert cert["witnesses"]["layers"][0]["factors"] == "given"
        assert checked(cert).ok


def test_given_factors_checked_exactly(tmp_path):
    W = [[Fraction(2), Fraction(4)], [Fraction(1), Fraction(2)]]
    g = read_target(target_doc(W, [0, 0]))
    c = certify_lowrank(g, factors=[([[2], [1]], [[1, 2]])], seed=1, retry=30)
    assert c.reports[0].witness["factors"] == "given" and checked(
        api.certificate_document(c)).ok
    # non-minimal factors are legal: r = 2 although rank W = 1
    c2 = certify_lowrank(g, factors=[{"U": [[1, 1], [0, 1]], "P": [[1, 2], [1, 2]]}], seed=1,
                         retry=30)
    assert c2.reports[0].rank == 2 and checked(api.certificate_document(c2)).ok
    with pytest.raises(InputError, match="U·P = W"):
        certify_lowrank(g, factors=[([[2], [1]], [[1, "3"]])])
    with pytest.raises(ShapeError):
        certify_lowrank(g, factors=[([[2, 1]], [[1, 2]])])
    with pytest.raises(NumberFormatError):
        certify_lowrank(g, factors=[([[True], [1]], [[1, 2]])])
    with pytest.raises(InputError):
        certify_lowrank(g, factors=[None, None])
    bad = target_doc(W, [0, 0])
    bad["target"]["layers"][0]["factors"] = {"U": [[2], [2]], "P": [[1, 2]]}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    assert main(["certify", "--force", "--construction", "lowrank", "--target", str(path),
                 "--out", str(tmp_path / "c.json")]) == 2


def test_rank_bound_option(tmp_path):
    g = next(g for g in map(random_case, range(2, 100, 4)) if min(g.layers[0].shape) >= 2)
    full = sympy_rank(to_fractions(g.layers[0].weight))
    assert full >= 2
    with pytest.raises(InputError, match="exceeds the promised"):
        api.certify(g, "lowrank", rank=full - 1)
    with pytest.raises(InputError):
        api.certify(g, "lowrank", rank=0)
    assert api.certify(g, "lowrank", rank=5, retry=30, seed=0).reports[0].rank == full
    path = tmp_path / "t.json"
    path.write_text(json.dumps(target_document(g), default=str))
    out = str(tmp_path / "c.json")
    assert main(["certify", "--force", "--construction", "lowrank", "--rank", "5", "--retry", "30",
                 "--target", str(path), "--out", out]) == 0
    assert main(["certify", "--force",
                 "--construction", "theorem1", "--rank", "2", "--out", out]) == 2


def test_zero_matrix_is_realized():
    g = read_target(target_doc([[0, 0, 0], [0, 0, 0]], ["1/2", -3], "relu"))
    c = certify_lowrank(g, seed=0, retry=30)
    assert c.reports[0].rank == 1 and c.network.widths == (3, 1, 2, 2)
    assert checked(api.certificate_document(c)).ok
    for x in sample_points(g, 4, seed=0):
        assert c.network.evaluate(x) == g.evaluate(x) == (fmpq(1, 2), 0)


def mutations(doc):
    """Every single-entry mutation γ += 1 or β += 1 of every frozen layer."""
    for j, layer in enumerate(doc["network"]["layers"]):
        for field in ("gamma", "beta"):
            for k in range(len(layer[field])):
                mut = copy.deepcopy(doc)
                entry = mut["network"]["layers"][j][field]
                entry[k] = format_number(parse_number(entry[k]) + 1)
                yield j + 1, field, mut


@pytest.mark.parametrize("i", [1, 2, 5])
def test_mutations_rejected_or_still_equal(i):
    g = random_case(i)
    doc = api.certificate_document(certify_lowrank(g, seed=i, retry=30), version=1)
    checkpoints = set(doc["network"]["checkpoints"])
    total = rejected = 0
    for layer, field, mut in mutations(doc):
        total += 1
        verdict = checked(mut)
        if verdict.ok:  # accepted: then f = g must hold at every point we try
            f = read_frozen(mut)
            assert all(f.evaluate(x) == g.evaluate(x) for x in sample_points(g, 6, seed=i))
            assert not (layer in checkpoints and field == "beta")
        else:
            rejected += 1
    assert rejected >= 0.9 * total
