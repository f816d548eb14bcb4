"""The exact batch evaluation (integers over one denominator, one sample per column) equals the
per-sample evaluation as rationals: every kind's ``evaluate_columns`` against its ``evaluate``,
:meth:`TargetNetwork.evaluate_columns` against ``evaluate`` and against the Fraction reference of
tests/model/test_residual_model.py, on chains and residual graphs with padding, stride, dilation,
identity and selection skips, mixed denominators and empty batches."""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest
from flint import fmpq, fmpq_mat, fmpz_mat
from hypothesis import given, settings
from hypothesis import strategies as st

from exactnorm.errors import ShapeError
from exactnorm.model.batch import from_columns, to_columns
from exactnorm.model.layers import TargetLayer
from exactnorm.model.network import TargetNetwork, Wiring
from exactnorm.model.operators import AvgPool, Conv, ConvGeometry, GlobalAvgPool
from exactnorm.model.routes import Route, Skip, apply_linear, apply_linear_columns
from exactnorm.outputs.data_eval import exact_outputs
from tests.model.test_residual_model import option_a, reference_nodes, small_resnet

DENS = (1, 2, 3, 4, 7, 16, 1024)


def _q(rng: random.Random) -> fmpq:
    """A rational with a denominator drawn from :data:`DENS` (mixed denominators)."""
    den = rng.choice(DENS)
    return fmpq(rng.randint(-3 * den, 3 * den), den)


def _batch(rng: random.Random, d: int, m: int) -> fmpq_mat:
    return fmpq_mat(d, m, [_q(rng) for _ in range(d * m)])


def _per_sample(f, A: fmpq_mat) -> list[tuple]:
    m = A.ncols()
    flat = A.entries()
    return [tuple(f(tuple(flat[c::m]))) for c in range(m)]


def _columns(B: fmpq_mat) -> list[tuple]:
    m = B.ncols()
    flat = B.entries()
    return [tuple(flat[c::m]) for c in range(m)]


def _conv(rng: random.Random, shape, cout, k, *, stride=(1, 1), pad=(0, 0), dil=(1, 1),
          act="relu") -> TargetLayer:
    g = ConvGeometry(shape, k, stride=stride, padding=pad, dilation=dil)
    W = fmpq_mat(cout, g.patch_size, [_q(rng) for _ in range(cout * g.patch_size)])
    return TargetLayer(Conv(g, W), tuple(_q(rng) for _ in range(cout)), act)


def _chain(seed: int) -> TargetNetwork:
    """conv (padding, stride, dilation) → conv → avgpool → globalavgpool → dense."""
    rng = random.Random(seed)
    L1 = _conv(rng, (2, 7, 6), 3, (3, 2), stride=(1, 2), pad=(2, 1), dil=(2, 1))
    c, h, w = L1.output_shape
    L2 = _conv(rng, (c, h, w), 2, (2, 2), pad=(1, 0), act="identity")
    c, h, w = L2.output_shape
    L3 = TargetLayer(AvgPool(ConvGeometry((c, h, w), (2, 2), stride=(1, 2))))
    L4 = TargetLayer(GlobalAvgPool(L3.output_shape))
    L5 = TargetLayer(fmpq_mat(3, L4.width, [_q(rng) for _ in range(3 * L4.width)]),
                     tuple(_q(rng) for _ in range(3)), "relu")
    d0 = L1.input_size
    return TargetNetwork((L1, L2, L3, L4, L5), (fmpq(-1),) * d0, (fmpq(1),) * d0)


@pytest.mark.parametrize("seed", range(3))
def test_every_kind_batch_equals_its_per_sample_evaluation(seed):
    rng = random.Random(seed)
    g = _chain(seed)
    A = _batch(rng, g.widths[0], 5)
    for layer in g.layers:
        B = layer.evaluate_columns(A)
        assert (B.nrows(), B.ncols()) == (layer.width, A.ncols())
        assert _columns(B) == _per_sample(layer.evaluate, A), layer.describe()
        A = _batch(rng, layer.width, 5) if rng.random() < 0.5 else B


@pytest.mark.parametrize("seed", range(3))
def test_a_chain_batch_equals_evaluate(seed):
    rng = random.Random(100 + seed)
    g = _chain(seed)
    A = _batch(rng, g.widths[0], 4)
    assert _columns(g.evaluate_columns(A)) == _per_sample(g.evaluate, A)


@pytest.mark.parametrize("seed", range(3))
def test_a_resnet_batch_equals_evaluate_and_the_fraction_reference(seed):
    rng = random.Random(200 + seed)
    g = small_resnet(seed)
    A = _batch(rng, g.widths[0], 6)
    got = _columns(g.evaluate_columns(A))
    assert got == _per_sample(g.evaluate, A)
    for c, col in enumerate(_columns(A)):
        ref = reference_nodes(g, [Fraction(int(x.p), int(x.q)) for x in col])[-1]
        assert [Fraction(int(x.p), int(x.q)) for x in got[c]] == ref


