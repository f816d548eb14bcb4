"""The ``conv`` kind: a convolution ``a ↦ K·patch_{y,x}(a)`` at every output position, grouped
or not, with one γ group per output channel (BatchNorm2d in eval mode).

``K`` is the ``c_out × (C/G)·kh·kw`` kernel matrix of ``G = groups`` groups
(:mod:`~exactnorm.model.operators.window`; depthwise: ``G = C``); output ``(o, y, x)`` is entry
``o·Ho·Wo + y·Wo + x``. The interval rule is the dense rule on each patch (padding pixels the
point 0), exact because each patch ranges over a product of intervals; it is computed kind-free
from :meth:`Conv.apply_columns` on the centre and the radius of the box
(:func:`~exactnorm.model.operators.base.box_image`): two integer products of the kernel and of
its absolute value with the patches.

>>> from flint import fmpq, fmpq_mat
>>> from exactnorm.model.operators.window import ConvGeometry
>>> g = ConvGeometry((1, 3, 3), (2, 2), padding=(1, 1), stride=(2, 2))
>>> op = Conv(g, fmpq_mat([[1, 1, 1, 1]]))
>>> op.apply(tuple(fmpq(k) for k in range(9))), op.describe()
((0, 3, 9, 24), 'conv 2×2 s2 p1 d1, 1→1 channels')
>>> depthwise = Conv(ConvGeometry((2, 1, 2), (1, 2)), fmpq_mat([[1, 1], [1, -1]]), groups=2)
>>> depthwise.apply((fmpq(1), fmpq(2), fmpq(3), fmpq(5))), depthwise.describe()
((3, -2), 'conv 1×2 s1 p0 d1, 2→2 channels, 2 groups')
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from flint import fmpz_mat

from exactnorm.errors import InputError, ShapeError
from exactnorm.exact.linalg import clear_denominators, to_numpy
from exactnorm.model.batch import as_columns, gather, gather_entries
from exactnorm.model.operators.base import box_image, matrix_shape
from exactnorm.model.operators.window import ConvGeometry, block_product
from exactnorm.model.values import Scaled, Vector

__all__ = ["NAME", "Conv", "conv_of"]

#: the certificate's word for this kind
NAME = "conv"


@dataclass(frozen=True)
class Conv:
    """A convolution (module doc): ``weight`` is the ``c_out × (C/groups)·kh·kw`` kernel matrix,
    exact (a float64 array in a float copy)."""

    geometry: ConvGeometry
    weight: Any
    groups: int = 1

    kind: ClassVar[str] = NAME

    def __post_init__(self) -> None:
        G, (rows, cols) = self.groups, matrix_shape(self.weight)
        C = self.geometry.input_shape[0]
        if type(G) is not int or G < 1 or C % G or rows % G:
            raise ShapeError(f"a convolution of {C} input and {rows} output channels cannot "
                             f"have {G!r} groups (a positive divisor of both)")
        if cols * G != self.geometry.patch_size:
            raise ShapeError(f"convolution weight has {cols} columns, a patch of its group has "
                             f"{self.geometry.patch_size // G} = (C/groups)·kh·kw entries")
        if rows == 0:
            raise ShapeError("a convolution has no output channel")

    @property
    def shape(self) -> tuple[int, int]:
        return math.prod(self.output_shape), self.geometry.input_size

    @property
    def output_shape(self) -> tuple[int, int, int]:
        return self.geometry.output_shape(self.channels)

    @property
    def channels(self) -> int:
        return matrix_shape(self.weight)[0]

    def apply(self, a: Vector) -> Vector:
        values: list[Any] = block_product(self.weight, self.geometry.patches(a),
                                          self.groups).entries()
        return tuple(values)

    def apply_columns(self, S: Scaled) -> Scaled:
        """One integer product of the kernel with the patches of all samples side by side. One
        sample is returned as ``channels × positions`` (C order), as a pointwise convolution
        reads it: a node goes through a segment without a copy."""
        K, kd = clear_denominators(self.weight)
        g, C = self.geometry, self.geometry.input_shape[0]
        shape = (S.num.nrows(), S.num.ncols())
        if g.pointwise and shape == (C, g.positions) \
                and g.input_size != C:  # one sample, channels × positions: its own patches
            return Scaled(block_product(K, S.num, self.groups), kd * S.den)  # type: ignore[arg-type]
        if shape[0] != g.input_size and shape[0] * shape[1] == g.input_size:
            # one sample in another layout: its patches read from its entries, no reshape
            P = gather_entries(S.num, g.patch_index)
            return Scaled(block_product(K, P, self.groups), kd * S.den)  # type: ignore[arg-type]
        S = as_columns(S, g.input_size)
        m = S.num.ncols()
        P = fmpz_mat(C, g.positions * m, S.num.entries()) \
            if g.pointwise and m else gather(S.num, g.patch_index)
        Z: Any = block_product(K, P, self.groups)  # c_out × positions·m: rows o·positions + p
        if m != 1:  # one sample stays channels × positions
            Z = fmpz_mat(self.shape[0], m, Z.entries()) if m else fmpz_mat(self.shape[0], 0)
        return Scaled(Z, kd * S.den)

    @functools.cached_property
    def _floats(self) -> np.ndarray:
        return self.weight if isinstance(self.weight, np.ndarray) else to_numpy(self.weight)

    @functools.cached_property
    def _used_columns(self) -> tuple[np.ndarray, np.ndarray]:
        """The kernel restricted to its nonzero patch columns and those columns' patch index: a
        channel block's masked kernel reads only its block's columns, so gathering and
        multiplying the others (exact zeros) would cost ``C`` times the work and memory."""
        W, idx = self._floats, self.geometry.patch_index
        used = np.flatnonzero(np.any(W != 0, axis=0))
        return (W, idx) if len(used) == W.shape[1] else (W[:, used], idx[used])

    def apply_float(self, A: np.ndarray, dtype: Any = np.float64) -> np.ndarray:
        """On the patches of the batch (padding pixels read an appended zero): the rounding of
        the ONNX export's im2col form, each output the kernel row times its patch. The patch
        rows are gathered sample-last (each gathered entry a contiguous run of the batch) so
        that one matrix product per group covers every position of every sample: a product
        per sample of a small kernel ran at a tenth of the speed."""
        A = np.asarray(A)
        n, P = len(A), self.geometry.positions
        cols = np.empty((A.shape[1] + 1, n), dtype=A.dtype)
        cols[:-1] = A.T
        cols[-1] = 0
        if self.groups == 1:
            W, idx = self._used_columns
            Z = W.astype(dtype) @ cols[idx].reshape(len(idx), P * n)
        else:
            G = self.groups
            rows = self.geometry.patch_size // G
            W = self._floats.astype(dtype).reshape(G, self.channels // G, rows)
            Z = np.matmul(W, cols[self.geometry.patch_index].reshape(G, rows, P * n))
        return Z.reshape(self.channels, P, n).transpose(2, 0, 1).reshape(n, self.channels * P)

    def interval(self, lo: Vector, hi: Vector) -> tuple[Vector, Vector]:
        return box_image(self, lo, hi)

    def describe(self) -> str:
        g = self.geometry
        return (f"conv {g.describe()}, {g.input_shape[0]}→{self.channels} channels"
                + (f", {self.groups} groups" if self.groups > 1 else ""))


def conv_of(layer: Any, what: str = "this construction") -> Conv:
    """The :class:`Conv` of a layer, or an :class:`InputError` naming the kind it has."""
    if not isinstance(layer.operator, Conv):
        raise InputError(f"{what} takes {NAME} layers only, not {layer.kind}")
    return layer.operator
