"""The three kind-free roles (exactnorm/model/layers.py) around the operators of every kind: what
they refuse, the dense operator a bare matrix stands for, the integer evaluation of a node
against the exact pre-activation, the float copy against the exact layer, and the deprecated
names of the per-kind classes."""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest
from flint import fmpq, fmpq_mat, fmpz_mat

from exactnorm.errors import InputError, ShapeError
from exactnorm.model.layers import FloatLayer, FrozenLayer, TargetLayer
from exactnorm.model.operators import AvgPool, Conv, ConvGeometry, Dense, GlobalAvgPool
from exactnorm.model.routes import Route, Skip
from exactnorm.model.values import Scaled, activate, node_values


def _ints(rng: random.Random, rows: int, cols: int) -> fmpz_mat:
    return fmpz_mat(rows, cols, [rng.randint(-4, 4) for _ in range(rows * cols)])


def _operators(rng: random.Random) -> list:
    g = ConvGeometry((2, 4, 3), (2, 2), padding=(1, 0))
    return [Dense(_ints(rng, 3, 24)), Conv(g, _ints(rng, 3, 8)),
            Conv(g, _ints(rng, 4, 4), groups=2), AvgPool(ConvGeometry((2, 4, 3), (2, 1))),
            GlobalAvgPool((2, 4, 3))]


def _frozen(op, rng: random.Random) -> FrozenLayer:
    n = op.channels
    gamma = tuple(fmpq(rng.randint(-5, 5), rng.randint(1, 3)) for _ in range(n))
    beta = tuple(fmpq(rng.randint(-5, 5), rng.randint(1, 3)) for _ in range(n))
    return FrozenLayer(0, op, gamma, beta, "relu" if n else "identity")


def test_a_bare_matrix_is_the_dense_operator():
    W = fmpq_mat([[1, -2], [fmpq(1, 3), 0]])
    assert TargetLayer(W, (fmpq(1), fmpq(0)), "relu") == \
        TargetLayer(Dense(W), (fmpq(1), fmpq(0)), "relu")
    assert FrozenLayer(0, W, (fmpq(1),) * 2, (fmpq(0),) * 2, "relu").operator == Dense(W)
    assert FloatLayer(0, np.eye(2), (fmpq(1),) * 2, (fmpq(0),) * 2).operator.shape == (2, 2)


@pytest.mark.parametrize("make, error, words", [
    (lambda: TargetLayer(Dense(fmpq_mat([[1, 2]])), (fmpq(1), fmpq(2))), ShapeError,
     "one per γ group"),
    (lambda: TargetLayer(AvgPool(ConvGeometry((1, 2, 2), (2, 2))), (fmpq(0),)), ShapeError,
     "bias has length 1, expected 0"),
    (lambda: TargetLayer(GlobalAvgPool((1, 2, 2)), (), "relu"), InputError, "fixed map"),
    (lambda: TargetLayer([[1, 2]], (fmpq(0),)), InputError, "got list"),
    (lambda: TargetLayer(Dense(fmpq_mat([[1]])), (fmpq(0),), "tanh"), InputError, "tanh"),
    (lambda: FrozenLayer(0, Dense(fmpq_mat([[1]])), (fmpq(1),), (), "relu"), ShapeError, "beta"),
    (lambda: FrozenLayer(0, Dense(fmpq_mat([[1, 0]])), (fmpq(1),), (fmpq(0),), "relu",
                         stability="sometimes"), InputError, "stability"),
    (lambda: FrozenLayer(0, Dense(fmpq_mat([[1, 1]])), (fmpq(1),), (fmpq(0),), "relu",
                         drawn_columns=(0,)), ShapeError, "outside the drawn columns"),
    (lambda: FrozenLayer(0, Dense(fmpq_mat([[1, 0]])), (fmpq(1),), (fmpq(0),), "relu",
                         drawn_columns=(0, 0)), ShapeError, "not distinct"),
    (lambda: FloatLayer(0, Dense(np.zeros((2, 2, 2)))), ShapeError, "2-d"),
])
def test_the_roles_refuse_what_their_operator_cannot_hold(make, error, words):
    with pytest.raises(error, match=words):
        make()


