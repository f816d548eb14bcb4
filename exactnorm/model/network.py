"""Target and frozen networks of every layer kind: exact and float64 evaluation, exact boxes.

One :class:`TargetNetwork` and one :class:`FrozenNetwork` hold layers of any registered kind: the
roles of :mod:`exactnorm.model.layers` around the operators of :mod:`exactnorm.model.operators`;
their loops use only the roles and never name a kind. Ground types: matrices are ``fmpq_mat``
(frozen weights may be ``fmpz_mat``), vectors are tuples of ``fmpq``. Nothing here solves a system.

Target ``g``: ``a_i = σ_i(A_i(a_{p(i)}) + S_i a_{q(i)})``, ``a_0 = x ∈ D = [lower, upper]``, where
``A_i`` is the layer's fixed affine map (``W_i a + b_i`` for a dense layer, a convolution or a
pooling for the others), ``p(i)`` the node it reads (``i − 1`` in a chain) and ``S_i a_q`` an
optional skip added before the activation (a residual block's shortcut: identity or selection,
:class:`~exactnorm.model.routes.Route`). The topology (:class:`Wiring`) is kind-free and lives
here, not in the layers.

Frozen ``f``: node 0 is ``x``; layer ``j`` (from 1) computes the pre-activation
``u_j = γ_j ⊙ (V_j h_{in(j)}) + β_j`` of its kind and ``h_j = σ_j(u_j + R_j h_{r(j)}) + Σ_s P_{j,s}
h_s``: the skips ``P`` after the activation are the layer's (any kind may have them), the
*residual* ``R_j`` before it is the network's and sits on checkpoints only (the target layer's
skip, read from the checkpoint of its source); only ``γ, β`` are tuned. ``checkpoints[i-1]`` is
the node that equals ``a_i``.

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
from flint import fmpq_mat

from exactnorm.checker.vocabulary import ACTIVATIONS, SKIP_KINDS
from exactnorm.errors import InputError, LimitExceededError, ShapeError
from exactnorm.exact.linalg import FlintMatrix, to_fmpq_mat
from exactnorm.model.batch import activate_batch, add, as_columns, from_columns, to_columns
from exactnorm.model.layers import FloatLayer, FrozenLayer, TargetLayer
from exactnorm.model.operators.dense import Dense
from exactnorm.model.routes import (
    Route,
    Skip,
    apply_linear,
    apply_linear_columns,
    apply_linear_float,
)
from exactnorm.model.values import (
    Node,
    Scaled,
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
    "Wiring",
    "FrozenLayer",
    "FloatLayer",
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
class Wiring:
    """Where target layer ``i`` reads and what it adds before its activation: ``input`` is the
    node ``p(i) < i`` (0 is the input ``x``), ``skip`` an identity or selection skip (a
    :class:`~exactnorm.model.routes.Route`) from node ``skip.source < i``, or ``None``."""

    input: int
    skip: Skip | None = None


def _add(u: Vector, v: Vector) -> Vector:
    return tuple(x + y for x, y in zip(u, v))


@dataclass(frozen=True)
class TargetNetwork:
    """The network to reproduce, layers of any kind, with its rational input box
    ``D = [lower, upper]``.

    ``source`` optionally describes the model file it came from (``{"format": "onnx", "input":
    {"name", "shape"}, "output": {"name"}}``): not part of the function, so not compared; a
    certificate records it in its provenance and an ONNX export reuses the names and shape.
    """

    layers: tuple[TargetLayer, ...]
    lower: Vector
    upper: Vector
    source: dict[str, Any] | None = field(default=None, compare=False, repr=False)
    #: one :class:`Wiring` per layer, or ``None`` for a chain (every layer reads the one before)
    wiring: tuple[Wiring, ...] | None = None

    def wire(self, i: int) -> Wiring:
        """The wiring of target layer ``i`` (from 1)."""
        return Wiring(i - 1) if self.wiring is None else self.wiring[i - 1]

    @property
    def is_chain(self) -> bool:
        """Whether every layer reads the layer before it and adds no skip."""
        return all(w == Wiring(i) for i, w in enumerate(self.wiring or ()))

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
        if len(self.lower) == 0:
            raise ShapeError("the input dimension must be at least 1")
        for k, (l, h) in enumerate(zip(self.lower, self.upper)):
            if l > h:
                raise InputError(f"inverted box: lower[{k}] = {l} > upper[{k}] = {h}")
        if self.wiring is not None:
            object.__setattr__(self, "wiring", tuple(self.wiring))
            if len(self.wiring) != len(self.layers):
                raise ShapeError(f"{len(self.wiring)} wirings for {len(self.layers)} layers")
        dims = [len(self.lower)]
        for i, layer in enumerate(self.layers, 1):
            w = self.wire(i)
            if type(w.input) is not int or not 0 <= w.input < i:
                raise ShapeError(f"target layer {i} reads node {w.input!r}, not an earlier node")
            n, have = layer.input_size, dims[w.input]
            if n != have and i == 1:
                # the input dimension is the box's: say so in the words of the box
                raise ShapeError(f"the box has {have} coordinates but the network input has "
                                 f"{n}")
            if n != have:
                what = "the previous width is" if w.input == i - 1 \
                    else f"node {w.input} has width"
                raise ShapeError(f"target layer {i} ({layer.kind}) reads {n} values, {what} "
                                 f"{have}")
            if w.skip is not None:
                self._check_skip(i, layer, w.skip, dims)
            dims.append(layer.width)

    @staticmethod
    def _check_skip(i: int, layer: TargetLayer, skip: Skip, dims: list[int]) -> None:
        if not 0 <= skip.source < i:
            raise ShapeError(f"target layer {i}: skip from node {skip.source}, not an earlier "
                             f"node")
        if skip.kind not in ("identity", "selection") or not isinstance(skip.weight, Route):
            raise InputError(f"target layer {i}: a target's skip is an identity or selection "
                             f"route, not {skip.kind}")
        shape = (skip.weight.nrows(), skip.weight.ncols())
        if shape != (layer.width, dims[skip.source]):
            raise ShapeError(f"target layer {i}: skip of shape {shape[0]}×{shape[1]}, the "
                             f"layer writes {layer.width} values and node {skip.source} has "
                             f"{dims[skip.source]}")

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
            layers.append(TargetLayer(Dense(Wm), as_vector(b, Wm.nrows(),
                                                           f"target layer {i} bias"), act))
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

    def evaluate_nodes(self, x: Sequence[Any]) -> list[Vector]:
        """Exact ``a_0 = x, a_1, …, a_L`` at a rational input (the box is not enforced)."""
        nodes = [as_vector(x, self.widths[0], "input")]
        for i, layer in enumerate(self.layers, 1):
            w = self.wire(i)
            if w.skip is None:
                nodes.append(layer.evaluate(nodes[w.input]))
                continue
            u = _add(layer.affine(nodes[w.input]), apply_linear(w.skip.weight,
                                                               nodes[w.skip.source]))
            nodes.append(activate(layer.activation, u))
        return nodes

    def evaluate(self, x: Sequence[Any]) -> Vector:
        """Exact ``g(x)`` for a rational input (the box is not enforced here)."""
        if self.wiring is None:
            a = as_vector(x, self.widths[0], "input")
            for layer in self.layers:
                a = layer.evaluate(a)
            return a
        return self.evaluate_nodes(x)[-1]

    def last_readers(self) -> list[int]:
        """For each node ``k`` (0 … L), the last layer that reads it (as input or skip
        source); the output node's own index for the output and for unread nodes."""
        last = list(range(self.depth + 1))
        for i in range(1, self.depth + 1):
            w = self.wire(i)
            for k in (w.input, None if w.skip is None else w.skip.source):
                if k is not None:
                    last[k] = max(last[k], i)
        return last

    def evaluate_columns(self, A: FlintMatrix) -> fmpq_mat:
        """Exact ``g`` on every column of ``A`` (``d_0 × m``, one sample per column), equal to
        :meth:`evaluate` per column: the batch is held as integers over one denominator and
        each layer's ``affine_columns`` maps all samples at once; the wiring is followed (a
        skip added before the activation), and a node is dropped after its last reader."""
        if A.nrows() != self.widths[0]:
            raise ShapeError(f"a batch of {A.nrows()} rows, the network input has "
                             f"{self.widths[0]}")
        last = self.last_readers()
        nodes = {0: from_columns(A)}
        for i, layer in enumerate(self.layers, 1):
            w = self.wire(i)
            u = layer.affine_columns(nodes[w.input])
            if w.skip is not None:
                u = add(u, apply_linear_columns(w.skip.weight, nodes[w.skip.source]))
            nodes[i] = activate_batch(layer.activation, u)
            for k in [k for k in nodes if last[k] <= i and k != i]:
                del nodes[k]
        return to_columns(nodes[self.depth])

    def evaluate_float(self, X: np.ndarray) -> np.ndarray:
        """float64 ``g`` on a batch ``X`` (n × d_0); for comparison only."""
        nodes = [np.asarray(X, dtype=np.float64)]
        for i, layer in enumerate(self.layers, 1):
            w = self.wire(i)
            if w.skip is None:
                nodes.append(layer.evaluate_float(nodes[w.input]))
                continue
            u = layer.affine_float(nodes[w.input]) + apply_linear_float(
                w.skip.weight, nodes[w.skip.source])
            nodes.append(np.maximum(u, 0.0) if layer.activation == "relu" else u)
        return nodes[-1]

    def interval_boxes(self) -> list[tuple[Vector, Vector]]:
        """Exact boxes ``B_0 = D, B_1, …, B_L`` with ``a_i ∈ B_i``: each kind's exact interval
        rule on the box of the node it reads; with a skip, the sum of the two terms' exact
        ranges (sound, and loose when the terms are correlated: that only enlarges shifts)."""
        d = len(self.lower)
        nodes = [(Scaled.of(self.lower, d, 1), Scaled.of(self.upper, d, 1))]
        for i, layer in enumerate(self.layers, 1):
            w = self.wire(i)
            if w.skip is None:
                nodes.append(layer.interval_columns(*nodes[w.input]))
                continue
            # a route selects coordinates (entries 0 or 1): monotone, the ends map to the ends
            lo, hi = (as_columns(v, layer.width) for v in layer.affine_interval_columns(
                *nodes[w.input]))
            slo, shi = (apply_linear_columns(w.skip.weight, as_columns(v, w.skip.weight.ncols()))
                        for v in nodes[w.skip.source])
            nodes.append((activate_batch(layer.activation, add(lo, slo)),
                          activate_batch(layer.activation, add(hi, shi))))
        return [(self.lower, self.upper)] + [(lo.values(), hi.values()) for lo, hi in nodes[1:]]

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
    layers: tuple[FrozenLayer, ...]
    checkpoints: tuple[int, ...]
    #: ``(j, R)``: checkpoint layer ``j`` adds ``R.weight · h_{R.source}`` before its activation
    residuals: tuple[tuple[int, Skip], ...] = ()
    node_dims: tuple[int, ...] = field(init=False)
    #: a *given* network (``exactnorm capacity``, explicit ``V``): per layer the
    #: :class:`~exactnorm.model.batchnorm.BatchNorm` its γ, β reparametrize, or ``None``; empty
    #: for a constructed network
    normalizations: tuple[Any, ...] = ()
    #: where a given network was read from (a file name), for messages and provenance
    name: str | None = field(default=None, compare=False)

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
        object.__setattr__(self, "residuals", tuple(self.residuals))
        seen = set()
        for j, r in self.residuals:
            if j not in self.checkpoints or j in seen:
                raise ShapeError(f"a residual on frozen layer {j}: only a checkpoint carries one, "
                                 f"and at most one")
            seen.add(j)
            if not 0 <= r.source < j or not isinstance(r.weight, Route):
                raise ShapeError(f"the residual of checkpoint {j} reads node {r.source} through a "
                                 f"route from an earlier node")
            if (r.weight.nrows(), r.weight.ncols()) != (dims[j], dims[r.source]):
                raise ShapeError(f"the residual of checkpoint {j} has shape "
                                 f"{r.weight.nrows()}×{r.weight.ncols()}, not "
                                 f"{dims[j]}×{dims[r.source]}")
        object.__setattr__(self, "node_dims", tuple(dims))
        object.__setattr__(self, "normalizations", tuple(self.normalizations))
        if self.normalizations and len(self.normalizations) != len(self.layers):
            raise ShapeError(f"{len(self.normalizations)} normalization records for "
                             f"{len(self.layers)} layers")
        for j, (layer, norm) in enumerate(zip(self.layers, self.normalizations), 1):
            if norm is not None and norm.width != layer.width:
                raise ShapeError(f"frozen layer {j}: a BatchNormalization of {norm.width} "
                                 f"channels after {layer.width} neurons")

    def residual(self, j: int) -> Skip | None:
        """The residual of frozen layer ``j`` (from 1), if any."""
        return dict(self.residuals).get(j)

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
    def _add_skips(layer: FrozenLayer, h: Vector, nodes: Sequence[Node]) -> Vector:
        for s in layer.skips:
            h = _add(h, apply_linear(s.weight, node_values(nodes[s.source])))
        return h

    def _activated(self, j: int, layer: FrozenLayer, nodes: Sequence[Node]) -> Vector:
        """``σ_j(u_j + R_j h_r)``: the residual added before the activation."""
        u = layer.pre_activation(node_values(nodes[layer.input]))
        r = self.residual(j)
        if r is not None:
            u = _add(u, apply_linear(r.weight, node_values(nodes[r.source])))
        return activate(layer.activation, u)

    def evaluate_nodes(self, x: Sequence[Any]) -> list[Vector]:
        """Exact values of every node ``h_0 = x, h_1, …`` at a rational input."""
        nodes: list[Vector] = [as_vector(x, self.input_dim, "input")]
        for j, layer in enumerate(self.layers, 1):
            h = self._activated(j, layer, nodes)
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
        with_residual = dict(self.residuals)
        for j, layer in enumerate(self.layers, 1):
            h: Node = self._activated(j, layer, nodes) if j in with_residual \
                else layer.evaluate_node(nodes[layer.input])
            nodes.append(self._add_skips(layer, node_values(h), nodes) if layer.skips else h)
        return [node_values(nodes[c]) for c in self.checkpoints]

    def evaluate_float(self, X: np.ndarray) -> np.ndarray:
        """float64 ``f`` on a batch ``X`` (n × d_0), by the float copy; for comparison only."""
        return self.float_copy().forward(X, np.float64)

    def float_copy(self) -> FloatNetwork:
        """The network with every frozen entry rounded once to float64 (each layer's
        :meth:`~exactnorm.model.layers.FrozenLayer.float_layer`), γ and β kept exact."""
        return FloatNetwork(self.input_dim, tuple(layer.float_layer() for layer in self.layers),
                            self.checkpoints, self.residuals)


