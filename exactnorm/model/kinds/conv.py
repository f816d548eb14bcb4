"""The ``conv`` kind: convolutions with one γ and one β per channel (BatchNorm2d in eval mode).

A convolution with geometry ``g`` maps ``a`` to ``K·patch_{y,x}(a) + b`` at every output position
``(y, x)`` (:mod:`~exactnorm.model.kinds.window`); ``K`` is the ``c_out × C·kh·kw`` kernel matrix.
The frozen layer computes ``σ(γ ⊙_channels (V·patch) + β)``, the same γ and β at every position.
The interval rule is the dense rule on each patch (padding pixels the point 0), exact because each
patch ranges over a product of intervals.

>>> from flint import fmpq, fmpq_mat
>>> from exactnorm.model.kinds.window import ConvGeometry
>>> g = ConvGeometry((1, 3, 3), (2, 2), padding=(1, 1), stride=(2, 2))
>>> layer = ConvTargetLayer(g, fmpq_mat([[1, 1, 1, 1]]), (fmpq(0),), "identity")
>>> layer.evaluate(tuple(fmpq(k) for k in range(9)))
(0, 3, 9, 24)
>>> layer.describe()
'conv 2×2 s2 p1 d1, 1→1 channels, identity'
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from flint import fmpq, fmpq_mat, fmpz, fmpz_mat

from exactnorm.checker.vocabulary import ACTIVATIONS
from exactnorm.errors import InputError, ShapeError
from exactnorm.exact.linalg import FlintMatrix, clear_denominators, to_numpy
from exactnorm.model.batch import activate_batch, add_row_bias, from_columns, gather, to_columns
from exactnorm.model.kinds.base import LayerKind, Skip, rounded
from exactnorm.model.kinds.window import ConvGeometry, add_channel_bias, window_range
from exactnorm.model.routes import FloatIdentity, matrix_of
from exactnorm.model.values import Node, Scaled, Vector, activate, scaled_affine

__all__ = ["NAME", "ConvTargetLayer", "FrozenConvLayer", "FloatConvLayer", "KIND",
           "STABILITY_FAMILIES"]

#: the certificate's word for this kind
NAME = "conv"
#: the boxes on which a frozen convolution's ReLU channels are tested (docs/certificate-format.md
#: §8): every output position's patch box (the default), or their hull (one box per patch
#: coordinate)
STABILITY_FAMILIES = ("positions", "hull")


def _floats(v: Any) -> np.ndarray:
    return np.array([float(x) for x in v])


class _ChannelGrid:
    """The shape of a convolution's output, shared by the target, the frozen and the float
    convolution: ``channels`` maps on the geometry's output grid, one γ and one β per channel."""

    geometry: ConvGeometry

    @property
    def channels(self) -> int:
        raise NotImplementedError

    @property
    def output_shape(self) -> tuple[int, int, int]:
        return self.geometry.output_shape(self.channels)

    @property
    def input_size(self) -> int:
        return self.geometry.input_size

    @property
    def width(self) -> int:
        return math.prod(self.output_shape)

    @property
    def tuned_parameters(self) -> int:
        return 2 * self.channels


