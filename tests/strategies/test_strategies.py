"""The public strategies of :mod:`exactnorm.strategies` produce what they promise."""

from __future__ import annotations

import numpy as np
import pytest
import sympy
from flint import fmpq, fmpq_mat, fmpz_mat
from hypothesis import Phase, find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from exactnorm import strategies as st_mod
from exactnorm.constructions.common import Construction
from exactnorm.model.network import FrozenNetwork, TargetNetwork
from exactnorm.strategies import (
    exact_rationals,
    frozen_networks,
    integer_matrices,
    khatri_rao_pairs,
    matrices_of_rank,
    points_in_box,
    rational_boxes,
    rational_matrices,
    sparse_masks,
    target_networks,
    theorem1_constructions,
)

# reachability searches: derandomized, no shrinking (only existence matters there)
REACH = settings(max_examples=500, derandomize=True, database=None, deadline=None,
                 phases=[Phase.explicit, Phase.generate])


@given(st.integers(0, 4), st.integers(0, 4), st.data())
def test_integer_matrices_shape_and_bound(r, c, data):
    M = data.draw(integer_matrices(r, c, bound=3))
    assert isinstance(M, fmpz_mat) and (M.nrows(), M.ncols()) == (r, c)
    assert all(-3 <= int(x) <= 3 for x in M.entries())


@given(rational_matrices(st.integers(1, 3), 2, bound=4, max_denominator=3))
def test_rational_matrices_shape_and_bound(M):
    assert isinstance(M, fmpq_mat) and M.ncols() == 2 and 1 <= M.nrows() <= 3
    assert all(abs(x.numer()) <= 4 and 1 <= x.denom() <= 3 for x in M.entries())


@given(st.integers(1, 5), st.integers(1, 5), st.data())
def test_matrices_of_rank_is_exact(r, c, data):
    k = data.draw(st.integers(0, min(r, c)))
    M = data.draw(matrices_of_rank(r, c, k))
    assert isinstance(M, fmpz_mat) and (M.nrows(), M.ncols()) == (r, c)
    # independent rank: SymPy over QQ, not exactnorm.exact.linalg
    assert sympy.Matrix(M.tolist()).rank() == k


@given(khatri_rao_pairs())
def test_khatri_rao_pairs_have_equal_column_counts(pair):
    X, Y = pair
    assert isinstance(X, fmpz_mat) and isinstance(Y, fmpz_mat)
    assert X.ncols() == Y.ncols() >= 1


@given(rational_boxes(st.integers(1, 4)), st.data())
def test_rational_boxes_ordered_and_points_inside(box, data):
    lo, hi = box
    assert len(lo) == len(hi) and all(isinstance(v, fmpq) for v in lo + hi)
    assert all(a <= b for a, b in zip(lo, hi))
    x = data.draw(points_in_box(lo, hi))
    assert all(a <= v <= b for a, v, b in zip(lo, x, hi))


def test_rational_boxes_include_degenerate_coordinates():
    lo, hi = find(rational_boxes(2), lambda b: b[0][0] == b[1][0] and b[0][1] < b[1][1],
                  settings=REACH)
    assert lo[0] == hi[0]


@given(target_networks())
def test_target_networks_valid(target):
    assert isinstance(target, TargetNetwork)
    assert 1 <= target.depth <= 3 and all(1 <= w <= 4 for w in target.widths)
    assert all(layer.activation in ("relu", "identity") for layer in target.layers)
    assert all(a <= b for a, b in zip(target.lower, target.upper))
    assert len(target.evaluate(target.lower)) == target.widths[-1]


def test_target_networks_reach_both_final_activations_and_all_depths():
    for act in ("relu", "identity"):
        find(target_networks(), lambda t, act=act: t.layers[-1].activation == act,
             settings=REACH)
    for depth in (1, 2, 3):
        find(target_networks(), lambda t, depth=depth: t.depth == depth, settings=REACH)
    find(target_networks(), lambda t: max(t.widths) == 4, settings=REACH)


@given(frozen_networks(), st.data())
def test_frozen_networks_evaluate(net, data):
    assert isinstance(net, FrozenNetwork) and 1 <= net.depth <= 3
    x = data.draw(points_in_box([0] * net.input_dim, [1] * net.input_dim))
    assert len(net.evaluate(x)) == net.widths[-1]


@given(theorem1_constructions(max_width=3, max_depth=2), st.data())
def test_theorem1_constructions_reproduce_their_target(construction, data):
    assert isinstance(construction, Construction)
    target, net = construction.target, construction.network
    assert net.depth == 2 * target.depth
    x = data.draw(points_in_box(target.lower, target.upper))
    assert net.evaluate(x) == target.evaluate(x)


@given(sparse_masks(st.integers(0, 4), 3))
def test_sparse_masks_are_boolean_arrays(mask):
    assert isinstance(mask, np.ndarray) and mask.dtype == np.bool_
    assert mask.shape[1] == 3 and 0 <= mask.shape[0] <= 4


def test_shrinking_goes_to_small_readable_cases():
    assert find(exact_rationals(), lambda q: q != 0) == 1
    M = find(integer_matrices(st.integers(1, 4), st.integers(1, 4)), lambda M: M.nrows() >= 2)
    assert M.tolist() == [[0], [0]]


# ----------------------------------------------------------------------------- bad arguments


@pytest.mark.parametrize("make", [
    lambda: st_mod.integer_matrices(min_dim=3, max_dim=2),
    lambda: st_mod.integer_matrices(rows=-1),
    lambda: st_mod.rational_matrices(min_dim=-1),
    lambda: st_mod.matrices_of_rank(2, 2, rank=3),
    lambda: st_mod.khatri_rao_pairs(cols="two"),
    lambda: st_mod.rational_boxes(min_dim=2, max_dim=1),
    lambda: st_mod.points_in_box([0, 0], [1]),
    lambda: st_mod.points_in_box([1], [0]),
    lambda: st_mod.target_networks(widths=[3]),
    lambda: st_mod.target_networks(hidden_activation="tanh"),
    lambda: st_mod.target_networks(min_width=0),
    lambda: st_mod.frozen_networks(min_width=0),
    lambda: st_mod.frozen_networks(min_depth=0),
    lambda: st_mod.small_integers(-1),
    lambda: st_mod.exact_rationals(max_denominator=0),
    lambda: st_mod.theorem1_constructions(retry=-1),
    lambda: st_mod.theorem1_constructions(distribution="int:x"),
    lambda: st_mod.frozen_networks(distribution="nope"),
    lambda: st_mod.sparse_masks(keep="3/2"),
    lambda: st_mod.sparse_masks(keep=0.5),
])
def test_bad_arguments_raise_invalid_argument(make):
    """Hypothesis's convention: a bad argument is an InvalidArgument, raised at the latest when
    the strategy is first drawn from."""
    with pytest.raises(InvalidArgument):
        strategy = make()
        strategy.example()


def test_every_strategy_says_how_it_shrinks():
    import inspect

    for name in st_mod.__all__:
        obj = getattr(st_mod, name)
        if inspect.isfunction(obj):
            doc = inspect.getdoc(obj) or ""
            last = doc.split("\n\n")[-1]
            assert "Shrinks" in last, f"{name}: the docstring must end with how it shrinks"
