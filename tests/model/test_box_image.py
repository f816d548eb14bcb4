"""The exact image of a box on integers (centre and radius, kind-free: operators/base.py) against
the entry-by-entry rule ``Σ_k (w > 0 ? w lo_k : w hi_k)`` of ``values.affine_interval`` on the
operator's matrix unfolded from ``apply`` on the unit vectors — two paths that share no code but
the exact numbers: random convolutions with strides, padding, dilation and groups, on boxes of
dyadic and other rationals, points among them; the layouts a node is held in; whole networks."""

from __future__ import annotations

import random

import pytest
from flint import fmpq, fmpq_mat

from exactnorm.model.layers import TargetLayer
from exactnorm.model.network import TargetNetwork, Wiring
from exactnorm.model.operators import AvgPool, Conv, ConvGeometry, Dense, GlobalAvgPool
from exactnorm.model.operators.base import box_image, box_image_columns, magnitude
from exactnorm.model.routes import Route, Skip
from exactnorm.model.values import Scaled, activate, affine_interval

DENOMINATORS = (1, 2, 4, 2**30, 3, 10)


def _q(rng: random.Random, bound: int = 5) -> fmpq:
    return fmpq(rng.randint(-bound * 8, bound * 8), rng.choice(DENOMINATORS))


def _box(rng: random.Random, n: int) -> tuple[tuple[fmpq, ...], tuple[fmpq, ...]]:
    lo, hi = [], []
    for _ in range(n):
        a = _q(rng)
        b = a if rng.random() < 0.2 else a + abs(_q(rng))  # some coordinates a point
        lo.append(a)
        hi.append(b)
    return tuple(lo), tuple(hi)


def _unfolded(op) -> fmpq_mat:
    """The operator's matrix, column ``k`` its image of the ``k``-th unit vector."""
    rows, cols = op.shape
    A = fmpq_mat(rows, cols)
    for k in range(cols):
        e = [fmpq(0)] * cols
        e[k] = fmpq(1)
        for r, v in enumerate(op.apply(tuple(e))):
            A[r, k] = v
    return A