@dataclass(frozen=True)
class ConvTargetLayer(_ChannelGrid):
    """A target convolution ``σ(K·patch + b)``; ``weight`` is ``c_out × C·kh·kw``."""

    geometry: ConvGeometry
    weight: fmpq_mat
    bias: Vector
    activation: str

    kind: ClassVar[str] = NAME

    def __post_init__(self) -> None:
        if self.weight.ncols() != self.geometry.patch_size:
            raise ShapeError(f"convolution weight has {self.weight.ncols()} columns, the patch "
                             f"has {self.geometry.patch_size} = C·kh·kw entries")
        if len(self.bias) != self.weight.nrows():
            raise ShapeError(f"convolution bias has length {len(self.bias)}, expected "
                             f"{self.weight.nrows()}")
        if self.activation not in ACTIVATIONS:
            raise InputError(f"unknown activation {self.activation!r}")

    @property
    def channels(self) -> int:
        return self.weight.nrows()


    @property
    def shape(self) -> tuple[int, int]:
        return self.width, self.input_size

    @property
    def parameters(self) -> int:
        return self.weight.nrows() * self.weight.ncols() + len(self.bias)

    def affine(self, a: Vector) -> Vector:
        return add_channel_bias(self.weight * self.geometry.patches(a), self.bias)

    def affine_interval(self, lo: Vector, hi: Vector) -> tuple[Vector, Vector]:
        mn, mx = window_range(self.weight, self.geometry, lo, hi)
        return add_channel_bias(mn, self.bias), add_channel_bias(mx, self.bias)

    def affine_float(self, A: np.ndarray) -> np.ndarray:
        P = self.geometry.patches_float(A)
        out = np.einsum("od,ndp->nop", to_numpy(self.weight), P)
        out += _floats(self.bias)[None, :, None]
        return out.reshape(len(A), -1)

    def evaluate(self, a: Vector) -> Vector:
        return activate(self.activation, self.affine(a))

    def interval(self, lo: Vector, hi: Vector) -> tuple[Vector, Vector]:
        mn, mx = self.affine_interval(lo, hi)
        return activate(self.activation, mn), activate(self.activation, mx)

    def evaluate_float(self, A: np.ndarray) -> np.ndarray:
        out = self.affine_float(A)
        return np.maximum(out, 0.0) if self.activation == "relu" else out

    @functools.cached_property
    def integer_kernel(self) -> tuple[fmpz_mat, fmpz]:
        """The kernel as integers over its least common denominator."""
        return clear_denominators(self.weight)

    def affine_columns(self, S: Scaled) -> Scaled:
        """``K·patch + b`` for a batch (integers over one denominator, one sample per column):
        one integer product of the kernel with the patches of all samples side by side."""
        K, kd = self.integer_kernel
        g, m = self.geometry, S.num.ncols()
        if S.num.nrows() != g.input_size:
            raise ShapeError(f"convolution input of {S.num.nrows()} rows, expected "
                             f"{g.input_size}")
        Z = K * gather(S.num, g.patch_index)  # c_out × positions·m: rows o·positions + p
        Z = fmpz_mat(self.width, m, Z.entries()) if m else fmpz_mat(self.width, 0)
        return add_row_bias(Z, kd * S.den, self.bias, g.positions)

    def evaluate_columns(self, A: fmpq_mat) -> fmpq_mat:
        return to_columns(activate_batch(self.activation, self.affine_columns(from_columns(A))))

    def describe(self) -> str:
        return (f"conv {self.geometry.describe()}, {self.geometry.input_shape[0]}→"
                f"{self.channels} channels, {self.activation}")


@dataclass(frozen=True)
class FrozenConvLayer(_ChannelGrid):
    """``h = σ(γ ⊙_channels (V·patch) + β) + Σ skips``: one γ and one β per output channel,
    shared by all positions (BatchNorm2d in eval mode); ``V`` is the frozen ``c × C·kh·kw``
    kernel matrix and ``record`` its draw record (the 4-d shape is written by the certificate,
    the 2-d one when the record has a mask).

    ``skips`` are post-activation skips (topology, added by the network; the channel-block
    trade-off's accumulator is an ``identity`` skip from the previous block's output on the
    same grid). ``drawn_columns`` names the kernel columns ``c·kh·kw + u·kw + v`` that were
    drawn when the others are structural zeros (a block of input channels); ``None``: every
    entry was drawn. ``stability`` is the family of boxes on which the writer made the ReLU
    channels stable and on which the checker tests them (:data:`STABILITY_FAMILIES`).
    """

    input: int
    geometry: ConvGeometry
    weight: FlintMatrix
    gamma: Vector
    beta: Vector
    activation: str
    record: dict[str, Any] | None = field(default=None, compare=False)
    skips: tuple[Skip, ...] = ()
    drawn_columns: tuple[int, ...] | None = None
    stability: str = "positions"

    kind: ClassVar[str] = NAME

    def __post_init__(self) -> None:
        if self.weight.ncols() != self.geometry.patch_size:
            raise ShapeError(f"frozen convolution weight has {self.weight.ncols()} columns, "
                             f"the patch {self.geometry.patch_size}")
        if len(self.gamma) != self.channels or len(self.beta) != self.channels:
            raise ShapeError("γ and β need one entry per output channel")
        if self.stability not in STABILITY_FAMILIES:
            raise InputError(f"stability must be one of {', '.join(STABILITY_FAMILIES)}, got "
                             f"{self.stability!r}")
        object.__setattr__(self, "skips", tuple(self.skips))
        cols = self.drawn_columns
        if cols is not None:
            cols = tuple(int(c) for c in cols)
            object.__setattr__(self, "drawn_columns", cols)
            if list(cols) != sorted(set(cols)) or not all(0 <= c < self.weight.ncols()
                                                          for c in cols):
                raise ShapeError(f"drawn columns {cols} are not increasing columns of a kernel "
                                 f"with {self.weight.ncols()} columns")
            keep = set(cols)
            if any(x != 0 for row in self.weight.tolist() for c, x in enumerate(row)
                   if c not in keep):
                raise ShapeError("a kernel entry outside the drawn columns is not zero")

    @property
    def channels(self) -> int:
        return self.weight.nrows()



    @property
    def frozen_parameters(self) -> int:
        """Drawn kernel entries (structural zeros of a channel block excluded)."""
        cols = self.weight.ncols() if self.drawn_columns is None else len(self.drawn_columns)
        return self.weight.nrows() * cols

    def pre_activation(self, a: Vector) -> Vector:
        M = self.weight * self.geometry.patches(a)
        P = M.ncols()
        flat = M.entries()
        return tuple(self.gamma[o] * flat[o * P + p] + self.beta[o]
                     for o in range(self.channels) for p in range(P))

    def pre_activation_float(self, A: np.ndarray) -> np.ndarray:
        P = self.geometry.patches_float(A)
        out = np.einsum("od,ndp->nop", to_numpy(self.weight), P)
        out = out * _floats(self.gamma)[None, :, None] + _floats(self.beta)[None, :, None]
        return out.reshape(len(A), -1)

    def evaluate_node(self, a: Node) -> Node:
        """Integers over one denominator: a pointwise convolution of such a node multiplies its
        integer matrix directly; otherwise the patches are cleared of denominators once."""
        g = self.geometry
        if isinstance(a, Scaled) and g.pointwise and a.num.nrows() == g.input_shape[0]:
            P, den = a.num, a.den
        else:
            vals = a.values() if isinstance(a, Scaled) else a
            P, den = clear_denominators(g.patches(vals))
        V = self.weight if isinstance(self.weight, fmpz_mat) else None
        if V is None:
            Vn, vden = clear_denominators(self.weight)
            V, den = Vn, den * vden
        return scaled_affine(V * P, den, self.gamma, self.beta, self.activation)

    def float_layer(self) -> FloatConvLayer:
        return FloatConvLayer(self.input, self.geometry, to_numpy(self.weight),
                              tuple(self.gamma), tuple(self.beta), self.activation,
                              tuple((s.source, FloatIdentity(s.weight.nrows())
                                     if s.kind == "identity" else to_numpy(matrix_of(s.weight)))
                                    for s in self.skips),
                              tuple(s.kind for s in self.skips))

    def describe(self) -> str:
        return (f"conv {self.geometry.describe()}, {self.geometry.input_shape[0]}→"
                f"{self.channels} channels, {self.activation}"
                + (f", {len(self.skips)} skip(s)" if self.skips else ""))


