"""Convolutional target and frozen layers: geometry, exact evaluation, exact interval boxes.

Every value between layers is a vector; a tensor of shape ``(C, H, W)`` is the vector of length
``C·H·W`` in C order (index ``c·H·W + y·W + x``), so a flatten is the identity and never a layer
(docs/certificate-format.md, "Convolutional layers"). A convolution with geometry ``g`` maps
``a`` to ``K·patch_{y,x}(a) + b`` at every output position ``(y, x)``: entry
``t = c·kh·kw + u·kw + v`` of the patch is ``a[c, y·sh − ph + u·dh, x·sw − pw + v·dw]``, or 0
when that pixel lies in the zero padding. ``K`` is the ``c_out × C·kh·kw`` kernel matrix.

Nothing here materializes a convolution as a dense matrix except :func:`unfolded_matrix`, the
reference that tests compare against.

>>> g = ConvGeometry((1, 3, 3), (2, 2), padding=(1, 1), stride=(2, 2))
>>> g.output_shape(1)
(1, 2, 2)
>>> layer = ConvTargetLayer(g, fmpq_mat([[1, 1, 1, 1]]), (fmpq(0),), "identity")
>>> layer.evaluate(list(range(9)))
(0, 3, 9, 24)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
from flint import fmpq, fmpq_mat, fmpz, fmpz_mat

from exactnorm.checker.vocabulary import MAX_MAP_ENTRIES as MAX_PATCH_ENTRIES
from exactnorm.errors import InputError, LimitExceededError, ShapeError
from exactnorm.exact.linalg import FlintMatrix, clear_denominators, to_numpy
from exactnorm.model.network import (
    ACTIVATIONS,
    FrozenLayer,
    TargetLayer,
    Vector,
    activate,
    affine_interval,
    column,
)

__all__ = ["ConvGeometry", "ConvTargetLayer", "PoolTargetLayer", "ConvTargetNetwork",
           "FrozenConvLayer", "FrozenPoolLayer", "ConvFrozenNetwork", "AnyTargetLayer",
           "AnyFrozenLayer", "unfolded_matrix", "evaluate_checkpoints", "MAX_PATCH_ENTRIES",
           "layer_kind"]



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


def conv_range(K: FlintMatrix, g: ConvGeometry, lo: Sequence[fmpq],
               hi: Sequence[fmpq]) -> tuple[fmpq_mat, fmpq_mat]:
    """Exact minimum and maximum of ``K·patch_{y,x}(a)`` over the box ``lo ≤ a ≤ hi``, per row
    and position (``rows × positions``): the dense interval rule on each patch, padding pixels
    the point 0. Exact, since each patch ranges over a product of intervals."""
    plo, phi = g.patches(lo), g.patches(hi)
    pos, neg = _split_signs(K)
    return pos * plo + neg * phi, pos * phi + neg * plo


def _add_bias(M: fmpq_mat, bias: Sequence[fmpq]) -> Vector:
    """Row ``o`` of ``M`` plus ``bias[o]``, flattened in C order."""
    P = M.ncols()
    flat = M.entries()
    return tuple(flat[o * P + p] + bias[o] for o in range(M.nrows()) for p in range(P))


@dataclass(frozen=True)
class ConvTargetLayer:
    """A target convolution ``σ(K·patch + b)``; ``weight`` is ``c_out × C·kh·kw``."""

    geometry: ConvGeometry
    weight: fmpq_mat
    bias: Vector
    activation: str

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
    def output_shape(self) -> tuple[int, int, int]:
        return self.geometry.output_shape(self.channels)

    @property
    def width(self) -> int:
        return math.prod(self.output_shape)

    def evaluate(self, a: Sequence[Any]) -> Vector:
        return activate(self.activation, _add_bias(self.weight * self.geometry.patches(a),
                                                   self.bias))

    def interval(self, lo: Sequence[fmpq], hi: Sequence[fmpq]) -> tuple[Vector, Vector]:
        mn, mx = conv_range(self.weight, self.geometry, lo, hi)
        return (activate(self.activation, _add_bias(mn, self.bias)),
                activate(self.activation, _add_bias(mx, self.bias)))

    def evaluate_float(self, A: np.ndarray) -> np.ndarray:
        P = self.geometry.patches_float(A)
        out = np.einsum("od,ndp->nop", to_numpy(self.weight), P)
        out += np.array([float(x) for x in self.bias])[None, :, None]
        out = out.reshape(len(A), -1)
        return np.maximum(out, 0.0) if self.activation == "relu" else out


@dataclass(frozen=True)
class PoolTargetLayer:
    """Average pooling, a fixed linear map (padding 0, dilation 1): the mean of each window."""

    geometry: ConvGeometry
    activation: str = "identity"

    def __post_init__(self) -> None:
        g = self.geometry
        if g.padding != (0, 0) or g.dilation != (1, 1):
            raise ShapeError("average pooling takes padding [0, 0] and dilation [1, 1] only")
        if self.activation != "identity":
            raise InputError("average pooling has activation identity")

    @property
    def output_shape(self) -> tuple[int, int, int]:
        return self.geometry.output_shape(self.geometry.input_shape[0])

    @property
    def width(self) -> int:
        return math.prod(self.output_shape)

    def _windows(self) -> np.ndarray:
        """``(C, kh·kw, positions)`` input indices of each channel's windows."""
        g = self.geometry
        C = g.input_shape[0]
        k = g.kernel_shape[0] * g.kernel_shape[1]
        return g.patch_index.reshape(C, k, g.positions)

    def evaluate(self, a: Sequence[Any]) -> Vector:
        g = self.geometry
        vals = [x if isinstance(x, fmpq) else fmpq(x) for x in a]
        if len(vals) != g.input_size:
            raise ShapeError(f"pooling input of length {len(vals)}, expected {g.input_size}")
        win = self._windows()
        k = win.shape[1]
        return tuple(sum((vals[i] for i in win[c, :, p].tolist()), fmpq(0)) / k
                     for c in range(win.shape[0]) for p in range(win.shape[2]))

    def interval(self, lo: Sequence[fmpq], hi: Sequence[fmpq]) -> tuple[Vector, Vector]:
        return self.evaluate(lo), self.evaluate(hi)

    def evaluate_float(self, A: np.ndarray) -> np.ndarray:
        win = self._windows()
        X = np.asarray(A, dtype=np.float64)
        return X[:, win].mean(axis=2).reshape(len(X), -1)