@pytest.mark.parametrize("seed", range(3))
def test_a_node_as_integers_is_the_exact_pre_activation(seed):
    rng = random.Random(seed)
    for op in _operators(rng):
        layer = _frozen(op, rng)
        a = tuple(fmpq(rng.randint(-6, 6), rng.randint(1, 4)) for _ in range(op.shape[1]))
        want = activate(layer.activation, layer.pre_activation(a))
        assert node_values(layer.evaluate_node(a)) == want, op.describe()
        # a node held as integers over one denominator, in any row shape (a convolution's
        # output is channels × positions)
        held = Scaled.of(a, 2, len(a) // 2)
        assert node_values(layer.evaluate_node(held)) == want, op.describe()


@pytest.mark.parametrize("seed", range(3))
def test_the_float_copy_agrees_with_the_exact_layer(seed):
    rng = random.Random(seed)
    for op in _operators(rng):
        layer = _frozen(op, rng)
        flt = layer.float_layer()
        assert (flt.kind, flt.width, flt.input_size, flt.tuned_parameters, flt.describe()) == \
            (layer.kind, layer.width, layer.input_size, layer.tuned_parameters, layer.describe())
        X = np.array([[rng.randint(-6, 6) / 4 for _ in range(op.shape[1])] for _ in range(3)])
        exact = np.array([[float(v) for v in layer.pre_activation(
            tuple(fmpq(int(x * 4), 4) for x in row))] for row in X])
        for dtype, tol in ((np.float64, 1e-12), (np.float32, 1e-4)):
            got = flt.pre_activation(X.astype(dtype), dtype)
            assert got.dtype == dtype and np.allclose(got, exact, rtol=tol, atol=tol)


def test_frozen_parameters_count_drawn_entries_and_random_skips():
    V = fmpz_mat([[1, 0, 2], [3, 0, 4]])
    layer = FrozenLayer(0, Dense(V), (fmpq(1),) * 2, (fmpq(0),) * 2, "relu",
                        skips=(Skip(0, fmpz_mat([[1, 1, 0], [0, 1, 1]]), "random"),
                               Skip(0, Route((0, 2), 3), "selection")),
                        drawn_columns=(0, 2))
    assert layer.frozen_parameters == 2 * 2 + 6  # drawn columns, the random skip, no route
    assert layer.float_layer().frozen_parameters == 6 + 6  # the float copy counts its zeros


def test_the_deprecated_names_warn_and_build_the_roles():
    g = ConvGeometry((1, 3, 3), (2, 2))
    K = fmpq_mat([[1, -1, 2, 0]])
    with pytest.warns(DeprecationWarning, match="deprecated"):
        from exactnorm.model.kinds import ConvTargetLayer
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from exactnorm.model.conv import (
            FrozenConvLayer,
            FrozenGlobalPoolLayer,
            GlobalPoolTargetLayer,
            PoolTargetLayer,
        )
    assert ConvTargetLayer(g, K, (fmpq(1),), "relu") == TargetLayer(Conv(g, K), (fmpq(1),), "relu")
    assert PoolTargetLayer(g) == TargetLayer(AvgPool(g))
    assert GlobalPoolTargetLayer((1, 3, 3)) == TargetLayer(GlobalAvgPool((1, 3, 3)))
    frozen = FrozenConvLayer(2, g, K, (fmpq(1),), (fmpq(0),), "relu", stability="hull")
    assert (frozen.input, frozen.operator, frozen.stability) == (2, Conv(g, K), "hull")
    assert FrozenGlobalPoolLayer(1, (1, 3, 3)).operator == GlobalAvgPool((1, 3, 3))
    with pytest.raises(ImportError):
        from exactnorm.model.conv import NoSuchLayer  # noqa: F401