def test_the_batch_follows_the_skips():
    """Dropping a skip changes the batch result: the wiring is really followed."""
    g = small_resnet(1)
    plain = TargetNetwork(g.layers, g.lower, g.upper,
                          wiring=tuple(Wiring(w.input) for w in g.wiring))
    A = _batch(random.Random(3), g.widths[0], 4)
    assert _columns(plain.evaluate_columns(A)) == _per_sample(plain.evaluate, A)
    assert plain.evaluate_columns(A) != g.evaluate_columns(A)


def test_a_node_read_late_survives_and_the_output_is_last():
    """Node 1 feeds layers 2 and 4 (a long skip); node 0 feeds a selection skip at layer 3."""
    rng = random.Random(7)
    L1 = _conv(rng, (1, 4, 4), 2, (3, 3), pad=(1, 1))
    L2 = _conv(rng, (2, 4, 4), 2, (3, 3), pad=(1, 1))
    L3 = _conv(rng, (2, 4, 4), 2, (1, 1), act="identity")
    L4 = _conv(rng, (2, 4, 4), 2, (3, 3), pad=(1, 1))
    sel = Route(tuple(None if r % 5 == 0 else r % 16 for r in range(32)), 16)
    wiring = (Wiring(0), Wiring(1), Wiring(2, Skip(0, sel, "selection")),
              Wiring(1, Skip(3, Route.identity(32), "identity")))
    g = TargetNetwork((L1, L2, L3, L4), (fmpq(0),) * 16, (fmpq(1),) * 16, wiring=wiring)
    assert g.last_readers() == [3, 4, 3, 4, 4]
    A = _batch(rng, 16, 3)
    assert _columns(g.evaluate_columns(A)) == _per_sample(g.evaluate, A)


def test_empty_and_integer_batches():
    g = small_resnet(0)
    empty = g.evaluate_columns(fmpq_mat(g.widths[0], 0))
    assert (empty.nrows(), empty.ncols()) == (g.widths[-1], 0)
    for layer in _chain(0).layers:
        out = layer.evaluate_columns(fmpq_mat(layer.input_size, 0))
        assert (out.nrows(), out.ncols()) == (layer.width, 0)
    A = fmpz_mat(g.widths[0], 2, [random.Random(1).randint(-4, 4) for _ in range(72)])
    assert _columns(g.evaluate_columns(A)) == _per_sample(g.evaluate, fmpq_mat(A))


def test_a_batch_of_the_wrong_size_is_refused():
    g = small_resnet(0)
    with pytest.raises(ShapeError):
        g.evaluate_columns(fmpq_mat(g.widths[0] + 1, 2))
    with pytest.raises(ShapeError):
        g.layers[0].affine_columns(from_columns(fmpq_mat(3, 1)))
    with pytest.raises(ShapeError):
        apply_linear_columns(Route.identity(4), from_columns(fmpq_mat(3, 1)))


def test_routes_and_matrices_apply_to_batches_as_to_vectors():
    rng = random.Random(11)
    A = _batch(rng, 72, 3)
    for P in (option_a(2, 6, 4), Route.identity(72),
              fmpq_mat(5, 72, [_q(rng) for _ in range(5 * 72)])):
        got = to_columns(apply_linear_columns(P, from_columns(A)))
        assert _columns(got) == _per_sample(lambda v, P=P: apply_linear(P, v), A)


def test_exact_outputs_runs_the_graph_on_float_samples():
    """The data path: float samples (dyadic rationals) through a residual target."""
    g = small_resnet(2)
    X = np.random.default_rng(0).random((5, g.widths[0]))
    values, best = exact_outputs(g, X)
    for k, row in enumerate(X):
        out = g.evaluate([fmpq(*float(x).as_integer_ratio()) for x in row])
        assert values[k].tolist() == [int(v.p) / int(v.q) for v in out]
        assert best[k] == max(range(len(out)), key=lambda i: (out[i], -i))


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 3), st.integers(1, 5), st.integers(1, 5), st.integers(1, 3),
       st.integers(1, 3), st.integers(0, 2), st.integers(1, 2), st.integers(1, 2),
       st.integers(0, 4), st.integers(0, 2**32))
def test_conv_batch_property(c, h, w, kh, kw, pad, stride, dil, m, seed):
    rng = random.Random(seed)
    span_h, span_w = dil * (kh - 1) + 1, dil * (kw - 1) + 1
    if h + 2 * pad < span_h or w + 2 * pad < span_w:
        return
    layer = _conv(rng, (c, h, w), rng.randint(1, 3), (kh, kw), stride=(stride, stride),
                  pad=(pad, pad), dil=(dil, dil), act=rng.choice(("relu", "identity")))
    A = _batch(rng, layer.input_size, m)
    B = layer.evaluate_columns(A)
    assert (B.nrows(), B.ncols()) == (layer.width, m)
    assert _columns(B) == _per_sample(layer.evaluate, A)
