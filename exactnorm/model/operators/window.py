"""Windows of convolutions and poolings: the geometry, the patch indices, exact patch ranges.

Every value between layers is a vector; a tensor of shape ``(C, H, W)`` is the vector of length
``C·H·W`` in C order (index ``c·H·W + y·W + x``), so a flatten is the identity and never a layer
(docs/certificate-format.md, "Convolutional layers"). A window with geometry ``g`` reads, at every
output position ``(y, x)``, the patch whose entry ``t = c·kh·kw + u·kw + v`` is
``a[c, y·sh − ph + u·dh, x·sw − pw + v·dw]``, or 0 when that pixel lies in the zero padding.

A kernel matrix ``K`` maps each patch to its outputs. With ``G`` groups, output group ``k`` reads
input group ``k`` only: ``K`` is the ``G`` blocks of ``c_out/G`` rows and ``(C/G)·kh·kw``
columns, one under the other, and the map is their block-diagonal matrix times the patch
(:func:`block_product`), whose rows ``k·(C/G)·kh·kw …`` are group ``k``'s coordinates.

Nothing here materializes a window map as a dense matrix (the tests' references do:
``tests/kinds/test_kind_contract.py``).

>>> g = ConvGeometry((1, 3, 3), (2, 2), padding=(1, 1), stride=(2, 2))
>>> g.output_shape(1)
(1, 2, 2)
>>> g.patches(list(range(9))).tolist()[3]
[0, 2, 6, 8]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
from flint import fmpq, fmpq_mat, fmpz_mat

from exactnorm.checker.vocabulary import MAX_MAP_ENTRIES as MAX_PATCH_ENTRIES
from exactnorm.errors import LimitExceededError, ShapeError
from exactnorm.exact.linalg import FlintMatrix
from exactnorm.model.batch import (
    as_columns,
    from_columns,
    gather_entries,
    to_columns,
    window_sums,
)
from exactnorm.model.values import Scaled, Vector, column

__all__ = ["ConvGeometry", "MAX_PATCH_ENTRIES", "block_product", "WindowMeans"]


def _pair(x: Sequence[int], what: str, minimum: int) -> tuple[int, int]:
    vals = tuple(x)
    if len(vals) != 2 or any(type(v) is not int or v < minimum for v in vals):
        raise ShapeError(f"{what} must be two integers ≥ {minimum}, got {list(vals)}")
    return vals[0], vals[1]


@dataclass(frozen=True)
class ConvGeometry:
    """Input shape and window of a convolution or pooling (zero padding)."""

    input_shape: tuple[int, int, int]
    kernel_shape: tuple[int, int]
    stride: tuple[int, int] = (1, 1)
    padding: tuple[int, int] = (0, 0)
    dilation: tuple[int, int] = (1, 1)

    def __post_init__(self) -> None:
        shape = tuple(self.input_shape)
        if len(shape) != 3 or any(type(v) is not int or v < 1 for v in shape):
            raise ShapeError(f"input_shape must be three positive integers [C, H, W], got "
                             f"{list(shape)}")
        object.__setattr__(self, "input_shape", shape)
        object.__setattr__(self, "kernel_shape", _pair(self.kernel_shape, "kernel_shape", 1))
        object.__setattr__(self, "stride", _pair(self.stride, "stride", 1))
        object.__setattr__(self, "padding", _pair(self.padding, "padding", 0))
        object.__setattr__(self, "dilation", _pair(self.dilation, "dilation", 1))
        ho, wo = self.output_hw
        if ho < 1 or wo < 1:
            raise ShapeError(f"a {self.kernel_shape} window with padding {self.padding} and "
                             f"dilation {self.dilation} does not fit an input of shape "
                             f"{list(shape)}")

    @property
    def output_hw(self) -> tuple[int, int]:
        """``(Ho, Wo)``: ``floor((H + 2p − d(k − 1) − 1)/s) + 1`` each."""
        _, H, W = self.input_shape
        (kh, kw), (sh, sw) = self.kernel_shape, self.stride
        (ph, pw), (dh, dw) = self.padding, self.dilation
        return ((H + 2 * ph - dh * (kh - 1) - 1) // sh + 1,
                (W + 2 * pw - dw * (kw - 1) - 1) // sw + 1)

    def output_shape(self, channels: int) -> tuple[int, int, int]:
        return (channels,) + self.output_hw

    @property
    def input_size(self) -> int:
        return math.prod(self.input_shape)

    @property
    def patch_size(self) -> int:
        """``C·kh·kw``: the columns of the kernel matrix."""
        return self.input_shape[0] * self.kernel_shape[0] * self.kernel_shape[1]

    @property
    def positions(self) -> int:
        ho, wo = self.output_hw
        return ho * wo

    @property
    def pointwise(self) -> bool:
        """Kernel, stride and dilation 1, padding 0: a dense map on channels at every pixel."""
        return (self.kernel_shape == (1, 1) and self.stride == (1, 1)
                and self.padding == (0, 0) and self.dilation == (1, 1))

    def describe(self) -> str:
        """``"3×3 s1 p1 d1"`` (square parameters written once)."""
        s, p, d = (str(v[0]) if v[0] == v[1] else f"{v[0]},{v[1]}"
                   for v in (self.stride, self.padding, self.dilation))
        return f"{self.kernel_shape[0]}×{self.kernel_shape[1]} s{s} p{p} d{d}"

    @cached_property
    def patch_index(self) -> np.ndarray:
        """``(patch_size × positions)`` input indices of every patch entry, −1 for padding."""
        C, H, W = self.input_shape
        (kh, kw), (sh, sw) = self.kernel_shape, self.stride
        (ph, pw), (dh, dw) = self.padding, self.dilation
        ho, wo = self.output_hw
        if self.patch_size * ho * wo > MAX_PATCH_ENTRIES:
            raise LimitExceededError(f"a patch matrix of {self.patch_size}×{ho * wo} entries is "
                                     f"above the limit {MAX_PATCH_ENTRIES}")
        c, u, v = np.meshgrid(np.arange(C), np.arange(kh), np.arange(kw), indexing="ij")
        y, x = np.meshgrid(np.arange(ho), np.arange(wo), indexing="ij")
        rows = (y.reshape(1, -1) * sh - ph + u.reshape(-1, 1) * dh)
        cols = (x.reshape(1, -1) * sw - pw + v.reshape(-1, 1) * dw)
        inside = (rows >= 0) & (rows < H) & (cols >= 0) & (cols < W)
        idx = c.reshape(-1, 1) * H * W + rows * W + cols
        return np.where(inside, idx, -1)

    def patches(self, a: Sequence[Any]) -> fmpq_mat:
        """The ``patch_size × positions`` matrix whose column ``y·Wo + x`` is
        ``patch_{y,x}(a)`` (padding pixels 0), exact."""
        if len(a) != self.input_size:
            raise ShapeError(f"input of length {len(a)}, expected {self.input_size} = "
                             f"{'·'.join(map(str, self.input_shape))}")
        zero = fmpq(0)
        vals = [x if isinstance(x, fmpq) else fmpq(x) for x in a]
        flat = [vals[i] if i >= 0 else zero for i in self.patch_index.ravel().tolist()]
        return fmpq_mat(self.patch_size, self.positions, flat)


def block_product(K: FlintMatrix, P: FlintMatrix, groups: int = 1) -> FlintMatrix:
    """``diag(K_1, …, K_G)·P`` for ``K`` the ``G`` blocks of ``rows/G`` rows one under the other
    and ``P`` split into ``G`` row blocks alike (module doc): ``K·P`` for one group. Exact; each
    block is one FLINT product.

    >>> from flint import fmpz_mat
    >>> block_product(fmpz_mat([[1], [2]]), fmpz_mat([[3, 4], [5, 6]]), 2).tolist()
    [[3, 4], [10, 12]]
    """
    if groups == 1:
        return K * P
    rows, d, cols = K.nrows(), K.ncols(), P.ncols()
    if rows % groups or P.nrows() != groups * d:
        raise ShapeError(f"{groups} groups of a {rows}×{d} kernel do not read {P.nrows()} rows")
    kf: list[Any] = K.entries()
    pf: list[Any] = P.entries()
    per = rows // groups
    kinds: Any = (type(K), type(P))
    blocks = [kinds[0](per, d, kf[k * per * d:(k + 1) * per * d])
              * kinds[1](d, cols, pf[k * d * cols:(k + 1) * d * cols]) for k in range(groups)]
    out: Any = type(blocks[0])
    return out(rows, cols, [x for B in blocks for x in B.entries()])


class WindowMeans:
    """The operator members of the pooling kinds: output ``(c, p)`` is the mean of the inputs
    ``windows[c, :, p]``. Nothing is tuned (``channels`` 0, no weight); the map is monotone in
    every input (coefficients ``1/k > 0``), so the exact image of a box is that of its corners."""

    channels: ClassVar[int] = 0
    weight: ClassVar[None] = None
    #: the input and output tensor shapes (C order)
    input_shape: tuple[int, int, int]
    output_shape: tuple[int, int, int]
    #: ``(C, k, positions)`` input indices of each channel's windows of ``k`` entries
    windows: np.ndarray

    @property
    def shape(self) -> tuple[int, int]:
        return math.prod(self.output_shape), math.prod(self.input_shape)

    def apply(self, a: Vector) -> Vector:
        return tuple(to_columns(self.apply_columns(from_columns(column(a)))).entries())

    def apply_columns(self, S: Scaled) -> Scaled:
        """The sum of each window's rows over ``k`` times the denominator; one sample (in any
        layout) as one gather of its windows' entries times a column of ones."""
        n, (C, k, P) = self.shape[1], self.windows.shape
        rows, cols = S.num.nrows(), S.num.ncols()
        if rows * cols == n and (cols == 1 or rows != n):
            G = gather_entries(S.num, self.windows.transpose(0, 2, 1).reshape(C * P, k))
            return Scaled(G * fmpz_mat(k, 1, [1] * k), S.den * k)
        S = as_columns(S, n)
        return Scaled(window_sums(S.num, self.windows.transpose(1, 0, 2).reshape(k, -1)),
                      S.den * k)

    def apply_float(self, A: np.ndarray, dtype: Any = np.float64) -> np.ndarray:
        A = np.asarray(A)
        return A[:, self.windows].mean(axis=2, dtype=dtype).reshape(len(A), self.shape[0])

    def interval(self, lo: Vector, hi: Vector) -> tuple[Vector, Vector]:
        return self.apply(lo), self.apply(hi)