AnyTargetLayer = TargetLayer | ConvTargetLayer | PoolTargetLayer


def layer_kind(layer: Any) -> str:
    """``"dense"``, ``"conv"`` or ``"avgpool"``."""
    if isinstance(layer, (ConvTargetLayer, FrozenConvLayer)):
        return "conv"
    if isinstance(layer, (PoolTargetLayer, FrozenPoolLayer)):
        return "avgpool"
    return "dense"


def _input_size(layer: Any) -> int:
    return layer.geometry.input_size if layer_kind(layer) != "dense" else layer.weight.ncols()


def _dense_width(layer: TargetLayer | FrozenLayer) -> int:
    return layer.weight.nrows()


@dataclass(frozen=True)
class ConvTargetNetwork:
    """A target with convolution, average-pooling and dense layers on the box ``[lower, upper]``.

    Duck-compatible with :class:`~exactnorm.model.network.TargetNetwork` where that makes sense
    (``widths``, ``depth``, ``evaluate``, ``evaluate_float``, ``interval_boxes``).
    """

    layers: tuple[AnyTargetLayer, ...]
    lower: Vector
    upper: Vector
    #: the model file it came from (ONNX interface and head), as on TargetNetwork; not compared
    source: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.layers:
            raise ShapeError("the target network has no layers")
        if len(self.lower) != len(self.upper) or not self.lower:
            raise ShapeError("the box needs as many lower as upper bounds, at least one")
        for k, (l, h) in enumerate(zip(self.lower, self.upper)):
            if l > h:
                raise InputError(f"inverted box: lower[{k}] = {l} > upper[{k}] = {h}")
        d_prev = len(self.lower)
        for i, layer in enumerate(self.layers, 1):
            if _input_size(layer) != d_prev:
                raise ShapeError(f"target layer {i} ({layer_kind(layer)}) reads "
                                 f"{_input_size(layer)} values, the previous width is {d_prev}")
            if isinstance(layer, TargetLayer):
                if len(layer.bias) != layer.weight.nrows() or layer.activation not in ACTIVATIONS:
                    raise ShapeError(f"target layer {i}: bad bias length or activation")
                d_prev = _dense_width(layer)
            else:
                d_prev = layer.width

    @property
    def widths(self) -> tuple[int, ...]:
        return (len(self.lower),) + tuple(
            _dense_width(layer) if isinstance(layer, TargetLayer) else layer.width
            for layer in self.layers)

    @property
    def depth(self) -> int:
        return len(self.layers)

    @property
    def parameters(self) -> int:
        """Target scalars: weights and biases of the dense and convolution layers."""
        return sum(layer.weight.nrows() * layer.weight.ncols() + len(layer.bias)
                   for layer in self.layers if not isinstance(layer, PoolTargetLayer))

    def evaluate(self, x: Sequence[Any]) -> Vector:
        """Exact ``g(x)``."""
        a: Vector = tuple(fmpq(v) if not isinstance(v, fmpq) else v for v in x)
        if len(a) != len(self.lower):
            raise ShapeError(f"input of length {len(a)}, expected {len(self.lower)}")
        for layer in self.layers:
            if isinstance(layer, TargetLayer):
                z = layer.weight * column(a)
                a = activate(layer.activation,
                             [z[r, 0] + layer.bias[r] for r in range(z.nrows())])
            else:
                a = layer.evaluate(a)
        return a

    def evaluate_float(self, X: np.ndarray) -> np.ndarray:
        A = np.asarray(X, dtype=np.float64)
        for layer in self.layers:
            if isinstance(layer, TargetLayer):
                A = A @ to_numpy(layer.weight).T + np.array([float(b) for b in layer.bias])
                if layer.activation == "relu":
                    A = np.maximum(A, 0.0)
            else:
                A = layer.evaluate_float(A)
        return A

    def interval_boxes(self) -> list[tuple[Vector, Vector]]:
        """Exact boxes ``B_0 = D, B_1, …`` per coordinate (conv-format: the dense rule on each
        patch with padding pixels 0, the mean of the window's bounds, ReLU clamps at 0)."""
        boxes = [(self.lower, self.upper)]
        for layer in self.layers:
            lo, hi = boxes[-1]
            if isinstance(layer, TargetLayer):
                mn, mx = affine_interval(layer.weight, layer.bias, lo, hi)
                boxes.append((activate(layer.activation, mn), activate(layer.activation, mx)))
            else:
                boxes.append(layer.interval(lo, hi))
        return boxes


