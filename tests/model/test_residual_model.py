"""Residual targets and frozen residuals in the model, against a dense reference.

The target below is a small ResNet on a 1×6×6 image — a stem, a block with an identity shortcut,
a stride-2 block with an option-A shortcut (subsampling and zero channels: a selection), a block
with a projection shortcut (its own 1×1 stride-2 target layer), an average pooling and a dense
head. The reference unfolds every layer into a dense matrix with plain ``Fraction`` arithmetic
(tests/kinds/test_kind_contract.py's references, written from the kinds' definitions) and applies
each route from its picks, so the model's evaluation, float evaluation and boxes are compared with
an independent computation.
"""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest
from flint import fmpq, fmpq_mat

from exactnorm.errors import InputError, ShapeError
from exactnorm.model.layers import FrozenLayer, TargetLayer
from exactnorm.model.network import FrozenNetwork, TargetNetwork, Wiring
from exactnorm.model.operators import AvgPool, Conv, ConvGeometry
from exactnorm.model.routes import Route, Skip, apply_linear, linear_interval
from tests.kinds.test_kind_contract import _act, _affine, _target_ref


def _q(rng: random.Random, den: int = 4) -> fmpq:
    return fmpq(rng.randint(-3 * den, 3 * den), den)


def _conv(rng: random.Random, shape: tuple[int, int, int], cout: int, k: int, *, stride: int = 1,
          pad: int = 0, act: str = "relu") -> TargetLayer:
    g = ConvGeometry(shape, (k, k), stride=(stride, stride), padding=(pad, pad))
    W = fmpq_mat([[_q(rng) for _ in range(g.patch_size)] for _ in range(cout)])
    return TargetLayer(Conv(g, W), tuple(_q(rng) for _ in range(cout)), act)


def option_a(c_in: int, side: int, c_out: int) -> Route:
    """Stride-2 subsampling of ``(c_in, side, side)`` plus zero channels up to ``c_out``."""
    half = (side + 1) // 2
    picks = [(c * side + 2 * y) * side + 2 * x if c < c_in else None
             for c in range(c_out) for y in range(half) for x in range(half)]
    return Route(tuple(picks), c_in * side * side)


def small_resnet(seed: int = 0) -> TargetNetwork:
    rng = random.Random(seed)
    L1 = _conv(rng, (1, 6, 6), 2, 3, pad=1)                       # stem            → (2,6,6)
    L2 = _conv(rng, (2, 6, 6), 2, 3, pad=1)                       # block 1, conv 1
    L3 = _conv(rng, (2, 6, 6), 2, 3, pad=1)                       # block 1, conv 2 + a_1
    L4 = _conv(rng, (2, 6, 6), 4, 3, stride=2, pad=1)             # block 2, conv 1 → (4,3,3)
    L5 = _conv(rng, (4, 3, 3), 4, 3, pad=1)                       # block 2, conv 2 + A(a_3)
    L6 = _conv(rng, (4, 3, 3), 4, 1, stride=2, act="identity")    # projection      → (4,2,2)
    L7 = _conv(rng, (4, 3, 3), 4, 3, stride=2, pad=1)             # block 3, conv 1 → (4,2,2)
    L8 = _conv(rng, (4, 2, 2), 4, 3, pad=1)                       # block 3, conv 2 + a_6
    L9 = TargetLayer(AvgPool(ConvGeometry((4, 2, 2), (2, 2), stride=(2, 2))))
    L10 = TargetLayer(fmpq_mat([[_q(rng) for _ in range(4)] for _ in range(3)]),
                      tuple(_q(rng) for _ in range(3)), "identity")
    wiring = (Wiring(0), Wiring(1), Wiring(2, Skip(1, Route.identity(72), "identity")),
              Wiring(3), Wiring(4, Skip(3, option_a(2, 6, 4), "selection")), Wiring(5),
              Wiring(5), Wiring(7, Skip(6, Route.identity(16), "identity")), Wiring(8),
              Wiring(9))
    lo, hi = (fmpq(0),) * 36, (fmpq(1),) * 36
    return TargetNetwork((L1, L2, L3, L4, L5, L6, L7, L8, L9, L10), lo, hi, wiring=wiring)


