"""The chain of target layers while a model file is read: kind-free state shared by the ONNX walker
(:mod:`~exactnorm.model.interop.onnx`) and the state-dict reader
(:mod:`~exactnorm.model.interop.torch`), and the context their per-kind handlers receive
(:mod:`exactnorm.model.interop.kinds`).

Contract
--------
A :class:`Chain` holds the layers read so far as :class:`Raw` records (rows of exact
:class:`~fractions.Fraction` numbers, so that later operators fold into them exactly), the tensor
shape of the current value (``(C, H, W)``, ``(d,)``, or ``None`` for a flat value whose size the
next layer tells) and an element-wise affine map still to be folded into the next layer. A kind's
handler reads its node or state-dict entry, builds a :class:`Raw` with the kind's ``build``
function and the output shape, and :meth:`Chain.add` appends it. Nothing here names a kind.

Correctness argument
--------------------
The folds are those of :mod:`exactnorm.model.onnx_common` (exact identities of rational
matrices): an element-wise affine map ``D ⊙ v + c`` directly after a layer with weights and
identity activation becomes ``(diag(D) W, D ⊙ b + c)`` on its rows (per output neuron, or per
output channel of a convolution: the same ``D``, ``c`` at every position); before a layer that
declares ``fold_before`` (a dense layer, whose inputs are its columns) it becomes ``(W diag(D),
W c + b)``. A ``Relu`` sets the activation of the layer it directly follows. A flatten changes no
value (a tensor is its C-order vector). Nothing else is accepted, so the chain's layers compute
the model's function exactly.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
from flint import fmpq, fmpq_mat

from exactnorm.errors import InputError, LimitExceededError, NumberFormatError, ShapeError
from exactnorm.exact.linalg import from_numpy_exact, to_fmpq_mat, to_fractions
from exactnorm.model.kinds.base import TargetKind
from exactnorm.model.onnx_common import (
    DTYPES,
    Affine,
    affine_of,
    array,
    compose,
    fold_after,
    fold_before,
    node_label,
)

__all__ = ["Raw", "Chain", "Constants", "Entry", "rational_row", "rational_matrix",
           "exact_matrix", "exact_vector"]


def exact_matrix(a: Any, what: str) -> list[list[Fraction]]:
    """An array of stored numbers as rows of the exact rationals they denote (1-D: a column)."""
    arr = np.asarray(a)
    if arr.dtype.kind == "f" and arr.dtype.itemsize > 8:
        # float(x) would round a long double; only IEEE half/single/double convert exactly here
        raise NumberFormatError(f"{what} has dtype {arr.dtype}; save it as float64 or integers")
    return to_fractions(from_numpy_exact(arr, what))


def exact_vector(a: Any, what: str) -> list[Fraction]:
    return [row[0] for row in exact_matrix(np.asarray(a).reshape(-1), what)]


def rational_row(values: Any) -> tuple[fmpq, ...]:
    """Exact numbers (``Fraction``, int) as a tuple of ``fmpq``."""
    return tuple(fmpq(int(Fraction(x).numerator), int(Fraction(x).denominator)) for x in values)


def rational_matrix(rows: list[list[Fraction]], what: str) -> fmpq_mat:
    return to_fmpq_mat(rows, what)


@dataclass
class Raw:
    """A target layer while the file is read: its rows may still take folds.

    ``weight`` has one row per output neuron (dense) or output channel (a convolution's kernel
    matrix), ``None`` for a fixed map (a pooling); ``spec`` is the kind's own data (a window's
    geometry, a pooled shape); ``build`` makes the model's target layer of the kind; ``norm`` is a
    normalization kept apart instead of folded (the given-network reader's hook)."""

    kind: str
    build: Callable[[Raw], TargetKind]
    label: str
    weight: list[list[Fraction]] | None = None
    bias: list[Fraction] | None = None
    activation: str = "identity"
    spec: Any = None
    fold_before: bool = False
    norm: Any = None

    @property
    def linear(self) -> bool:
        """A layer with weights whose activation is not set yet (a Relu may follow)."""
        return self.weight is not None and self.activation == "identity"


@dataclass
class Chain:
    """The layers read so far and the current value (module doc)."""

    shape: tuple[int, ...] | None
    max_width: int
    layers: list[Raw] = field(default_factory=list)
    pending: Affine | None = None
    pending_label: str | None = None
    #: element type of the last weight read (the logits' dtype of an ONNX source)
    dtype: str | None = None

    @property
    def size(self) -> int | None:
        return None if self.shape is None else math.prod(self.shape)

    @property
    def spatial(self) -> bool:
        return self.shape is not None and len(self.shape) == 3

    def image(self, what: str) -> tuple[int, int, int]:
        """The ``(C, H, W)`` shape a windowed layer reads, or a refusal."""
        if not self.spatial:
            raise ShapeError(f"{what} reads a flat vector of size {self.size or 'unknown'}; a "
                             f"convolution or pooling reads an image [N, C, H, W] of known size")
        return self.shape  # type: ignore[return-value]

    def flat(self, what: str, columns: int) -> None:
        """A dense layer of ``columns`` inputs reads the current value: flat and that large."""
        if self.spatial:
            raise InputError(f"{what} reads an image of shape {list(self.shape or ())}; flatten "
                             f"it first (Flatten, or Reshape to [N, -1])")
        if self.size is not None and self.size != columns:
            raise ShapeError(f"{what} has {columns} inputs, the value it reads has "
                             f"{self.size} entries")

    def width_limit(self, dims: Any, what: str) -> None:
        if any(int(d) > self.max_width for d in dims):
            raise LimitExceededError(f"{what} has shape {tuple(int(d) for d in dims)}, above "
                                     f"the width limit {self.max_width} (raise it with "
                                     f"--max-width)")

    def add(self, raw: Raw, shape: tuple[int, ...]) -> None:
        """Append a layer whose output has tensor shape ``shape``; an affine map pending before
        it folds into its columns when its kind allows (module doc)."""
        if self.pending is not None:
            if not raw.fold_before or raw.weight is None or raw.bias is None:
                raise InputError(f"{self.pending_label}: an element-wise affine map before "
                                 f"{raw.label} does not fold into it exactly; only a linear "
                                 f"layer (Gemm, MatMul) takes one on its input")
            raw.weight, raw.bias = fold_before(raw.weight, raw.bias, self.pending)
            self.pending = self.pending_label = None
        self.layers.append(raw)
        self.shape = shape

    def relu(self, what: str) -> None:
        last = self.layers[-1] if self.layers else None
        if last is None or not last.linear or self.pending is not None:
            raise InputError(f"{what} does not directly follow a linear layer (Gemm, MatMul or "
                             f"Conv)")
        last.activation = "relu"

    def affine(self, affine: Callable[[int | None, bool], Affine | None], what: str) -> None:
        """An element-wise affine operator: folded after the last layer when it has weights
        and nothing after them yet, else kept to fold into the next one (flat values only).
        ``affine(n, channels)`` reads it for ``n`` features (channels)."""
        last = self.layers[-1] if self.layers else None
        if last is not None and last.linear and last.norm is None and self.pending is None:
            assert last.weight is not None and last.bias is not None
            a = affine(len(last.weight), self.spatial)
            if a is None:
                raise InputError(f"{what} does not continue the chain with one stored constant")
            last.weight, last.bias = fold_after(last.weight, last.bias, a)
            return
        if self.spatial:
            raise InputError(f"{what}: only an element-wise affine map directly after a Conv or "
                             f"a linear layer (before its Relu) is folded")
        a = affine(self.size, False)
        if a is None:
            raise InputError(f"{what} does not continue the chain with one stored constant")
        self.pending = a if self.pending is None else compose(self.pending, a)
        self.pending_label = self.pending_label or what

    def flatten(self) -> None:
        self.shape = None if self.size is None else (self.size,)

    def finish(self, what: str = "the ONNX graph") -> list[TargetKind]:
        """The target layers, once nothing is pending."""
        if self.pending is not None:
            raise InputError(f"{self.pending_label} is not followed by a linear layer to fold "
                             f"into")
        if not self.layers:
            raise InputError(f"{what} has no Gemm or MatMul layer, nor any other layer")
        return [raw.build(raw) for raw in self.layers]


class Constants:
    """The stored constants of an ONNX graph, read for the handlers: weights checked against
    the width limit and their element type recorded (the logits' dtype)."""

    def __init__(self, consts: dict[str, Any], chain: Chain) -> None:
        self.consts, self.chain = consts, chain

    def has(self, node: Any, k: int) -> bool:
        return len(node.input) > k and bool(node.input[k]) and node.input[k] in self.consts

    def get(self, node: Any, k: int, *, weight: bool = True) -> np.ndarray:
        """Input ``k`` of ``node``, which must be a stored constant."""
        if len(node.input) <= k or node.input[k] not in self.consts:
            name = node.input[k] if len(node.input) > k else k
            raise InputError(f"{node_label(node)}: input {name!r} is not an initializer; "
                             f"weights must be stored constants")
        t = self.consts[node.input[k]]
        if weight:
            self.chain.width_limit(t.dims, f"ONNX initializer {node.input[k]!r}")
            self.chain.dtype = DTYPES.get(t.data_type, self.chain.dtype)
        return array(t)

    def affine(self, node: Any) -> Callable[[int | None, bool], Affine | None]:
        """The element-wise affine map of ``node`` as :meth:`Chain.affine` reads it."""
        return lambda n, channels: affine_of(node, self.consts, n, channels=channels)


@dataclass
class Entry:
    """One entry of a declared architecture with its module's parameters (a state dict)."""

    token: str
    options: dict[str, int]
    label: str
    arrays: Mapping[str, Any]
    prefix: str | None
    chain: Chain

    def has(self, name: str) -> bool:
        return self.prefix is not None and f"{self.prefix}.{name}" in self.arrays

    def get(self, name: str) -> np.ndarray:
        if not self.has(name):
            raise InputError(f"{self.label}: the state dict has no {self.prefix}.{name}")
        value = np.asarray(self.arrays[f"{self.prefix}.{name}"])
        self.chain.width_limit(value.shape, f"state dict {self.prefix}.{name}")
        return value