@dataclass(frozen=True, eq=False)
class FloatConvLayer(_ChannelGrid):
    """The float copy of a frozen convolution: the ``c × C·kh·kw`` kernel matrix in float64,
    exact per-channel γ and β; evaluated on the patches (padding pixels read an appended zero),
    the same rounding as the ONNX export's im2col form."""

    input: int
    geometry: ConvGeometry
    weight: np.ndarray
    gamma: tuple[fmpq, ...]
    beta: tuple[fmpq, ...]
    activation: str
    #: ``(source, P)``: ``P`` a float64 array, or a :class:`FloatIdentity` for an identity skip
    skips: tuple[tuple[int, Any], ...] = ()
    skip_kinds: tuple[str, ...] = ()

    kind: ClassVar[str] = NAME

    @property
    def channels(self) -> int:
        return int(self.weight.shape[0])

    @property
    def kernel(self) -> np.ndarray:
        """The kernel as ``[c, C, kh, kw]`` (a framework's layout)."""
        kh, kw = self.geometry.kernel_shape
        return self.weight.reshape(self.channels, self.geometry.input_shape[0], kh, kw)



    @property
    def frozen_parameters(self) -> int:
        return int(self.weight.size)

    @functools.cached_property
    def float_gamma_beta(self) -> tuple[np.ndarray, np.ndarray]:
        return rounded(self.gamma), rounded(self.beta)

    @functools.cached_property
    def _used_columns(self) -> tuple[np.ndarray, np.ndarray]:
        """The kernel restricted to its nonzero patch columns and those columns' patch index: a
        channel block's masked kernel reads only its block's columns, so gathering and
        multiplying the others (exact zeros) would cost ``C`` times the work and memory."""
        used = np.flatnonzero(np.any(self.weight != 0, axis=0))
        if len(used) == self.weight.shape[1]:
            return self.weight, self.geometry.patch_index
        return self.weight[:, used], self.geometry.patch_index[used]

    def pre_activation(self, A: np.ndarray, dtype: Any) -> np.ndarray:
        weight, idx = self._used_columns
        padded = np.concatenate([A, np.zeros((len(A), 1), dtype=A.dtype)], axis=1)
        P = padded[:, idx]  # (n, used patch, positions); −1 reads the appended zero
        g, b = self.float_gamma_beta
        u = np.matmul(weight.astype(dtype), P) * g.astype(dtype)[:, None] \
            + b.astype(dtype)[:, None]
        return u.reshape(len(A), -1)

    def describe(self) -> str:
        return (f"conv {self.geometry.describe()}, {self.geometry.input_shape[0]}→"
                f"{self.channels} channels, {self.activation}")


KIND = LayerKind(NAME, ConvTargetLayer, FrozenConvLayer, FloatConvLayer)
