"""Target and frozen networks: exact and float64 evaluation, exact interval boxes (SPEC §1).

Ground types: matrices are ``fmpq_mat`` (frozen weights may be ``fmpz_mat``), vectors are tuples of
``fmpq``. Nothing here solves a system.

Target ``g``: ``a_i = σ_i(W_i a_{i-1} + b_i)``, ``a_0 = x ∈ D = [lower, upper]``.

Frozen ``f``: node 0 is ``x``; layer ``j`` (from 1) computes
``u_j = γ_j ⊙ (V_j h_{in(j)}) + β_j`` and ``h_j = σ_j(u_j) + Σ_s P_{j,s} h_s``; only ``γ, β`` are
tuned. ``checkpoints[i-1]`` is the node that equals ``a_i``.

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
from flint import fmpq, fmpq_mat, fmpz_mat

from exactnorm.checker.vocabulary import ACTIVATIONS, SKIP_KINDS
from exactnorm.errors import InputError, LimitExceededError, ShapeError
from exactnorm.exact.linalg import FlintMatrix, to_fmpq_mat, to_numpy

__all__ = [
    "ACTIVATIONS",
    "SKIP_KINDS",
    "DEFAULT_MAX_WIDTH",
    "TargetLayer",
    "TargetNetwork",
    "Skip",
    "FrozenLayer",
    "FrozenNetwork",
    "affine_interval",
    "activate",
    "column",
]

#: Largest width accepted from a file unless the caller raises it.
DEFAULT_MAX_WIDTH = 4096

Vector = tuple[fmpq, ...]


def column(v: Sequence[Any]) -> fmpq_mat:
    """A tuple of exact numbers → ``n×1`` ``fmpq_mat``."""
    return fmpq_mat([[fmpq(x) if not isinstance(x, fmpq) else x] for x in v]) if len(v) \
        else fmpq_mat(0, 1)


def activate(name: str, v: Sequence[fmpq]) -> Vector:
    """Apply ``relu`` or ``identity`` entry-wise (exact)."""
    if name == "relu":
        return tuple(x if x > 0 else fmpq(0) for x in v)
    if name == "identity":
        return tuple(v)
    raise InputError(f"unknown activation {name!r}; expected one of {ACTIVATIONS}")


def _vector(x: Sequence[Any], n: int, what: str) -> Vector:
    if isinstance(x, (fmpq_mat, fmpz_mat)):
        x = x.entries()
    vals = to_fmpq_mat([list(x)], what).entries() if len(x) else []
    if len(vals) != n:
        raise ShapeError(f"{what} has length {len(vals)}, expected {n}")
    return tuple(vals)


def affine_interval(W: FlintMatrix, b: Sequence[fmpq], lo: Sequence[fmpq],
                    hi: Sequence[fmpq]) -> tuple[Vector, Vector]:
    """Exact range of ``W a + b`` over the box ``lo ≤ a ≤ hi`` (interval bound propagation).

    Each row's minimum is ``b_r + Σ_k (W_rk > 0 ? W_rk lo_k : W_rk hi_k)``; this is the exact
    minimum over the box (a box is a product set), not a relaxation.
    """
    rows: list[list[Any]] = W.tolist()
    los, his = [], []
    for r, row in enumerate(rows):
        mn = fmpq(b[r])
        mx = fmpq(b[r])
        for w, l, h in zip(row, lo, hi):
            if w > 0:
                mn += w * l
                mx += w * h
            elif w < 0:
                mn += w * h
                mx += w * l
        los.append(mn)
        his.append(mx)
    return tuple(los), tuple(his)


@dataclass(frozen=True)
class TargetLayer:
    """One target layer ``σ(W a + b)``; ``weight`` is ``fmpq_mat`` (d_i × d_{i-1})."""

    weight: fmpq_mat
    bias: Vector
    activation: str

    @property
    def shape(self) -> tuple[int, int]:
        return self.weight.nrows(), self.weight.ncols()


@dataclass(frozen=True)
class TargetNetwork:
    """The network to reproduce, with its rational input box ``D = [lower, upper]``.

    ``source`` optionally describes the model file it came from (``{"format": "onnx", "input":
    {"name", "shape"}, "output": {"name"}}``): not part of the function, so not compared; a
    certificate records it in its provenance and an ONNX export reuses the names and shape.
    """

    layers: tuple[TargetLayer, ...]
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
        return (f"TargetNetwork(widths={'-'.join(map(str, self.widths))}, activations={acts}, "
                f"box={self.box_text()})")

    def _repr_html_(self) -> str:
        import html

        rows = "".join(f"<tr><td>{i}</td><td>{layer.shape[1]}→{layer.shape[0]}</td>"
                       f"<td>{layer.activation}</td></tr>"
                       for i, layer in enumerate(self.layers[:20], 1))
        more = (f"<tr><td colspan=3>… {len(self.layers) - 20} more layers</td></tr>"
                if len(self.layers) > 20 else "")
        return (f"<b>TargetNetwork</b> {'-'.join(map(str, self.widths))} on "
                f"{html.escape(self.box_text())}<table><tr><th>layer</th><th>d_in→d_out</th>"
                f"<th>activation</th></tr>{rows}{more}</table>")

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
            rows, cols = layer.shape
            if rows == 0:
                raise ShapeError(f"target layer {i} has width 0")
            if cols != d_prev and i == 1:
                # the input dimension is the box's: say so in the words of the box
                raise ShapeError(f"the box has {d_prev} coordinates but the network input has "
                                 f"{cols}")
            if cols != d_prev:
                raise ShapeError(f"target layer {i} expects {cols} inputs, previous width is "
                                 f"{d_prev}")
            if len(layer.bias) != rows:
                raise ShapeError(f"target layer {i} bias has length {len(layer.bias)}, "
                                 f"expected {rows}")
            if layer.activation not in ACTIVATIONS:
                raise InputError(f"target layer {i}: unknown activation {layer.activation!r}; "
                                 f"expected one of {ACTIVATIONS}")
            d_prev = rows

    @classmethod
    def from_lists(cls, weights: Sequence[Any], biases: Sequence[Any],
                   activations: Sequence[str] | None = None, *, lower: Sequence[Any],
                   upper: Sequence[Any], max_width: int = DEFAULT_MAX_WIDTH) -> TargetNetwork:
        """Build from nested lists of exact numbers; default activations relu…relu, identity."""
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
            layers.append(TargetLayer(Wm, _vector(b, Wm.nrows(), f"target layer {i} bias"), act))
        d0 = len(lower)
        return cls(tuple(layers), _vector(lower, d0, "domain lower"),
                   _vector(upper, len(upper), "domain upper"))

    @property
    def widths(self) -> tuple[int, ...]:
        """``(d_0, d_1, …, d_L)``."""
        return (len(self.lower),) + tuple(layer.shape[0] for layer in self.layers)

    @property
    def depth(self) -> int:
        return len(self.layers)

    @property
    def parameters(self) -> int:
        """Number of target scalars: ``d_i·d_{i-1} + d_i`` per layer (weights and biases)."""
        return sum(rows * cols + rows for rows, cols in (layer.shape for layer in self.layers))

    def evaluate(self, x: Sequence[Any]) -> Vector:
        """Exact ``g(x)`` for a rational input (the box is not enforced here)."""
        a = _vector(x, self.widths[0], "input")
        for layer in self.layers:
            z = layer.weight * column(a)
            a = activate(layer.activation, [z[r, 0] + layer.bias[r] for r in range(z.nrows())])
        return a

    def evaluate_float(self, X: np.ndarray) -> np.ndarray:
        """float64 ``g`` on a batch ``X`` (n × d_0); for comparison only."""
        A = np.asarray(X, dtype=np.float64)
        for layer in self.layers:
            W = to_numpy(layer.weight)
            b = np.array([float(x) for x in layer.bias])
            A = A @ W.T + b
            if layer.activation == "relu":
                A = np.maximum(A, 0.0)
        return A

    def interval_boxes(self) -> list[tuple[Vector, Vector]]:
        """Exact boxes ``B_0 = D, B_1, …, B_L`` with ``a_i ∈ B_i`` (interval bound propagation)."""
        boxes = [(self.lower, self.upper)]
        for layer in self.layers:
            lo, hi = affine_interval(layer.weight, layer.bias, *boxes[-1])
            boxes.append((activate(layer.activation, lo), activate(layer.activation, hi)))
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
class Skip:
    """A frozen skip connection ``P h_source`` added after the activation.

    ``record`` is the draw record of a ``random`` skip (docs/certificate-format.md §2), so a
    certificate can prove it is the seeded draw; ``identity`` and ``selection`` skips need none.
    """

    source: int
    weight: FlintMatrix
    kind: str  # identity | selection | random
    # where the matrix came from, not what it is: two layers with equal matrices are equal
    record: dict[str, Any] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in SKIP_KINDS:
            raise InputError(f"unknown skip kind {self.kind!r}; expected one of {SKIP_KINDS}")


@dataclass(frozen=True)
class FrozenLayer:
    """``h = σ(γ ⊙ (V h_input) + β) + Σ skips``; only ``gamma`` and ``beta`` are tuned.

    ``record`` says where ``weight`` comes from: the draw record of a seeded random matrix
    (``{"generator": "exactnorm.shake256.v1", …}``), ``{"kind": "fixed", "why": …}`` for a
    declared non-random matrix, or ``None`` when unknown (such a network cannot be written as a
    version-2 certificate).

    ``drawn_columns`` names the columns of ``V`` that were drawn at random when the others are
    structural zeros of a block mask (``--routing mask``); ``None`` means every entry was drawn.
    Structural zeros are part of the layout, not frozen parameters.
    """

    input: int
    weight: FlintMatrix
    gamma: Vector
    beta: Vector
    activation: str
    skips: tuple[Skip, ...] = ()
    # where the matrix came from, not what it is: two layers with equal matrices are equal
    record: dict[str, Any] | None = field(default=None, compare=False)
    drawn_columns: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        cols = self.drawn_columns
        if cols is not None and (len(set(cols)) != len(cols)
                                 or not all(0 <= c < self.weight.ncols() for c in cols)):
            raise ShapeError(f"drawn columns {cols} are not distinct columns of a weight with "
                             f"{self.weight.ncols()} columns")
        if cols is not None:
            keep = set(cols)
            if any(x != 0 for row in self.weight.tolist() for c, x in enumerate(row)
                   if c not in keep):
                raise ShapeError("a weight entry outside the drawn columns is not zero")

    @property
    def frozen_parameters(self) -> int:
        """Drawn entries of ``V`` (structural zeros excluded) plus entries of random skips."""
        cols = self.weight.ncols() if self.drawn_columns is None else len(self.drawn_columns)
        return (self.weight.nrows() * cols
                + sum(s.weight.nrows() * s.weight.ncols() for s in self.skips
                      if s.kind == "random"))

    @property
    def width(self) -> int:
        return self.weight.nrows()


@dataclass(frozen=True)
class FrozenNetwork:
    """A frozen random network with tuned normalization parameters and its checkpoints."""

    input_dim: int
    layers: tuple[FrozenLayer, ...]
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
            if layer.weight.ncols() != dims[layer.input]:
                raise ShapeError(f"frozen layer {j} weight has {layer.weight.ncols()} columns, "
                                 f"node {layer.input} has width {dims[layer.input]}")
            n = layer.width
            if len(layer.gamma) != n or len(layer.beta) != n:
                raise ShapeError(f"frozen layer {j}: γ/β lengths differ from width {n}")
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
        """Number of tuned scalars: one γ and one β per neuron."""
        return sum(2 * layer.width for layer in self.layers)

    @property
    def frozen_parameters(self) -> int:
        """Frozen scalars: the drawn entries of every V (structural zeros of block masks are not
        parameters), plus entries of random skip matrices; 0/1 selection and identity skips are
        fixed layout, not counted."""
        return sum(layer.frozen_parameters for layer in self.layers)

    def evaluate_nodes(self, x: Sequence[Any]) -> list[Vector]:
        """Exact values of every node ``h_0 = x, h_1, …`` at a rational input."""
        nodes: list[Vector] = [_vector(x, self.input_dim, "input")]
        for layer in self.layers:
            v = layer.weight * column(nodes[layer.input])
            u = [layer.gamma[r] * v[r, 0] + layer.beta[r] for r in range(layer.width)]
            h = list(activate(layer.activation, u))
            for s in layer.skips:
                p = s.weight * column(nodes[s.source])
                h = [h[r] + p[r, 0] for r in range(layer.width)]
            nodes.append(tuple(h))
        return nodes

    def evaluate(self, x: Sequence[Any]) -> Vector:
        """Exact ``f(x)``: the value of the last node."""
        return self.evaluate_nodes(x)[-1]

    def evaluate_float(self, X: np.ndarray) -> np.ndarray:
        """float64 ``f`` on a batch ``X`` (n × d_0); for comparison only."""
        nodes = [np.asarray(X, dtype=np.float64)]
        for layer in self.layers:
            V = to_numpy(layer.weight)
            g = np.array([float(x) for x in layer.gamma])
            b = np.array([float(x) for x in layer.beta])
            u = (nodes[layer.input] @ V.T) * g + b
            h = np.maximum(u, 0.0) if layer.activation == "relu" else u
            for s in layer.skips:
                h = h + nodes[s.source] @ to_numpy(s.weight).T
            nodes.append(h)
        return nodes[-1]