@dataclass(frozen=True)
class FrozenConvLayer:
    """``h = σ(γ ⊙_channels (V·patch) + β)``: one γ and one β per output channel, shared by all
    positions (BatchNorm2d in eval mode); ``V`` is the frozen ``c × C·kh·kw`` kernel matrix and
    ``record`` its draw record (the 4-d shape is written by the certificate)."""

    input: int
    geometry: ConvGeometry
    weight: FlintMatrix
    gamma: Vector
    beta: Vector
    activation: str
    record: dict[str, Any] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.weight.ncols() != self.geometry.patch_size:
            raise ShapeError(f"frozen convolution weight has {self.weight.ncols()} columns, "
                             f"the patch {self.geometry.patch_size}")
        if len(self.gamma) != self.channels or len(self.beta) != self.channels:
            raise ShapeError("γ and β need one entry per output channel")

    @property
    def channels(self) -> int:
        return self.weight.nrows()

    @property
    def output_shape(self) -> tuple[int, int, int]:
        return self.geometry.output_shape(self.channels)

    @property
    def width(self) -> int:
        return math.prod(self.output_shape)

    @property
    def frozen_parameters(self) -> int:
        return self.weight.nrows() * self.weight.ncols()

    def evaluate(self, a: Sequence[Any]) -> Vector:
        M = self.weight * self.geometry.patches(a)
        P = M.ncols()
        flat = M.entries()
        u = [self.gamma[o] * flat[o * P + p] + self.beta[o]
             for o in range(self.channels) for p in range(P)]
        return activate(self.activation, u)

    def evaluate_float(self, A: np.ndarray) -> np.ndarray:
        P = self.geometry.patches_float(A)
        out = np.einsum("od,ndp->nop", to_numpy(self.weight), P)
        g = np.array([float(x) for x in self.gamma])[None, :, None]
        b = np.array([float(x) for x in self.beta])[None, :, None]
        out = (out * g + b).reshape(len(A), -1)
        return np.maximum(out, 0.0) if self.activation == "relu" else out