@dataclass(frozen=True)
class FloatNetwork:
    """A frozen network as a float copy (:class:`~exactnorm.model.layers.FloatLayer` of any
    kind): what an export computes, evaluated by :meth:`forward` in any float dtype.
    Read from a certificate by :func:`exactnorm.certificate.float_network` without building an
    exact matrix, or from an exact network by :meth:`FrozenNetwork.float_copy`."""

    input_dim: int
    layers: tuple[FloatLayer, ...]
    checkpoints: tuple[int, ...]
    #: ``(j, skip)``: checkpoint ``j`` adds the route ``skip`` before its activation (the
    #: target layer's skip; :class:`FrozenNetwork`)
    residuals: tuple[tuple[int, Skip], ...] = ()

    def residual(self, j: int) -> Skip | None:
        """The residual of layer ``j`` (from 1), if any."""
        return dict(self.residuals).get(j)

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
        ``h_j = σ_j(u_j + R_j h_r) + Σ_s P_{j,s} h_s`` with each kind's pre-activation ``u_j``
        (the ``muladd`` form of an export) and a checkpoint's residual ``R_j``."""
        t = np.dtype(dtype).type
        residuals = dict(self.residuals)
        # a node is dropped after the last layer that reads it: a real-size network has
        # thousands of nodes, and a batch of them all would not fit in memory
        last = {0: 0}
        reads = []
        for j, layer in enumerate(self.layers, 1):
            r = residuals.get(j)
            reads.append({layer.input, *(s for s, _ in layer.skips),
                          *(() if r is None else (r.source,))})
            for source in reads[-1]:
                last[source] = j
        nodes: list[np.ndarray | None] = [np.asarray(X, dtype=t)]
        for j, layer in enumerate(self.layers, 1):
            u = layer.pre_activation(nodes[layer.input], t)  # type: ignore[arg-type]
            r = residuals.get(j)
            if r is not None:
                u = u + apply_linear_float(r.weight, nodes[r.source]).astype(t)  # type: ignore[arg-type]
            h = np.maximum(u, t(0)) if layer.activation == "relu" else u
            for source, P in layer.skips:
                h = h + nodes[source] @ P.astype(t).T
            nodes.append(h)
            for k in reads[j - 1]:
                if last.get(k, 0) <= j and k != len(nodes) - 1:
                    nodes[k] = None
        return nodes[-1]  # type: ignore[return-value]
