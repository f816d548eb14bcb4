"""Windows of convolutions and poolings: the geometry, the patch indices, exact patch ranges.

Every value between layers is a vector; a tensor of shape ``(C, H, W)`` is the vector of length
``C·H·W`` in C order (index ``c·H·W + y·W + x``), so a flatten is the identity and never a layer
(docs/certificate-format.md, "Convolutional layers"). A window with geometry ``g`` reads, at every
output position ``(y, x)``, the patch whose entry ``t = c·kh·kw + u·kw + v`` is
``a[c, y·sh − ph + u·dh, x·sw − pw + v·dw]``, or 0 when that pixel lies in the zero padding.

Nothing here materializes a window map as a dense matrix except :func:`unfolded_matrix`, the
reference that tests compare against.

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
from typing import Any

import numpy as np
from flint import fmpq, fmpq_mat

from exactnorm.checker.vocabulary import MAX_MAP_ENTRIES as MAX_PATCH_ENTRIES
from exactnorm.errors import LimitExceededError, ShapeError
from exactnorm.exact.linalg import FlintMatrix
from exactnorm.model.values import Vector

__all__ = ["ConvGeometry", "MAX_PATCH_ENTRIES", "window_range", "add_channel_bias",
           "unfolded_matrix"]


def _pair(x: Sequence[int], what: str, minimum: int) -> tuple[int, int]:
    vals = tuple(x)
    if len(vals) != 2 or any(type(v) is not int or v < minimum for v in vals):
        raise ShapeError(f"{what} must be two integers ≥ {minimum}, got {list(vals)}")
    return vals[0], vals[1]


@dataclass(frozen=True)
class ConvGeometry:
    """Input shape and window of a convolution or pooling (zero padding, groups = 1)."""

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
        (kh, kw), s, p, d = self.kernel_shape, self.stride, self.padding, self.dilation

        def one(v: tuple[int, int]) -> str:
            return str(v[0]) if v[0] == v[1] else f"{v[0]},{v[1]}"

        return f"{kh}×{kw} s{one(s)} p{one(p)} d{one(d)}"

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

    def patches_float(self, X: np.ndarray) -> np.ndarray:
        """float64 patches of a batch ``X`` (n × input_size) → (n, patch_size, positions)."""
        idx = self.patch_index
        padded = np.concatenate([np.asarray(X, dtype=np.float64),
                                 np.zeros((len(X), 1))], axis=1)
        return padded[:, np.where(idx >= 0, idx, padded.shape[1] - 1)]


def _split_signs(K: FlintMatrix) -> tuple[fmpq_mat, fmpq_mat]:
    """``K = K⁺ + K⁻`` with ``K⁺ ≥ 0 ≥ K⁻`` entry-wise."""
    entries = [fmpq(x) for x in K.entries()]
    zero = fmpq(0)
    r, c = K.nrows(), K.ncols()
    pos = fmpq_mat(r, c, [x if x > 0 else zero for x in entries])
    neg = fmpq_mat(r, c, [x if x < 0 else zero for x in entries])
    return pos, neg


def window_range(K: FlintMatrix, g: ConvGeometry, lo: Sequence[fmpq],
                 hi: Sequence[fmpq]) -> tuple[fmpq_mat, fmpq_mat]:
    """Exact minimum and maximum of ``K·patch_{y,x}(a)`` over the box ``lo ≤ a ≤ hi``, per row
    and position (``rows × positions``): the dense interval rule on each patch, padding pixels
    the point 0. Exact, since each patch ranges over a product of intervals."""
    plo, phi = g.patches(lo), g.patches(hi)
    pos, neg = _split_signs(K)
    return pos * plo + neg * phi, pos * phi + neg * plo


def add_channel_bias(M: fmpq_mat, bias: Sequence[fmpq]) -> Vector:
    """Row ``o`` of ``M`` (one channel at every position) plus ``bias[o]``, in C order."""
    P = M.ncols()
    flat = M.entries()
    return tuple(flat[o * P + p] + bias[o] for o in range(M.nrows()) for p in range(P))


def unfolded_matrix(g: ConvGeometry, K: FlintMatrix) -> fmpq_mat:
    """The dense ``(c·Ho·Wo) × (C·H·W)`` matrix of the window map ``a ↦ K·patch(a)``.

    A reference for tests on small images only (it is what the certificate never contains):
    row ``o·Ho·Wo + p`` has ``K[o, t]`` in the column of patch entry ``t`` of position ``p``.

    >>> from flint import fmpz_mat
    >>> g = ConvGeometry((1, 2, 2), (1, 1))
    >>> unfolded_matrix(g, fmpz_mat([[3]])) == 3 * fmpq_mat([[1, 0, 0, 0], [0, 1, 0, 0],
    ...                                                    [0, 0, 1, 0], [0, 0, 0, 1]])
    True
    """
    c, d = K.nrows(), K.ncols()
    P = g.positions
    idx = g.patch_index
    M = fmpq_mat(c * P, g.input_size)
    for o in range(c):
        for t in range(d):
            w = K[o, t]
            if w == 0:
                continue
            for p in range(P):
                i = int(idx[t, p])
                if i >= 0:
                    M[o * P + p, i] += w
    return M