def reference_nodes(g: TargetNetwork, x: list[Fraction]) -> list[list[Fraction]]:
    nodes = [list(x)]
    for i, layer in enumerate(g.layers, 1):
        w = g.wire(i)
        M, b = _target_ref(layer)
        u = [z + c for z, c in zip(_affine(M, nodes[w.input]), b)]
        if w.skip is not None:
            src = nodes[w.skip.source]
            u = [v + (src[c] if c is not None else 0) for v, c in zip(u, w.skip.weight.picks)]
        nodes.append(_act(layer.activation, u))
    return nodes


def _frac(v) -> list[Fraction]:
    return [Fraction(int(fmpq(a).p), int(fmpq(a).q)) for a in v]


def _points(n: int, count: int, seed: int) -> list[list[Fraction]]:
    rng = random.Random(seed)
    return [[Fraction(rng.randint(0, 8), 8) for _ in range(n)] for _ in range(count)]


def test_exact_evaluation_equals_the_dense_reference():
    g = small_resnet()
    assert not g.is_chain and g.widths == (36, 72, 72, 72, 36, 36, 16, 16, 16, 4, 3)
    for x in _points(36, 6, 1):
        mine = [_frac(v) for v in g.evaluate_nodes(x)]
        assert mine == reference_nodes(g, x)
        assert _frac(g.evaluate(x)) == mine[-1]


def test_the_skips_matter():
    # dropping the wiring changes the function: the comparison above can fail
    g = small_resnet()
    no_skip = tuple(type(w)(w.input) for w in g.wiring)
    plain = TargetNetwork(g.layers, g.lower, g.upper, wiring=no_skip)
    x = _points(36, 1, 3)[0]
    assert _frac(plain.evaluate(x)) != reference_nodes(g, x)[-1]


def test_float_evaluation_agrees_with_exact():
    g = small_resnet()
    xs = _points(36, 5, 2)
    exact = np.array([[float(v) for v in g.evaluate(x)] for x in xs])
    got = g.evaluate_float(np.array([[float(v) for v in x] for x in xs]))
    assert np.allclose(got, exact, rtol=1e-12, atol=1e-12)


def test_boxes_are_the_sum_of_the_exact_ranges_and_contain_every_value():
    g = small_resnet()
    boxes = g.interval_boxes()
    # the reference: each term's exact range (row by row, vertex by vertex) summed, then σ
    ref = [([Fraction(0)] * 36, [Fraction(1)] * 36)]
    for i, layer in enumerate(g.layers, 1):
        w = g.wire(i)
        M, b = _target_ref(layer)
        lo_p, hi_p = ref[w.input]
        lo = [c + sum(m * (lo_p[t] if m > 0 else hi_p[t]) for t, m in enumerate(row))
              for row, c in zip(M, b)]
        hi = [c + sum(m * (hi_p[t] if m > 0 else lo_p[t]) for t, m in enumerate(row))
              for row, c in zip(M, b)]
        if w.skip is not None:
            slo, shi = ref[w.skip.source]
            lo = [v + (slo[c] if c is not None else 0) for v, c in zip(lo, w.skip.weight.picks)]
            hi = [v + (shi[c] if c is not None else 0) for v, c in zip(hi, w.skip.weight.picks)]
        ref.append((_act(layer.activation, lo), _act(layer.activation, hi)))
    assert [(_frac(lo), _frac(hi)) for lo, hi in boxes] == ref
    for x in _points(36, 8, 5):
        for node, (lo, hi) in zip(g.evaluate_nodes(x), boxes):
            assert all(a <= v <= b for a, v, b in zip(lo, node, hi))


def test_routes_apply_like_the_matrices_they_denote():
    r = option_a(2, 4, 3)
    M = r.to_matrix()
    assert Route.from_matrix(M) == r
    v = tuple(fmpq(k, 3) for k in range(32))
    assert apply_linear(r, v) == apply_linear(M, v)
    lo, hi = tuple(fmpq(-k) for k in range(32)), tuple(fmpq(k) for k in range(32))
    assert linear_interval(r, lo, hi) == linear_interval(M, lo, hi)
    A = np.arange(64.0).reshape(2, 32)
    assert np.array_equal(r.apply_float(A), A @ np.array(M.tolist(), dtype=float).T)


