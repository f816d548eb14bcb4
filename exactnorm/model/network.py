"""Target and frozen networks of every layer kind: exact and float64 evaluation, exact boxes.

One :class:`TargetNetwork` and one :class:`FrozenNetwork` hold layers of any registered kind
(:mod:`exactnorm.model.kinds`); their loops use only the declared protocols
(:mod:`exactnorm.model.kinds.base`) and never name a kind. Ground types: matrices are ``fmpq_mat``
(frozen weights may be ``fmpz_mat``), vectors are tuples of ``fmpq``. Nothing here solves a system.

Target ``g``: ``a_i = L_i(a_{i-1})``, ``a_0 = x ∈ D = [lower, upper]``, where a dense layer is
``σ_i(W_i a + b_i)`` and a convolution or pooling another fixed affine map followed by ``σ_i``.

Frozen ``f``: node 0 is ``x``; layer ``j`` (from 1) computes the pre-activation
``u_j = γ_j ⊙ (V_j h_{in(j)}) + β_j`` of its kind and ``h_j = σ_j(u_j) + Σ_s P_{j,s} h_s`` (skips
are topology: any kind may have them); only ``γ, β`` are tuned. ``checkpoints[i-1]`` is the node
that equals ``a_i``.

>>> from flint import fmpq_mat, fmpq
>>> g = TargetNetwork.from_lists([[[1, -1]]], [[0]], ["identity"], lower=[0, 0], upper=[1, 2])
>>> g.evaluate([fmpq(1, 2), 2])
(-3/2,)
>>> [tuple(map(str, b)) for b in g.interval_boxes()[1]]
[('-2',), ('1',)]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from exactnorm.checker.vocabulary import ACTIVATIONS, SKIP_KINDS
from exactnorm.errors import InputError, LimitExceededError, ShapeError
from exactnorm.exact.linalg import to_fmpq_mat, to_numpy
from exactnorm.model.kinds.base import FloatKind, FrozenKind, Skip, TargetKind
from exactnorm.model.kinds.dense import FrozenLayer, TargetLayer
from exactnorm.model.values import (
    Node,
    Vector,
    activate,
    affine_interval,
    as_vector,
    column,
    node_values,
)

__all__ = [
    "ACTIVATIONS",
    "SKIP_KINDS",
    "DEFAULT_MAX_WIDTH",
    "TargetLayer",
    "TargetNetwork",
    "Skip",
    "FrozenLayer",
    "FrozenNetwork",
    "FloatNetwork",
    "Vector",
    "affine_interval",
    "activate",
    "column",
]

#: Largest width accepted from a file unless the caller raises it.
DEFAULT_MAX_WIDTH = 4096


@dataclass(frozen=True)
class TargetNetwork:
    """The network to reproduce, layers of any kind, with its rational input box
    ``D = [lower, upper]``.

    ``source`` optionally describes the model file it came from (``{"format": "onnx", "input":
    {"name", "shape"}, "output": {"name"}}``): not part of the function, so not compared; a
    certificate records it in its provenance and an ONNX export reuses the names and shape.
    """

    layers: tuple[TargetKind, ...]
    lower: Vector
    upper: Vector
    source: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    def box_text(self) -> str:
        """The input box in a few words: ``[lo, hi]^n`` for a cube, else its dimension."""
        n = len(self.lower)
        if len(set(self.lower)) == 1 and len(set(self.upper)) == 1:
            return f"[{self.lower[0]}, {self.upper[0]}]^{n}"
        return f"a per-feature box of dimension {n}"

    def __repr__(self) -> str:
        # short at any size: a 784-128-10 target's fields would print megabytes
        acts = ",".join(layer.activation for layer in self.layers)
        kinds = [layer.kind for layer in self.layers]
        mixed = f", kinds={','.join(kinds)}" if len(set(kinds)) > 1 else ""
        return (f"TargetNetwork(widths={'-'.join(map(str, self.widths))}, activations={acts}"
                f"{mixed}, box={self.box_text()})")

    def _repr_html_(self) -> str:
        import html

        rows = "".join(f"<tr><td>{i}</td><td>{html.escape(layer.describe())}</td></tr>"
                       for i, layer in enumerate(self.layers[:20], 1))
        more = (f"<tr><td colspan=2>… {len(self.layers) - 20} more layers</td></tr>"
                if len(self.layers) > 20 else "")
        return (f"<b>TargetNetwork</b> {'-'.join(map(str, self.widths))} on "
                f"{html.escape(self.box_text())}<table><tr><th>layer</th><th>map</th></tr>"
                f"{rows}{more}</table>")

    def __post_init__(self) -> None:
        if not self.layers:
            raise ShapeError("the target network has no layers")
        if len(self.lower) != len(self.upper):
            raise ShapeError(f"box has {len(self.lower)} lower and {len(self.upper)} upper bounds")
        d_prev = len(self.lower)
        if d_prev == 0:
            raise ShapeError("the input dimension must be at least 1")
        for k, (l, h) in enumerate(zip(self.lower, self.upper)):
            if l > h:
                raise InputError(f"inverted box: lower[{k}] = {l} > upper[{k}] = {h}")
        for i, layer in enumerate(self.layers, 1):
            n = layer.input_size
            if n != d_prev and i == 1:
                # the input dimension is the box's: say so in the words of the box
                raise ShapeError(f"the box has {d_prev} coordinates but the network input has "
                                 f"{n}")
            if n != d_prev:
                raise ShapeError(f"target layer {i} ({layer.kind}) reads {n} values, the "
                                 f"previous width is {d_prev}")
            d_prev = layer.width

    @classmethod
    def from_lists(cls, weights: Sequence[Any], biases: Sequence[Any],
                   activations: Sequence[str] | None = None, *, lower: Sequence[Any],
                   upper: Sequence[Any], max_width: int = DEFAULT_MAX_WIDTH) -> TargetNetwork:
        """A network of dense layers from nested lists of exact numbers; default activations
        relu…relu, identity."""
        if len(weights) == 0:
            raise ShapeError("the target network has no layers")
        if len(weights) != len(biases):
            raise ShapeError(f"{len(weights)} weight matrices but {len(biases)} biases")
        if activations is None:
            activations = ["relu"] * (len(weights) - 1) + ["identity"]
        if len(activations) != len(weights):
            raise ShapeError(f"{len(activations)} activations for {len(weights)} layers")
        layers = []
        for i, (W, b, act) in enumerate(zip(weights, biases, activations), 1):
            Wm = to_fmpq_mat(W, f"target layer {i} weight")
            if max(Wm.nrows(), Wm.ncols()) > max_width:
                raise LimitExceededError(
                    f"target layer {i} has shape {Wm.nrows()}×{Wm.ncols()}, above the width limit "
                    f"{max_width} (raise it with --max-width)")
            if not isinstance(act, str):
                raise InputError(f"target layer {i}: activation must be a string")
            if act not in ACTIVATIONS:
                raise InputError(f"target layer {i}: unknown activation {act!r}; expected one "
                                 f"of {ACTIVATIONS}")
            if Wm.nrows() == 0:
                raise ShapeError(f"target layer {i} has width 0")
            layers.append(TargetLayer(Wm, as_vector(b, Wm.nrows(), f"target layer {i} bias"),
                                      act))
        d0 = len(lower)
        return cls(tuple(layers), as_vector(lower, d0, "domain lower"),
                   as_vector(upper, len(upper), "domain upper"))

    @property
    def widths(self) -> tuple[int, ...]:
        """``(d_0, d_1, …, d_L)``."""
        return (len(self.lower),) + tuple(layer.width for layer in self.layers)

    @property
    def depth(self) -> int:
        return len(self.layers)

    @property
    def parameters(self) -> int:
        """Number of target scalars: the weights and biases of every layer."""
        return sum(layer.parameters for layer in self.layers)

    def evaluate(self, x: Sequence[Any]) -> Vector:
        """Exact ``g(x)`` for a rational input (the box is not enforced here)."""
        a = as_vector(x, self.widths[0], "input")
        for layer in self.layers:
            a = layer.evaluate(a)
        return a

    def evaluate_float(self, X: np.ndarray) -> np.ndarray:
        """float64 ``g`` on a batch ``X`` (n × d_0); for comparison only."""
        A = np.asarray(X, dtype=np.float64)
        for layer in self.layers:
            A = layer.evaluate_float(A)
        return A

    def interval_boxes(self) -> list[tuple[Vector, Vector]]:
        """Exact boxes ``B_0 = D, B_1, …, B_L`` with ``a_i ∈ B_i`` (each kind's exact interval
        rule on the previous box)."""
        boxes = [(self.lower, self.upper)]
        for layer in self.layers:
            boxes.append(layer.interval(*boxes[-1]))
        return boxes

    def corners(self, limit: int = 64) -> list[Vector]:
        """Up to ``limit`` corners of the box ``D`` (all of them when there are few)."""
        d = self.widths[0]
        out = []
        for mask in range(min(2**d, limit)):
            out.append(tuple(self.upper[k] if (mask >> k) & 1 else self.lower[k]
                             for k in range(d)))
        return out


@dataclass(frozen=True)
class FrozenNetwork:
    """A frozen random network with tuned normalization parameters and its checkpoints."""

    input_dim: int
    layers: tuple[FrozenKind, ...]
    checkpoints: tuple[int, ...]
    node_dims: tuple[int, ...] = field(init=False)

    def __repr__(self) -> str:
        # short at any size: the layers hold every frozen matrix
        return (f"FrozenNetwork(input_dim={self.input_dim}, depth={len(self.layers)}, "
                f"checkpoints={len(self.checkpoints)})")

    def __post_init__(self) -> None:
        dims = [self.input_dim]
        for j, layer in enumerate(self.layers, 1):
            if not 0 <= layer.input < j:
                raise ShapeError(f"frozen layer {j} reads node {layer.input}, not an earlier node")
            if layer.input_size != dims[layer.input]:
                raise ShapeError(f"frozen layer {j} ({layer.kind}) reads {layer.input_size} "
                                 f"values, node {layer.input} has width {dims[layer.input]}")
            n = layer.width
            for s in layer.skips:
                if not 0 <= s.source < j:
                    raise ShapeError(f"frozen layer {j} skip from node {s.source} is not earlier")
                if (s.weight.nrows(), s.weight.ncols()) != (n, dims[s.source]):
                    raise ShapeError(f"frozen layer {j} skip from node {s.source} has wrong shape")
            dims.append(n)
        object.__setattr__(self, "node_dims", tuple(dims))

    @property
    def depth(self) -> int:
        return len(self.layers)

    @property
    def widths(self) -> tuple[int, ...]:
        return tuple(layer.width for layer in self.layers)

    @property
    def tuned_parameters(self) -> int:
        """Number of tuned scalars: one γ and one β per neuron (dense) or channel (conv)."""
        return sum(layer.tuned_parameters for layer in self.layers)

    @property
    def frozen_parameters(self) -> int:
        """Frozen scalars: the drawn entries of every V (structural zeros of block masks are not
        parameters), plus entries of random skip matrices; 0/1 selection and identity skips are
        fixed layout, not counted."""
        return sum(layer.frozen_parameters for layer in self.layers)

    @staticmethod
    def _add_skips(layer: FrozenKind, h: Vector, nodes: Sequence[Node]) -> Vector:
        for s in layer.skips:
            p = s.weight * column(node_values(nodes[s.source]))
            h = tuple(h[r] + p[r, 0] for r in range(len(h)))
        return h

    def evaluate_nodes(self, x: Sequence[Any]) -> list[Vector]:
        """Exact values of every node ``h_0 = x, h_1, …`` at a rational input."""
        nodes: list[Vector] = [as_vector(x, self.input_dim, "input")]
        for layer in self.layers:
            h = activate(layer.activation, layer.pre_activation(nodes[layer.input]))
            nodes.append(self._add_skips(layer, h, nodes) if layer.skips else h)
        return nodes

    def evaluate(self, x: Sequence[Any]) -> Vector:
        """Exact ``f(x)``: the value of the last node."""
        return self.evaluate_nodes(x)[-1]

    def evaluate_checkpoints(self, x: Sequence[Any]) -> list[Vector]:
        """Exact values of the checkpoint nodes at ``x``; equal to
        ``[self.evaluate_nodes(x)[c] for c in self.checkpoints]`` (tested), computed with each
        kind's :meth:`evaluate_node`, which may keep a node as integers over one denominator
        (:class:`~exactnorm.model.values.Scaled`): the fast path at real size."""
        nodes: list[Node] = [as_vector(x, self.input_dim, "input")]
        for layer in self.layers:
            h = layer.evaluate_node(nodes[layer.input])
            nodes.append(self._add_skips(layer, node_values(h), nodes) if layer.skips else h)
        return [node_values(nodes[c]) for c in self.checkpoints]

    def evaluate_float(self, X: np.ndarray) -> np.ndarray:
        """float64 ``f`` on a batch ``X`` (n × d_0); for comparison only."""
        nodes = [np.asarray(X, dtype=np.float64)]
        for layer in self.layers:
            u = layer.pre_activation_float(nodes[layer.input])
            h = np.maximum(u, 0.0) if layer.activation == "relu" else u
            for s in layer.skips:
                h = h + nodes[s.source] @ to_numpy(s.weight).T
            nodes.append(h)
        return nodes[-1]

    def float_copy(self) -> FloatNetwork:
        """The network with every frozen entry rounded once to float64 (each kind's
        :meth:`float_layer`), γ and β kept exact."""
        return FloatNetwork(self.input_dim, tuple(layer.float_layer() for layer in self.layers),
                            self.checkpoints)


@dataclass(frozen=True)
class FloatNetwork:
    """A frozen network as a float copy (layers of any kind, :class:`~exactnorm.model.kinds.
    base.FloatKind`): what an export computes, evaluated by :meth:`forward` in any float dtype.
    Read from a certificate by :func:`exactnorm.certificate.float_network` without building an
    exact matrix, or from an exact network by :meth:`FrozenNetwork.float_copy`."""

    input_dim: int
    layers: tuple[FloatKind, ...]
    checkpoints: tuple[int, ...]

    def __repr__(self) -> str:
        return (f"FloatNetwork(input_dim={self.input_dim}, depth={len(self.layers)}, "
                f"checkpoints={len(self.checkpoints)})")

    @property
    def depth(self) -> int:
        return len(self.layers)

    @property
    def widths(self) -> tuple[int, ...]:
        return tuple(layer.width for layer in self.layers)

    @property
    def node_dims(self) -> tuple[int, ...]:
        return (self.input_dim,) + self.widths

    @property
    def tuned_parameters(self) -> int:
        return sum(layer.tuned_parameters for layer in self.layers)

    @property
    def frozen_parameters(self) -> int:
        return sum(layer.frozen_parameters for layer in self.layers)

    def forward(self, X: np.ndarray, dtype: Any = np.float64) -> np.ndarray:
        """The network in ``dtype`` arithmetic, every parameter rounded once to ``dtype``:
        ``h_j = σ_j(u_j) + Σ_s P_{j,s} h_s`` with each kind's pre-activation ``u_j`` (the
        ``muladd`` form of an export)."""
        t = np.dtype(dtype).type
        # a node is dropped after the last layer that reads it: a real-size network has
        # thousands of nodes, and a batch of them all would not fit in memory
        last = {0: 0}
        for j, layer in enumerate(self.layers, 1):
            for source in (layer.input, *(s for s, _ in layer.skips)):
                last[source] = j
        nodes: list[np.ndarray | None] = [np.asarray(X, dtype=t)]
        for j, layer in enumerate(self.layers, 1):
            u = layer.pre_activation(nodes[layer.input], t)  # type: ignore[arg-type]
            h = np.maximum(u, t(0)) if layer.activation == "relu" else u
            for source, P in layer.skips:
                h = h + nodes[source] @ P.astype(t).T
            nodes.append(h)
            for k in {layer.input, *(s for s, _ in layer.skips)}:
                if last.get(k, 0) <= j and k != len(nodes) - 1:
                    nodes[k] = None
        return nodes[-1]  # type: ignore[return-value]
