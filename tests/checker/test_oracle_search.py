"""The oracle's region arithmetic and its search for a reaching tuning
(:mod:`tests.checker.oracle_search`) are tested on cases computed by hand (a ReLU pair that is
affine, a kink that is not, the two halves of a square and their areas, pinned coordinates) and
against the package's own decisions (``exactnorm.capacity``): every real impossibility document
survives the search, a REACHABLE pair relabelled as impossible does not, the output scale held at
1 is honoured, and a target made affine by reading ``x`` is reached — each tuning found is
proved on the whole box and evaluated at random points besides."""

from __future__ import annotations

import copy
import random
from fractions import Fraction as Q

import pytest

from exactnorm import api
from exactnorm.model.network import TargetNetwork
from tests.checker import oracle, oracle_documents
from tests.checker import oracle_search as S
from tests.checker.test_checker_impossibility import case_threshold
from tests.helpers import given


def _graph(layers: list[dict], d: int) -> oracle.Graph:
    return oracle.target_graph(layers, d)


ABS_PARTS = [{"weight": [[1], [-1]], "bias": [0, 0], "activation": "relu"}]


def test_a_relu_pair_that_cancels_is_affine_and_a_kink_is_not():
    box = oracle.Box([Q(-1)], [Q(2)])
    linear = _graph(ABS_PARTS + [{"weight": [[1, -1]], "bias": [3], "activation": "identity"}], 1)
    assert S.affine_on_box(linear, box) == [(Q(1), Q(3))]
    absolute = _graph(ABS_PARTS + [{"weight": [[1, 1]], "bias": [0], "activation": "identity"}], 1)
    assert S.affine_on_box(absolute, box) is None
    # on [0, 2] the kink is at the border: affine there
    assert S.affine_on_box(absolute, oracle.Box([Q(0)], [Q(2)])) == [(Q(1), Q(0))]


def test_equality_on_the_box_is_decided_both_ways():
    box = oracle.Box([Q(-1)], [Q(2)])
    absolute = _graph(ABS_PARTS + [{"weight": [[1, 1]], "bias": [0], "activation": "identity"}], 1)
    scaled = _graph([{"weight": [[2], [-3]], "bias": [0, 0], "activation": "relu"},
                     {"weight": [["1/2", "1/3"]], "bias": [0], "activation": "identity"}], 1)
    half = _graph([{"weight": [[1]], "bias": [0], "activation": "relu"}], 1)
    assert S.equal_on_box(absolute, scaled, box) is True
    assert S.equal_on_box(absolute, half, box) is False
    assert S.equal_on_box(absolute, half, oracle.Box([Q(0)], [Q(2)])) is True


def _area(vertices: list[tuple[Q, ...]]) -> Q:
    cx = sum(v[0] for v in vertices) / len(vertices)
    cy = sum(v[1] for v in vertices) / len(vertices)

    def angle_key(v: tuple[Q, ...]) -> tuple[int, Q]:
        x, y = v[0] - cx, v[1] - cy  # exact ordering by half-plane and slope
        half = 0 if (y > 0 or (y == 0 and x > 0)) else 1
        return half, (-x / (abs(x) + abs(y)) if half == 0 else x / (abs(x) + abs(y)))

    ring = sorted(vertices, key=angle_key)
    return abs(sum(a[0] * b[1] - a[1] * b[0] for a, b in zip(ring, ring[1:] + ring[:1]))) / 2


def test_the_two_halves_of_a_square():
    box = oracle.Box([Q(0), Q(0)], [Q(1), Q(1)])
    g = _graph([{"weight": [[1, 1]], "bias": [-1], "activation": "relu"}], 2)
    pieces = S.decompose([g], box)
    assert pieces is not None and len(pieces) == 2
    assert sorted(sorted(r.vertices) for r, _ in pieces) == sorted([
        sorted([(Q(0), Q(0)), (Q(1), Q(0)), (Q(0), Q(1))]),
        sorted([(Q(1), Q(0)), (Q(0), Q(1)), (Q(1), Q(1))])])
    assert sorted(outs[0][0] for _, outs in pieces) == [(Q(0), Q(0), Q(0)), (Q(1), Q(1), Q(-1))]


@pytest.mark.parametrize("seed", range(6))
def test_the_pieces_cover_the_box_without_overlap(seed):
    """The areas of the pieces of a random two-layer network add up to the box's."""
    r = random.Random(seed)
    layers = [{"weight": [[r.randint(-3, 3), r.randint(-3, 3)] for _ in range(4)],
               "bias": [str(Q(r.randint(-6, 6), 4)) for _ in range(4)], "activation": "relu"},
              {"weight": [[r.randint(-2, 2) for _ in range(4)] for _ in range(2)],
               "bias": [0, 1], "activation": "relu"}]
    box = oracle.Box([Q(-1), Q(0)], [Q(1), Q(3, 2)])
    pieces = S.decompose([_graph(layers, 2)], box)
    assert pieces is not None
    assert sum(_area(reg.vertices) for reg, _ in pieces) == 3
    for reg, outs in pieces:  # each piece's form is the network's value at its vertices
        for v in reg.vertices:
            assert oracle.output(_graph(layers, 2), list(v)) == [S._at(f, v) for f in outs[0]]