@pytest.mark.parametrize("wiring, message", [
    ((Wiring(0), Wiring(2)), "reads node 2, not an earlier node"),
    ((Wiring(0), Wiring(1, Skip(2, Route.identity(2), "identity"))), "not an earlier node"),
    ((Wiring(0), Wiring(1, Skip(0, Route.identity(2), "identity"))), "skip of shape 2×2"),
    ((Wiring(0), Wiring(1, Skip(1, fmpq_mat([[1, 0], [0, 1]]), "identity"))),
     "identity or selection route"),
])
def test_bad_wiring_is_refused(wiring, message):
    W = fmpq_mat([[1, 2], [3, 4]])
    layers = (TargetLayer(fmpq_mat([[1, 1, 1]] * 2), (fmpq(0),) * 2, "relu"),
              TargetLayer(W, (fmpq(0),) * 2, "identity"))
    with pytest.raises((ShapeError, InputError), match=message):
        TargetNetwork(layers, (fmpq(0),) * 3, (fmpq(1),) * 3, wiring=wiring)


def test_a_skip_route_must_be_what_its_kind_says():
    with pytest.raises(InputError, match="identity as its route"):
        Skip(0, Route((1, 0), 2), "identity")
    with pytest.raises(InputError, match="random skip"):
        Skip(0, Route((0, 1), 2), "random")


def _frozen_with_residual() -> FrozenNetwork:
    one = (fmpq(1),) * 2
    zero = (fmpq(0),) * 2
    L1 = FrozenLayer(0, fmpq_mat([[1, -1], [2, 1]]), one, zero, "relu")
    L2 = FrozenLayer(1, fmpq_mat([[1, 1], [-1, 3]]), (fmpq(1, 2), fmpq(2)), (fmpq(-1), fmpq(1)),
                     "relu")
    return FrozenNetwork(2, (L1, L2), (1, 2),
                         residuals=((2, Skip(0, Route((1, None), 2), "selection")),))


def test_a_frozen_residual_is_added_before_the_activation():
    f = _frozen_with_residual()
    for x in ([fmpq(1), fmpq(-2)], [fmpq(3, 2), fmpq(1, 5)], [fmpq(-4), fmpq(1)]):
        h1 = [max(x[0] - x[1], 0), max(2 * x[0] + x[1], 0)]
        u = [fmpq(1, 2) * (h1[0] + h1[1]) - 1 + x[1], 2 * (-h1[0] + 3 * h1[1]) + 1]
        expect = (max(u[0], fmpq(0)), max(u[1], fmpq(0)))
        assert f.evaluate(x) == expect
        assert f.evaluate_checkpoints(x)[-1] == expect
        assert np.allclose(f.evaluate_float(np.array([[float(v) for v in x]])),
                           [[float(v) for v in expect]])


def test_a_residual_sits_on_a_checkpoint_only():
    f = _frozen_with_residual()
    with pytest.raises(ShapeError, match="only a checkpoint"):
        FrozenNetwork(2, f.layers, (2,),
                      residuals=((1, Skip(0, Route((1, None), 2), "selection")),))
    with pytest.raises(ShapeError, match="shape"):
        FrozenNetwork(2, f.layers, (1, 2),
                      residuals=((2, Skip(1, Route((0, 1, 0), 2), "selection")),))


def test_the_plan_realizes_each_block_and_carries_its_skip_to_the_checkpoint():
    from exactnorm.constructions.plan import construct

    g = small_resnet()
    c = construct(g, seed=0)
    f = c.network
    cps = f.checkpoints
    # one residual per target skip, read from the checkpoint of the skip's source
    expect = [(cps[i - 1], 0 if w.skip.source == 0 else cps[w.skip.source - 1])
              for i, w in enumerate(g.wiring, 1) if w.skip is not None]
    assert [(j, r.source) for j, r in f.residuals] == expect
    # each segment's first layer reads the checkpoint of its target layer's input
    for i, w in enumerate(g.wiring, 1):
        first = cps[i - 2] + 1 if i > 1 else 1
        assert f.layers[first - 1].input == (0 if w.input == 0 else cps[w.input - 1])
    for x in _points(36, 5, 11):
        assert f.evaluate(x) == g.evaluate(x)
        assert f.evaluate_checkpoints(x) == [g.evaluate_nodes(x)[i] for i in range(1, 11)]
