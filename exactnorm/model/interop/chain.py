"""The target layers while a model file is read (a chain, or a graph of residual blocks):
kind-free state shared by the ONNX walker
(:mod:`~exactnorm.model.interop.onnx`) and the state-dict reader
(:mod:`~exactnorm.model.interop.torch`), and the context their per-kind handlers receive
(:mod:`exactnorm.model.interop.kinds`).

Contract
--------
A :class:`Chain` holds the layers read so far as :class:`Raw` records (an exact ``fmpq_mat``
weight, read from the stored floats at once by :func:`exact_weight`, and a bias of exact
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
the model's function exactly. Graphs: each layer records the layer it reads (``reads``), and
:meth:`Chain.residual` the skip an ``Add`` of two branches puts before its activation (module
doc of :mod:`~exactnorm.model.interop.onnx`); :meth:`Chain.finish` orders the layers by a walk
back from the output (what a layer reads before it, then its skip's source), so each reads
earlier nodes only, and :meth:`Chain.wiring` numbers the nodes in that order.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
from flint import fmpq, fmpq_mat

from exactnorm.errors import InputError, LimitExceededError, ShapeError
from exactnorm.exact.linalg import from_numpy_exact, to_fmpq_mat, to_fractions
from exactnorm.model.layers import TargetLayer
from exactnorm.model.network import Wiring
from exactnorm.model.onnx_common import (
    DTYPES,
    Affine,
    affine_of,
    array,
    compose,
    fold_after,
    fold_batchnorm,
    fold_before,
    node_label,
)
from exactnorm.model.routes import Route, Skip

__all__ = ["Raw", "State", "Chain", "Constants", "Entry", "rational_row", "rational_matrix",
           "exact_matrix", "exact_vector", "exact_weight"]


def exact_weight(a: Any, what: str) -> fmpq_mat:
    """An array of stored numbers as the exact matrix they denote (1-D: a column), converted at
    once (:func:`~exactnorm.exact.linalg.from_numpy_exact`: floats are dyadic rationals)."""
    return from_numpy_exact(np.asarray(a), what)


def exact_matrix(a: Any, what: str) -> list[list[Fraction]]:
    """An array of stored numbers as rows of the exact rationals they denote (1-D: a column)."""
    return to_fractions(exact_weight(a, what))


def exact_vector(a: Any, what: str) -> list[Fraction]:
    return [row[0] for row in exact_matrix(np.asarray(a).reshape(-1), what)]


def rational_row(values: Any) -> tuple[fmpq, ...]:
    """Exact numbers (``Fraction``, int) as a tuple of ``fmpq``."""
    return tuple(fmpq(int(Fraction(x).numerator), int(Fraction(x).denominator)) for x in values)


def rational_matrix(rows: list[list[Fraction]], what: str) -> fmpq_mat:
    return to_fmpq_mat(rows, what)


@dataclass(eq=False)
class Raw:
    """A target layer while the file is read: its rows may still take folds.

    ``weight`` (exact) has one row per output neuron (dense) or output channel (a convolution's
    kernel matrix), ``None`` for a fixed map (a pooling); ``spec`` is the kind's own data (a
    window's geometry, a pooled shape); ``build`` makes the model's target layer of the kind;
    ``norm`` is a normalization kept apart instead of folded (the given-network reader's
    hook)."""

    kind: str
    build: Callable[[Raw], TargetLayer]
    label: str
    weight: fmpq_mat | None = None
    bias: list[Fraction] | None = None
    activation: str = "identity"
    spec: Any = None
    fold_before: bool = False
    norm: Any = None
    #: the layer whose output it reads (``None``: the network's input), set by :meth:`Chain.add`
    reads: Raw | None = None
    #: a skip added before the activation: (source layer or ``None`` for the input, route, kind)
    skip: tuple[Raw | None, Route, str] | None = None

    @property
    def linear(self) -> bool:
        """A layer with weights whose activation is not set yet (a Relu may follow)."""
        return self.weight is not None and self.activation == "identity"

    @property
    def open(self) -> bool:
        """A linear layer that may still take an element-wise fold after it (no skip yet)."""
        return self.linear and self.skip is None and self.norm is None


@dataclass(frozen=True)
class State:
    """The value of one tensor of a graph: the layer that writes it (``None``: the input), its
    tensor shape and an element-wise affine map still to fold into the next layer."""

    current: Raw | None
    shape: tuple[int, ...] | None
    pending: Affine | None = None
    pending_label: str | None = None
    #: a selection of the layer's output (a Slice or Pad of it: an option-A shortcut)
    route: Route | None = None


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
    #: the layer whose output is the current value (``None``: the network's input)
    current: Raw | None = None
    #: whether the current value is read by the operator being handled only (a graph's tensor
    #: read by several nodes may not take a fold or a Relu: the other readers see it unfolded)
    exclusive: bool = True
    #: the current value is this selection of the current layer's output (a Slice or a Pad)
    route: Route | None = None
    route_label: str | None = None

    @property
    def size(self) -> int | None:
        return None if self.shape is None else math.prod(self.shape)

    @property
    def spatial(self) -> bool:
        return self.shape is not None and len(self.shape) == 3

    def image(self, what: str) -> tuple[int, int, int]:
        """The ``(C, H, W)`` shape a windowed layer reads, or a refusal."""
        self._no_route(what)
        if not self.spatial:
            raise ShapeError(f"{what} reads a flat vector of size {self.size or 'unknown'}; a "
                             f"convolution or pooling reads an image [N, C, H, W] of known size")
        return self.shape  # type: ignore[return-value]

    def flat(self, what: str, columns: int) -> None:
        """A dense layer of ``columns`` inputs reads the current value: flat and that large."""
        self._no_route(what)
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
        self._no_route(raw.label)
        raw.reads = self.current
        self.layers.append(raw)
        self.current = raw
        self.shape = shape

    def _no_route(self, what: str) -> None:
        if self.route is not None:
            raise InputError(f"{what} reads the output of {self.route_label}; a slice or "
                             f"padding of a node is read only as a residual Add's shortcut")

    def _shared(self, what: str) -> None:
        if not self.exclusive:
            assert self.current is not None
            raise InputError(f"{what}: the output of {self.current.label} is also read by "
                             f"another node; a Relu or an element-wise map on one branch only "
                             f"does not fold into the layer")

    def relu(self, what: str) -> None:
        last = self.current
        if last is None or not last.linear or self.pending is not None \
                or self.route is not None:
            raise InputError(f"{what} does not directly follow a linear layer (Gemm, MatMul or "
                             f"Conv)")
        self._shared(what)
        last.activation = "relu"

    def affine(self, affine: Callable[[int | None, bool], Affine | None], what: str) -> None:
        """An element-wise affine operator: folded after the last layer when it has weights
        and nothing after them yet, else kept to fold into the next one (flat values only).
        ``affine(n, channels)`` reads it for ``n`` features (channels)."""
        last = self.current
        if self.route is not None:
            raise InputError(f"{what} follows {self.route_label}; a slice or padding of a node "
                             f"is read only as a residual Add's shortcut")
        if last is not None and last.linear and last.skip is not None:
            raise InputError(f"{what} follows the residual Add of {last.label}: an element-wise "
                             f"map after the sum would scale the shortcut too; only a Relu (or "
                             f"nothing) may follow a residual Add")
        if last is not None and last.linear and last.norm is None and self.pending is None:
            assert last.weight is not None and last.bias is not None
            self._shared(what)
            a = affine(last.weight.nrows(), self.spatial)
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

    def batchnorm(self, entry: Entry) -> None:
        """A state dict's ``BatchNorm1d``/``BatchNorm2d`` (eval mode) folded into the open layer
        before it (:func:`~exactnorm.model.onnx_common.fold_batchnorm`); ``eps`` from the
        entry's options (default PyTorch's 10⁻⁵)."""
        last = self.current
        if last is None or not last.open or self.pending is not None or self.route is not None:
            raise InputError(f"{entry.label}: a batch normalization directly after a Conv2d or "
                             f"Linear module (before its ReLU) is folded")
        assert last.weight is not None and last.bias is not None
        last.weight, last.bias = fold_batchnorm(
            last.weight, last.bias, entry.get("weight"), entry.get("bias"),
            entry.get("running_mean"), entry.get("running_var"),
            float(entry.options.get("eps", 0)) or 1e-5)

    def flatten(self) -> None:
        self.shape = None if self.size is None else (self.size,)

    # ----------------------------------------------------------------- graphs (residual nets)

    def state(self) -> State:
        """The current value, to be restored by :meth:`load` when another node reads it."""
        return State(self.current, self.shape, self.pending, self.pending_label, self.route)

    def select(self, transform: Callable[[np.ndarray], np.ndarray], what: str) -> None:
        """The current value becomes a selection of it (each entry one entry of the node, or
        0): ``transform`` maps the array of the node's coordinates ``(1, *shape)`` (a batch of
        one; −1 for a zero) to the selected array, as a ``Slice`` or a constant ``Pad``
        does to a tensor."""
        if self.pending is not None or self.shape is None:
            raise InputError(f"{what} reads a value of unknown shape or with an element-wise "
                             f"map before it; only a slice or padding of a layer's output is "
                             f"read")
        size = math.prod(self.shape)
        picks = np.arange(size) if self.route is None else \
            np.array([-1 if c is None else c for c in self.route.picks])
        out = transform(picks.reshape(1, *self.shape))
        if out.ndim < 1 or out.shape[0] != 1:
            raise InputError(f"{what}: a slice or padding along the batch axis")
        columns = size if self.route is None else self.route.columns
        self.route = Route(tuple(None if c < 0 else int(c) for c in out.reshape(-1)), columns)
        self.route_label = self.route_label or what
        self.shape = tuple(int(d) for d in out.shape[1:])

    def load(self, state: State, exclusive: bool = True) -> None:
        """Make ``state`` the current value; ``exclusive``: the node being handled is its only
        reader."""
        self.current, self.shape = state.current, state.shape
        self.pending, self.pending_label = state.pending, state.pending_label
        self.route = state.route
        self.route_label = None if state.route is None else "a slice or padding"
        self.exclusive = exclusive

    def residual(self, a: State, b: State, exclusive: tuple[bool, bool], what: str) -> None:
        """The sum of two branches ``a + b`` as a skip before the activation (module doc of
        :mod:`~exactnorm.model.interop.onnx`): the branch that ends in an open linear layer
        (weights, no activation, no skip yet) takes the other as an identity skip; when both
        do, the one reading the later node is the block's output layer and the other becomes
        its own target layer (a projection shortcut, identity activation). The sum is the
        current value."""
        for s in (a, b):
            if s.pending is not None:
                raise InputError(f"{what}: {s.pending_label} is an element-wise map before the "
                                 f"residual Add that does not fold into a layer")
        opened = [s.current is not None and s.current.open and s.route is None for s in (a, b)]
        if not any(opened):
            raise InputError(f"{what} adds two branches neither of which ends in a linear "
                             f"layer before its activation (Conv or Gemm, possibly with a "
                             f"BatchNormalization); only a residual block's sum "
                             f"relu(F(x) + shortcut(x)) is read")
        k = 0 if opened[0] else 1
        if all(opened):
            depth = [self._position(s.current.reads) for s in (a, b)]  # type: ignore[union-attr]
            k = 0 if depth[0] >= depth[1] else 1
        main, other = (a, b) if k == 0 else (b, a)
        if not exclusive[k]:
            self.load(main, False)
            self._shared(what)
        sizes = [None if s.shape is None else math.prod(s.shape) for s in (main, other)]
        if sizes[0] is None or sizes[0] != sizes[1]:
            raise ShapeError(f"{what} adds branches of {sizes[0]} and {sizes[1]} values; a "
                             f"shortcut has the block's shape (a projection or a selection "
                             f"changes it)")
        if main.shape != other.shape and all(len(s.shape or ()) == 3 for s in (main, other)):
            raise ShapeError(f"{what} adds images of shapes {list(main.shape or ())} and "
                             f"{list(other.shape or ())}")
        layer = main.current
        assert layer is not None and sizes[0] is not None
        route = other.route
        if route is None or route.is_identity:
            layer.skip = (other.current, Route.identity(sizes[0]), "identity")
        else:
            layer.skip = (other.current, route, "selection")
        self.load(main)

    def _position(self, raw: Raw | None) -> int:
        return -1 if raw is None else next(n for n, r in enumerate(self.layers) if r is raw)

    def _order(self) -> list[Raw]:
        """The layers in the order of a depth-first walk back from the output (the current
        value), each after what it reads and then its skip's source: a chain keeps its order,
        and a block's shortcut layer comes right before the block's output layer, whatever
        order the file listed the branches in. Every layer must reach the output."""
        order: list[Raw] = []
        placed: set[int] = set()
        stack: list[tuple[Raw, bool]] = [(self.current, False)] if self.current else []
        while stack:
            r, expanded = stack.pop()
            if id(r) in placed:
                continue
            if expanded:
                placed.add(id(r))
                order.append(r)
                continue
            stack.append((r, True))
            needs = [d for d in (r.reads, r.skip[0] if r.skip else None) if d is not None]
            stack.extend((d, False) for d in reversed(needs) if id(d) not in placed)
        dead = [r for r in self.layers if id(r) not in placed]
        if dead:
            raise InputError(f"{dead[0].label} does not lead to the output; a target is one "
                             f"network from the input to the output")
        return order

    def finish(self, what: str = "the ONNX graph") -> list[TargetLayer]:
        """The target layers, once nothing is pending, each after what it reads (a chain keeps
        its order); :meth:`wiring` gives their topology."""
        if self.pending is not None:
            raise InputError(f"{self.pending_label} is not followed by a linear layer to fold "
                             f"into")
        if not self.layers:
            raise InputError(f"{what} has no Gemm or MatMul layer, nor any other layer")
        order = self._order()
        self.layers[:] = order
        return [raw.build(raw) for raw in order]

    def wiring(self) -> tuple[Wiring, ...] | None:
        """The node each layer reads and its skip, in the order of :meth:`finish` (node ``k``
        is the output of layer ``k``, 0 the input), or ``None`` for a chain."""
        node = {id(r): n for n, r in enumerate(self.layers, 1)}

        def at(r: Raw | None) -> int:
            return 0 if r is None else node[id(r)]

        out = tuple(Wiring(at(r.reads), None if r.skip is None else
                           Skip(at(r.skip[0]), r.skip[1], r.skip[2]))
                    for r in self.layers)
        chain = all(w == Wiring(i) for i, w in enumerate(out))
        return None if chain else out


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
    #: every prefix of a token that takes several modules (a residual block), in order
    prefixes: tuple[str, ...] = ()

    def part(self, k: int, token: str, options: dict[str, int] | None = None) -> Entry:
        """The entry of the ``k``-th module of a token with several (its ``prefixes``)."""
        return Entry(token, options or {}, f"{self.label}, {self.prefixes[k]}", self.arrays,
                     self.prefixes[k], self.chain)

    def has(self, name: str) -> bool:
        return self.prefix is not None and f"{self.prefix}.{name}" in self.arrays

    def get(self, name: str) -> np.ndarray:
        if not self.has(name):
            raise InputError(f"{self.label}: the state dict has no {self.prefix}.{name}")
        value = np.asarray(self.arrays[f"{self.prefix}.{name}"])
        self.chain.width_limit(value.shape, f"state dict {self.prefix}.{name}")
        return value