def test_pinned_coordinates_are_constants():
    box = oracle.Box([Q(0), Q(1, 2)], [Q(1), Q(1, 2)])
    g = _graph([{"weight": [[1, 4]], "bias": [-2], "activation": "relu"}], 2)
    assert box.free == [0]
    assert S.affine_on_box(g, box) == [(Q(1), Q(0))]  # x + 2 − 2 ≥ 0 on the box


# ------------------------------------------------------------------------------- the search


def _proved_at_points(imp: oracle.Impossibility, t: S.Tuning) -> None:
    f = S.tuned(imp, t.gammas, t.betas)
    for x in oracle.points(imp.box, randoms=12, seed=3):
        assert oracle.output(f, x) == oracle.output(imp.target, x)


@pytest.mark.parametrize("kind", oracle_documents.IMPOSSIBILITY_KINDS)
def test_every_real_impossibility_survives_the_search(kind):
    for doc in oracle_documents.documents(kind):
        tuning, tried = S.reaching_tuning(oracle.read_impossibility(doc))
        assert tuning is None, (kind, tried)


def test_a_reachable_pair_relabelled_as_impossible_is_reached():
    """The threshold pair is UNREACHABLE with the output scale held at 1 (a real Fredholm
    document) and REACHABLE with it tuned (``exactnorm.capacity``); the same document read in
    the class of every tuning is reached by the search."""
    net, g = case_threshold()
    assert api.capacity(net, target=g).word == "REACHABLE"
    doc = copy.deepcopy(oracle_documents.documents("impossibility fredholm-fixed")[0])
    imp = oracle.read_impossibility(doc)
    assert imp.cls == "fixed-output-scale" and S.reaching_tuning(imp)[0] is None
    doc["witness"]["scale"] = "tuned"
    imp = oracle.read_impossibility(doc)
    tuning, _ = S.reaching_tuning(imp)
    assert tuning is not None and any(g != 1 for g in tuning.gammas[-1])
    _proved_at_points(imp, tuning)


def test_a_target_that_reads_x_is_affine_and_reached():
    """The issue's first false impossibility: target layer 2 reads ``x``; the target is affine,
    and the package's capacity verb reaches the same affine map."""
    doc = copy.deepcopy(oracle_documents.documents("impossibility kink")[0])
    doc["target"]["layers"][1]["input"] = 0
    imp = oracle.read_impossibility(doc)
    A = S.affine_on_box(imp.target, imp.box)
    assert A is not None
    tuning, how = S.reaching_tuning(imp)
    assert tuning is not None and how.startswith("hidden neurons active")
    _proved_at_points(imp, tuning)
    free = imp.box.free
    W = [[f[free.index(t)] if t in free else Q(0) for t in range(len(imp.box.lower))] for f in A]
    affine = TargetNetwork.from_lists([W], [[f[-1] for f in A]], ["identity"],
                                      lower=imp.box.lower, upper=imp.box.upper)
    net = given([[list(row) for row in V] for V in imp.weights], imp.activations)
    assert api.capacity(net, target=affine).word == "REACHABLE"


def test_kinks_placed_on_the_targets_kinks():
    """Frozen rows parallel to the target's kinks: reached with the kinks in place (a case the
    package's capacity verb leaves UNDECIDED)."""
    doc = copy.deepcopy(oracle_documents.documents("impossibility kink")[0])
    doc["network"]["layers"][0]["weight"] = [[1, 2], [2, -1], [1, 0]]
    doc["network"]["layers"][1]["weight"] = [[1, 1, 1]]
    imp = oracle.read_impossibility(doc)
    assert S.affine_on_box(imp.target, imp.box) is None
    tuning, how = S.reaching_tuning(imp)
    assert tuning is not None and how == "frozen kinks placed on the target's kinks"
    _proved_at_points(imp, tuning)
    # a frozen row that is not parallel any more: nothing to place, nothing found
    doc["network"]["layers"][0]["weight"] = [[1, 3], [2, -1], [1, 0]]
    assert S.reaching_tuning(oracle.read_impossibility(doc))[0] is None


def test_the_output_scale_held_at_one_is_honoured():
    doc = copy.deepcopy(oracle_documents.documents("impossibility fredholm-fixed")[0])
    imp = oracle.read_impossibility(doc)
    rng = random.Random(0)
    A = S.affine_on_box(imp.target, imp.box)
    assert A is not None
    for t in S.stable_tunings(imp, A, rng):
        assert t.gammas[-1] == [1] * len(t.gammas[-1])