@dataclass(frozen=True)
class FrozenPoolLayer:
    """A declared fixed average pooling of a frozen node (never tuned)."""

    input: int
    geometry: ConvGeometry
    activation: str = "identity"

    @property
    def width(self) -> int:
        return PoolTargetLayer(self.geometry).width

    @property
    def output_shape(self) -> tuple[int, int, int]:
        return PoolTargetLayer(self.geometry).output_shape

    frozen_parameters = 0

    def evaluate(self, a: Sequence[Any]) -> Vector:
        return PoolTargetLayer(self.geometry).evaluate(a)

    def evaluate_float(self, A: np.ndarray) -> np.ndarray:
        return PoolTargetLayer(self.geometry).evaluate_float(A)


AnyFrozenLayer = FrozenLayer | FrozenConvLayer | FrozenPoolLayer


@dataclass(frozen=True)
class ConvFrozenNetwork:
    """A frozen network with dense, convolution and pooling layers and its checkpoints."""

    input_dim: int
    layers: tuple[AnyFrozenLayer, ...]
    checkpoints: tuple[int, ...]
    node_dims: tuple[int, ...] = field(init=False)

    def __post_init__(self) -> None:
        dims = [self.input_dim]
        for j, layer in enumerate(self.layers, 1):
            if not 0 <= layer.input < j:
                raise ShapeError(f"frozen layer {j} reads node {layer.input}, not an earlier node")
            if _input_size(layer) != dims[layer.input]:
                raise ShapeError(f"frozen layer {j} reads {_input_size(layer)} values, node "
                                 f"{layer.input} has width {dims[layer.input]}")
            if isinstance(layer, FrozenLayer):
                for s in layer.skips:
                    if not 0 <= s.source < j or s.weight.ncols() != dims[s.source]:
                        raise ShapeError(f"frozen layer {j}: skip from node {s.source} is wrong")
            dims.append(layer.width)
        object.__setattr__(self, "node_dims", tuple(dims))

    @property
    def depth(self) -> int:
        return len(self.layers)

    @property
    def widths(self) -> tuple[int, ...]:
        return tuple(layer.width for layer in self.layers)

    @property
    def tuned_parameters(self) -> int:
        """One γ and one β per dense neuron and per convolution channel."""
        return sum(2 * len(layer.gamma) for layer in self.layers
                   if not isinstance(layer, FrozenPoolLayer))

    @property
    def frozen_parameters(self) -> int:
        return sum(layer.frozen_parameters for layer in self.layers)

    def evaluate_nodes(self, x: Sequence[Any]) -> list[Vector]:
        """Exact values of every node at a rational input."""
        nodes: list[Vector] = [tuple(fmpq(v) if not isinstance(v, fmpq) else v for v in x)]
        if len(nodes[0]) != self.input_dim:
            raise ShapeError(f"input of length {len(nodes[0])}, expected {self.input_dim}")
        for layer in self.layers:
            if isinstance(layer, FrozenLayer):
                v = layer.weight * column(nodes[layer.input])
                u = [layer.gamma[r] * v[r, 0] + layer.beta[r] for r in range(layer.width)]
                h = list(activate(layer.activation, u))
                for s in layer.skips:
                    p = s.weight * column(nodes[s.source])
                    h = [h[r] + p[r, 0] for r in range(layer.width)]
                nodes.append(tuple(h))
            else:
                nodes.append(layer.evaluate(nodes[layer.input]))
        return nodes

    def evaluate(self, x: Sequence[Any]) -> Vector:
        return self.evaluate_nodes(x)[-1]

    def evaluate_float(self, X: np.ndarray) -> np.ndarray:
        nodes = [np.asarray(X, dtype=np.float64)]
        for layer in self.layers:
            if isinstance(layer, FrozenLayer):
                g = np.array([float(v) for v in layer.gamma])
                b = np.array([float(v) for v in layer.beta])
                u = (nodes[layer.input] @ to_numpy(layer.weight).T) * g + b
                h = np.maximum(u, 0.0) if layer.activation == "relu" else u
                for s in layer.skips:
                    h = h + nodes[s.source] @ to_numpy(s.weight).T
                nodes.append(h)
            else:
                nodes.append(layer.evaluate_float(nodes[layer.input]))
        return nodes[-1]


