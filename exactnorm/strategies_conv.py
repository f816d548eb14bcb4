"""Hypothesis strategies for convolutional targets (small images, exact entries).

:func:`conv_geometries` draws a convolution geometry that fits its input (stride, zero padding,
dilation); :func:`conv_targets` a :class:`~exactnorm.model.network.TargetNetwork` of one or two
convolutions, optionally an average pooling between them and a dense layer after the implicit
flatten, with a rational box. Sizes shrink towards 1 channel and the smallest image, entries
towards 0, denominators towards 1, padding and dilation towards their defaults.

>>> from hypothesis import find
>>> t = find(conv_targets(), lambda t: True)
>>> t.depth, t.layers[0].geometry.input_shape
(1, (1, 1, 1))
"""

from __future__ import annotations

from typing import Any

from flint import fmpq, fmpq_mat
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from exactnorm.model.kinds import ConvGeometry, ConvTargetLayer, PoolTargetLayer, TargetKind
from exactnorm.model.network import TargetLayer, TargetNetwork

__all__ = ["conv_geometries", "conv_targets", "small_rationals"]


def small_rationals(bound: int = 3, max_den: int = 4) -> SearchStrategy[fmpq]:
    """``fmpq`` with numerator in ``[−bound, bound]`` and denominator in ``[1, max_den]``."""
    return st.builds(lambda n, d: fmpq(n, d), st.integers(-bound, bound),
                     st.integers(1, max_den))


@st.composite
def conv_geometries(draw: Any, input_shape: tuple[int, int, int] | None = None,
                    max_side: int = 5, max_channels: int = 2) -> ConvGeometry:
    """A geometry (kernel ≤ 3, stride ≤ 2, padding ≤ 1, dilation ≤ 2) that fits its input."""
    if input_shape is None:
        input_shape = (draw(st.integers(1, max_channels)), draw(st.integers(1, max_side)),
                       draw(st.integers(1, max_side)))
    _, H, W = input_shape
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    sh, sw = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    ph, pw = draw(st.integers(0, 1)), draw(st.integers(0, 1))
    dh, dw = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    if H + 2 * ph >= dh * (kh - 1) + 1 and W + 2 * pw >= dw * (kw - 1) + 1:
        return ConvGeometry(input_shape, (kh, kw), (sh, sw), (ph, pw), (dh, dw))
    # a window that does not fit becomes the 1×1 kernel, which always does
    return ConvGeometry(input_shape, (1, 1), (sh, sw), (0, 0), (1, 1))


def _matrix(draw: Any, rows: int, cols: int) -> fmpq_mat:
    return fmpq_mat(rows, cols, [draw(small_rationals()) for _ in range(rows * cols)])


def _bias(draw: Any, n: int) -> tuple[fmpq, ...]:
    return tuple(draw(small_rationals()) for _ in range(n))


@st.composite
def conv_targets(draw: Any, max_side: int = 5, max_channels: int = 2,
                 dense_head: bool | None = None) -> TargetNetwork:
    """A small convolutional target (module doc) with an exact box of width ≥ 0."""
    g1 = draw(conv_geometries(max_side=max_side, max_channels=max_channels))
    c1 = draw(st.integers(1, max_channels))
    act = st.sampled_from(["relu", "identity"])
    first = ConvTargetLayer(g1, _matrix(draw, c1, g1.patch_size), _bias(draw, c1), draw(act))
    layers: list[TargetKind] = [first]
    shape = first.output_shape
    if shape[1] >= 2 and shape[2] >= 2 and draw(st.booleans()):
        pool = PoolTargetLayer(ConvGeometry(shape, (2, 2), (draw(st.integers(1, 2)),) * 2))
        layers.append(pool)
        shape = pool.output_shape
    if draw(st.booleans()):
        g2 = draw(conv_geometries(shape))
        c2 = draw(st.integers(1, max_channels))
        second = ConvTargetLayer(g2, _matrix(draw, c2, g2.patch_size), _bias(draw, c2),
                                 draw(act))
        layers.append(second)
        shape = second.output_shape
    if dense_head if dense_head is not None else draw(st.booleans()):
        d = shape[0] * shape[1] * shape[2]
        out = draw(st.integers(1, 2))
        layers.append(TargetLayer(_matrix(draw, out, d), _bias(draw, out), "identity"))
    n = g1.input_size
    lower = tuple(draw(small_rationals(2, 2)) for _ in range(n))
    width = [draw(st.integers(0, 2)) for _ in range(n)]
    return TargetNetwork(tuple(layers), lower,
                             tuple(lo + w for lo, w in zip(lower, width)))