def _conv(rng: random.Random) -> Conv:
    C = rng.choice([1, 2, 3, 4])
    groups = rng.choice([G for G in range(1, C + 1) if C % G == 0])
    while True:
        H, W = rng.randint(1, 6), rng.randint(1, 6)
        kh, kw = rng.randint(1, 3), rng.randint(1, 3)
        pad = (rng.randint(0, 2), rng.randint(0, 1))
        dil = (rng.randint(1, 2), rng.randint(1, 2))
        if H + 2 * pad[0] >= dil[0] * (kh - 1) + 1 and W + 2 * pad[1] >= dil[1] * (kw - 1) + 1:
            break
    g = ConvGeometry((C, H, W), (kh, kw), (rng.randint(1, 3), rng.randint(1, 2)), pad, dil)
    c_out = groups * rng.randint(1, 3)
    K = fmpq_mat([[_q(rng) if rng.random() < 0.85 else fmpq(0)
                   for _ in range(g.patch_size // groups)] for _ in range(c_out)])
    return Conv(g, K, groups)


@pytest.mark.parametrize("seed", range(40))
def test_a_convolutions_box_image_is_the_entry_by_entry_range(seed):
    rng = random.Random(seed)
    op = _conv(rng)
    A = _unfolded(op)
    lo, hi = _box(rng, op.shape[1])
    zero = (fmpq(0),) * op.shape[0]
    assert op.interval(lo, hi) == box_image(op, lo, hi) == affine_interval(A, zero, lo, hi)
    # |A| is the unfolded magnitude: every entry of A is one kernel entry or 0
    assert _unfolded(magnitude(op)) == fmpq_mat(A.nrows(), A.ncols(),
                                                 [abs(x) for x in A.entries()])
    bias = tuple(_q(rng) for _ in range(op.channels))
    layer = TargetLayer(op, bias, rng.choice(["relu", "identity"]))
    per = op.shape[0] // op.channels
    mn, mx = affine_interval(A, tuple(bias[r // per] for r in range(op.shape[0])), lo, hi)
    assert layer.affine_interval(lo, hi) == (mn, mx)
    assert layer.interval(lo, hi) == (activate(layer.activation, mn),
                                      activate(layer.activation, mx))


@pytest.mark.parametrize("seed", range(12))
def test_dense_and_pooling_box_images_are_the_entry_by_entry_range(seed):
    rng = random.Random(100 + seed)
    rows, cols = rng.randint(1, 6), rng.randint(1, 7)
    dense = Dense(fmpq_mat([[_q(rng) for _ in range(cols)] for _ in range(rows)]))
    shape = (rng.randint(1, 3), rng.randint(2, 5), rng.randint(2, 5))
    pools = [GlobalAvgPool(shape),
             AvgPool(ConvGeometry(shape, (2, 2), (rng.randint(1, 2),) * 2, (0, 0)))]
    for op in [dense, *pools]:
        lo, hi = _box(rng, op.shape[1])
        zero = (fmpq(0),) * op.shape[0]
        assert op.interval(lo, hi) == affine_interval(_unfolded(op), zero, lo, hi)
        assert magnitude(op) is op if op.weight is None else True


@pytest.mark.parametrize("seed", range(8))
def test_the_layout_a_sample_is_held_in_does_not_change_its_image(seed):
    """A convolution leaves its one sample as channels × positions and the next layer reads it
    so; the same sample as a column gives the same image."""
    rng = random.Random(200 + seed)
    op = _conv(rng)
    lo, hi = _box(rng, op.shape[1])
    n, C = op.shape[1], op.geometry.input_shape[0]
    as_column = box_image_columns(op, Scaled.of(lo, n, 1), Scaled.of(hi, n, 1))
    as_image = box_image_columns(op, Scaled.of(lo, C, n // C), Scaled.of(hi, C, n // C))
    assert [s.values() for s in as_column] == [s.values() for s in as_image] \
        == list(box_image(op, lo, hi))


@pytest.mark.parametrize("seed", range(10))
def test_network_boxes_are_the_layer_by_layer_entry_ranges(seed):
    """Two convolutions (the second reads the first as channels × positions), a residual skip
    of the first's output (a route), an average pooling and a dense head, against the
    entry-by-entry rule on each unfolded layer, the route's ends added before σ."""
    rng = random.Random(300 + seed)
    C = rng.choice([1, 2])
    g1 = ConvGeometry((C, 5, 5), (3, 3), padding=(1, 1))
    c1 = rng.choice([2, 4])
    first = TargetLayer(Conv(g1, fmpq_mat([[_q(rng) for _ in range(g1.patch_size)]
                                            for _ in range(c1)])),
                        tuple(_q(rng) for _ in range(c1)), "relu")
    G = rng.choice([1, 2])
    d = rng.randint(1, 2)  # padding d keeps the shape: the skip adds the first's output
    g2 = ConvGeometry((c1, 5, 5), (3, 3), padding=(1, d), dilation=(1, d))
    second = TargetLayer(Conv(g2, fmpq_mat([[_q(rng) for _ in range(g2.patch_size // G)]
                                             for _ in range(c1)]), G),
                         tuple(_q(rng) for _ in range(c1)), "relu")
    pool = TargetLayer(AvgPool(ConvGeometry((c1, 5, 5), (2, 2), (2, 2))))
    head = TargetLayer(Dense(fmpq_mat([[_q(rng) for _ in range(c1 * 4)] for _ in range(3)])),
                       tuple(_q(rng) for _ in range(3)), "identity")
    n = C * 25
    lo, hi = _box(rng, n)
    wiring = (Wiring(0), Wiring(1, Skip(1, Route.identity(c1 * 25), "identity")),
              Wiring(2), Wiring(3))
    t = TargetNetwork((first, second, pool, head), lo, hi, wiring=wiring)
    ref = [(lo, hi)]
    for i, layer in enumerate(t.layers, 1):
        w = t.wire(i)
        A = _unfolded(layer.operator)
        per = A.nrows() // max(layer.channels, 1)
        bias = tuple(layer.bias[r // per] for r in range(A.nrows())) if layer.bias \
            else (fmpq(0),) * A.nrows()
        mn, mx = affine_interval(A, bias, *ref[w.input])
        if w.skip is not None:
            slo, shi = ref[w.skip.source]
            mn, mx = (tuple(a + b for a, b in zip(mn, slo)),
                      tuple(a + b for a, b in zip(mx, shi)))
        ref.append((activate(layer.activation, mn), activate(layer.activation, mx)))
    assert t.interval_boxes() == ref