class _Scaled:
    """A node value as integers over one denominator: ``num`` (rows × cols, C order) / ``den``.

    Hidden layers of a construction carry Γ-sized numbers with a common denominator; keeping
    them as one integer matrix avoids a gcd per entry, which is what makes an exact evaluation
    of a real-size network slow and large."""

    __slots__ = ("num", "den", "_values")

    def __init__(self, num: fmpz_mat, den: Any) -> None:
        self.num, self.den = num, fmpz(den)
        self._values: Vector | None = None

    @classmethod
    def of(cls, values: Sequence[fmpq], rows: int, cols: int) -> _Scaled:
        num, den = clear_denominators(fmpq_mat(rows, cols, list(values)))
        out = cls(num, den)
        out._values = tuple(values)
        return out

    def values(self) -> Vector:
        if self._values is None:
            self._values = tuple((fmpq_mat(self.num) / self.den).entries())
        return self._values


def _scaled_affine(Z: fmpz_mat, den: Any, gamma: Vector, beta: Vector,
                   activation: str) -> _Scaled:
    """``σ(γ_r·Z[r, :]/den + β_r)`` per row ``r``, as integers over one denominator."""
    g_num, g_den = clear_denominators(fmpq_mat([list(gamma)]))
    b_num, b_den = clear_denominators(fmpq_mat([list(beta)]))
    gn, bn = g_num.entries(), b_num.entries()
    cols = Z.ncols()
    shift = g_den * fmpz(den)
    flat = Z.entries()
    out: list[Any] = []
    for r in range(Z.nrows()):
        a, c = gn[r] * b_den, bn[r] * shift
        out.extend(a * z + c for z in flat[r * cols:(r + 1) * cols])
    if activation == "relu":
        zero = fmpz(0)
        out = [v if v > 0 else zero for v in out]
    return _Scaled(fmpz_mat(Z.nrows(), cols, out) if out else fmpz_mat(Z.nrows(), cols),
                   shift * b_den)


def evaluate_checkpoints(net: ConvFrozenNetwork, x: Sequence[Any]) -> list[Vector]:
    """Exact values of the checkpoint nodes of ``net`` at ``x``; equal to
    ``[net.evaluate_nodes(x)[c] for c in net.checkpoints]`` (tested), computed with integer
    matrices over one denominator per convolution node (:class:`_Scaled`)."""
    first = tuple(fmpq(v) if not isinstance(v, fmpq) else v for v in x)
    nodes: list[Any] = [first]
    for layer in net.layers:
        src = nodes[layer.input]
        if isinstance(layer, FrozenConvLayer):
            g = layer.geometry
            if isinstance(src, _Scaled) and g.pointwise and src.num.nrows() == g.input_shape[0]:
                P, den = src.num, src.den
            else:
                vals = src.values() if isinstance(src, _Scaled) else src
                patches = g.patches(vals)
                P, den = clear_denominators(patches)
            V = layer.weight if isinstance(layer.weight, fmpz_mat) else None
            if V is None:
                Vn, vden = clear_denominators(layer.weight)
                V, den = Vn, den * vden
            nodes.append(_scaled_affine(V * P, den, layer.gamma, layer.beta, layer.activation))
        else:
            vals = src.values() if isinstance(src, _Scaled) else src
            if isinstance(layer, FrozenPoolLayer):
                nodes.append(layer.evaluate(vals))
            else:
                v = layer.weight * column(vals)
                u = [layer.gamma[r] * v[r, 0] + layer.beta[r] for r in range(layer.width)]
                h = list(activate(layer.activation, u))
                for s in layer.skips:
                    skip = nodes[s.source]
                    p = s.weight * column(skip.values() if isinstance(skip, _Scaled) else skip)
                    h = [h[r] + p[r, 0] for r in range(layer.width)]
                nodes.append(tuple(h))
    return [n.values() if isinstance(n, _Scaled) else n
            for n in (nodes[c] for c in net.checkpoints)]


def unfolded_matrix(g: ConvGeometry, K: FlintMatrix) -> fmpq_mat:
    """The dense ``(c·Ho·Wo) × (C·H·W)`` matrix of the convolution ``a ↦ K·patch(a)``.

    A reference for tests on small images only (it is what the certificate never contains):
    row ``o·Ho·Wo + p`` has ``K[o, t]`` in the column of patch entry ``t`` of position ``p``.

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
