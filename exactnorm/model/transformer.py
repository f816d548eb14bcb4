"""A transformer as a data-flow graph of per-token vectors whose linear maps are *slots*: the
architecture object that the ONNX reader builds, the construction realizes slot by slot and the
certificate writes (docs/certificate-format.md §11, docs/transformers.md).

Contract. A :class:`Transformer` is ``vocabulary`` ``V``, ``positions`` ``T`` and a list of
:class:`Node` (node 0 is the one-hot input ``e_V(t) ⊕ e_T(p)``), each reading earlier nodes:

* ``slot``: a :class:`Slot`, an exact dense target (an identity layer for a projection; ReLU
  layers then an identity layer for an MLP) applied to one node;
* ``layernorm``: ``g ⊙ (x − μ)/√(σ² + ε) + b`` with a rational ``r``, ``r² ≥ d − 1``;
* ``attention``: heads of three slots ``(q, k, v)`` on one node, a scale and a mask
  (``"causal"`` or ``"none"``), the heads' outputs concatenated head-major;
* ``add``: the sum of two nodes (a residual).

:meth:`Transformer.boxes` derives, exactly, the box of every node by the rules of §11.2 (the
one-hot cube, the LayerNorm rule ``b ± |g|·r``, interval images of slots, the value hull of
attention, interval sums), and :meth:`Transformer.slot_targets` gives each slot as a
:class:`~exactnorm.model.network.TargetNetwork` on the box of the node it reads: the ordinary
target a construction realizes. :meth:`Transformer.evaluate_float` runs the graph in float64
(to compare a reading with onnxruntime).

Correctness argument of the boxes: docs/certificate-format.md §11.2; the checker derives them
again independently (``exactnorm/checker/transformer.py``) and refuses a slot whose declared
domain differs, so a bug here cannot make an invalid certificate pass.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from flint import fmpq

from exactnorm.errors import InputError, ShapeError
from exactnorm.model.layers import TargetLayer
from exactnorm.model.network import TargetNetwork

__all__ = ["Slot", "LayerNorm", "Head", "Node", "Transformer", "layernorm_radius",
           "MASKS", "ROLES"]

#: the masks an attention node may have (besides ``("add" | "fill", c)``)
MASKS = ("causal", "none")
#: what a slot is in its transformer (descriptive: the format knows nodes and head roles only)
ROLES = ("embed", "q", "k", "v", "o", "mlp", "unembed", "linear")

Vector = tuple[fmpq, ...]
Box = tuple[Vector, Vector]


def layernorm_radius(d: int, denominator: int = 64) -> fmpq:
    """The least ``r = m/denominator`` with ``r² ≥ d − 1``: the bound of every coordinate of a
    normalized token of ``d`` features (docs/certificate-format.md §11.2), exact and short.

    >>> layernorm_radius(32), layernorm_radius(5), layernorm_radius(1)
    (357/64, 2, 0)
    """
    if d < 1:
        raise ShapeError(f"a LayerNorm normalizes at least one feature, got {d}")
    m = math.isqrt((d - 1) * denominator * denominator)
    if m * m < (d - 1) * denominator * denominator:
        m += 1
    return fmpq(m, denominator)


@dataclass(frozen=True)
class Slot:
    """A linear map of the transformer (or a ReLU MLP): exact dense target layers, each
    ``(W, b, activation)``; ``role`` says what it is, ``source`` where it was read from
    (descriptive: the ONNX tensors it reads and writes)."""

    name: str
    layers: tuple[TargetLayer, ...]
    role: str = "linear"
    source: dict[str, Any] | None = field(default=None, compare=False)

    @property
    def input_size(self) -> int:
        return self.layers[0].input_size

    @property
    def width(self) -> int:
        return self.layers[-1].width

    def target(self, lower: Sequence[fmpq], upper: Sequence[fmpq]) -> TargetNetwork:
        """The slot as a target network on the box ``[lower, upper]``."""
        return TargetNetwork(self.layers, tuple(lower), tuple(upper))

    def interval(self, box: Box) -> Box:
        """The exact interval image of the slot over ``box``."""
        return self.target(*box).interval_boxes()[-1]

    def evaluate_float(self, X: np.ndarray) -> np.ndarray:
        """float64 values on the rows of ``X``."""
        for layer in self.layers:
            X = layer.evaluate_float(X)
        return X


@dataclass(frozen=True)
class LayerNorm:
    """``g ⊙ (x − μ)/√(σ² + ε) + b`` over the ``d`` features of a token, with ``r² ≥ d − 1``."""

    gain: Vector
    bias: Vector
    epsilon: fmpq
    r: fmpq

    def __post_init__(self) -> None:
        d = len(self.gain)
        if len(self.bias) != d or d < 1:
            raise ShapeError(f"a LayerNorm has {d} gains and {len(self.bias)} biases")
        if self.epsilon < 0:
            raise InputError(f"a LayerNorm's epsilon must be ≥ 0, got {self.epsilon}")
        if self.r < 0 or self.r * self.r < d - 1:
            raise InputError(f"a LayerNorm of {d} features needs r ≥ 0 with r² ≥ {d - 1}, "
                             f"got r = {self.r}")

    def box(self) -> Box:
        lo = tuple(b - abs(g) * self.r for g, b in zip(self.gain, self.bias))
        hi = tuple(b + abs(g) * self.r for g, b in zip(self.gain, self.bias))
        return lo, hi

    def evaluate_float(self, X: np.ndarray) -> np.ndarray:
        mu = X.mean(axis=-1, keepdims=True)
        var = ((X - mu) ** 2).mean(axis=-1, keepdims=True)
        g = np.array([float(x) for x in self.gain])
        b = np.array([float(x) for x in self.bias])
        return g * (X - mu) / np.sqrt(var + float(self.epsilon)) + b


@dataclass(frozen=True)
class Head:
    """The three slots of one attention head."""

    q: str
    k: str
    v: str


@dataclass(frozen=True)
class Node:
    """One node of the graph: ``op`` one of ``input``, ``slot``, ``layernorm``, ``attention``,
    ``add``; ``reads`` the nodes it reads (two for ``add``, none for ``input``)."""

    op: str
    reads: tuple[int, ...] = ()
    slot: str | None = None
    layernorm: LayerNorm | None = None
    heads: tuple[Head, ...] = ()
    scale: fmpq | None = None
    #: ``"none"``, ``"causal"`` (−∞ above the diagonal) or ``("add" | "fill", c)``: ``c``
    #: added to, or put in place of, the scores of keys after the query
    mask: str | tuple[str, fmpq] | None = None


@dataclass
class Transformer:
    """The architecture: vocabulary, positions, nodes, the output node and the slots by name.
    ``source`` describes the model file (descriptive: input and output names)."""

    vocabulary: int
    positions: int
    nodes: list[Node]
    output: int
    slots: dict[str, Slot]
    source: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        self.validate()

    # ---------------------------------------------------------------- structure

    def validate(self) -> None:
        """Reads, widths, slot uses and LayerNorm sizes (the checker's rules ``architecture``
        and ``shape``, applied by the writer so that it never writes a document the checker
        refuses for its structure)."""
        if self.vocabulary < 1 or self.positions < 0:
            raise ShapeError(f"vocabulary {self.vocabulary} and positions {self.positions}")
        if not self.nodes or self.nodes[0].op != "input":
            raise ShapeError("node 0 of a transformer is its one-hot input")
        used: list[str] = []
        for k, node in enumerate(self.nodes):
            if any(not 0 <= j < k for j in node.reads) or (k > 0 and node.op == "input"):
                raise ShapeError(f"node {k} ({node.op}) reads {node.reads}: not earlier nodes")
            used += [node.slot] if node.slot else [n for h in node.heads for n in (h.q, h.k, h.v)]
        if sorted(used) != sorted(self.slots) or len(set(used)) != len(used):
            raise ShapeError("every slot is used by exactly one node or head role")
        self.widths()
        read = {j for node in self.nodes for j in node.reads}
        unread = [k for k in range(len(self.nodes)) if k not in read and k != self.output]
        if unread:
            raise ShapeError(f"node {unread[0]} ({self.nodes[unread[0]].op}) is never read")

    def widths(self) -> list[int]:
        """The width of every node (a :class:`ShapeError` where two widths disagree)."""
        w: list[int] = []
        for k, node in enumerate(self.nodes):
            if node.op == "input":
                w.append(self.vocabulary + self.positions)
            elif node.op == "slot":
                s = self.slots[node.slot or ""]
                self._reads_width(s, w[node.reads[0]], k)
                w.append(s.width)
            elif node.op == "layernorm":
                assert node.layernorm is not None
                if len(node.layernorm.gain) != w[node.reads[0]]:
                    raise ShapeError(f"node {k}: a LayerNorm of {len(node.layernorm.gain)} "
                                     f"features reads {w[node.reads[0]]}")
                w.append(w[node.reads[0]])
            elif node.op == "attention":
                total = 0
                for h in node.heads:
                    q, key, v = self.slots[h.q], self.slots[h.k], self.slots[h.v]
                    for s in (q, key, v):
                        self._reads_width(s, w[node.reads[0]], k)
                    if q.width != key.width:
                        raise ShapeError(f"node {k}: head {h.q} writes {q.width} values, "
                                         f"{h.k} {key.width}")
                    total += v.width
                w.append(total)
            elif node.op == "add":
                a, c = node.reads
                if w[a] != w[c]:
                    raise ShapeError(f"node {k} adds nodes of widths {w[a]} and {w[c]}")
                w.append(w[a])
            else:
                raise ShapeError(f"node {k}: unknown op {node.op!r}")
        return w

    @staticmethod
    def _reads_width(s: Slot, width: int, k: int) -> None:
        if s.input_size != width:
            raise ShapeError(f"node {k}: slot {s.name} reads {s.input_size} values, the node it "
                             f"reads has {width}")

    def slot_reads(self) -> dict[str, int]:
        """For every slot, the node it reads."""
        out = {}
        for node in self.nodes:
            if node.slot:
                out[node.slot] = node.reads[0]
            for h in node.heads:
                for name in (h.q, h.k, h.v):
                    out[name] = node.reads[0]
        return out

    @property
    def blocks(self) -> int:
        """Attention nodes: the transformer's blocks."""
        return sum(node.op == "attention" for node in self.nodes)

    def slot_order(self) -> list[str]:
        """Slot names in node order (heads in order, q, k, v)."""
        out: list[str] = []
        for node in self.nodes:
            out += [node.slot] if node.slot else [n for h in node.heads for n in (h.q, h.k, h.v)]
        return out

    # ---------------------------------------------------------------- boxes

    def boxes(self) -> dict[int, Box]:
        """The exact box of every node a slot reads and of the nodes those need
        (docs/certificate-format.md §11.2), computed only where needed."""
        needed = set(self.slot_reads().values())
        boxes: dict[int, Box] = {}

        def box(k: int) -> Box:
            if k in boxes:
                return boxes[k]
            node = self.nodes[k]
            if node.op == "input":
                n = self.vocabulary + self.positions
                out: Box = ((fmpq(0),) * n, (fmpq(1),) * n)
            elif node.op == "layernorm":
                assert node.layernorm is not None
                out = node.layernorm.box()
            elif node.op == "slot":
                out = self.slots[node.slot or ""].interval(box(node.reads[0]))
            elif node.op == "attention":
                parts = [self.slots[h.v].interval(box(node.reads[0])) for h in node.heads]
                out = (sum((p[0] for p in parts), ()), sum((p[1] for p in parts), ()))
            else:  # add
                (la, ha), (lc, hc) = box(node.reads[0]), box(node.reads[1])
                out = (tuple(x + y for x, y in zip(la, lc)),
                       tuple(x + y for x, y in zip(ha, hc)))
            boxes[k] = out
            return out

        for k in sorted(needed):
            box(k)
        return boxes

    def slot_targets(self) -> dict[str, TargetNetwork]:
        """Every slot as a target network on the box of the node it reads, in node order."""
        boxes = self.boxes()
        reads = self.slot_reads()
        return {name: self.slots[name].target(*boxes[reads[name]]) for name in self.slot_order()}

    # ---------------------------------------------------------------- float evaluation

    def evaluate_float(self, tokens: Sequence[int]) -> np.ndarray:
        """float64 outputs (``n × width``) of one sequence of tokens, in the semantics of
        docs/certificate-format.md §11.1 (for comparison with the source model only)."""
        t = np.asarray(tokens, dtype=np.int64)
        n = len(t)
        if n < 1 or (self.positions and n > self.positions):
            raise InputError(f"a sequence of length {n}; this transformer reads 1 to "
                             f"{self.positions or 'any number of'} tokens")
        if t.min() < 0 or t.max() >= self.vocabulary:
            raise InputError(f"tokens must lie in 0 … {self.vocabulary - 1}")
        X = np.zeros((n, self.vocabulary + self.positions))
        X[np.arange(n), t] = 1.0
        if self.positions:
            X[np.arange(n), self.vocabulary + np.arange(n)] = 1.0
        vals: list[Any] = []
        for node in self.nodes:
            if node.op == "input":
                vals.append(X)
            elif node.op == "slot":
                vals.append(self.slots[node.slot or ""].evaluate_float(vals[node.reads[0]]))
            elif node.op == "layernorm":
                assert node.layernorm is not None
                vals.append(node.layernorm.evaluate_float(vals[node.reads[0]]))
            elif node.op == "add":
                vals.append(vals[node.reads[0]] + vals[node.reads[1]])
            else:
                vals.append(self._attention_float(node, vals[node.reads[0]]))
        return np.asarray(vals[self.output])

    def _attention_float(self, node: Node, X: np.ndarray) -> np.ndarray:
        n = X.shape[0]
        outs = []
        for h in node.heads:
            q, k, v = (self.slots[s].evaluate_float(X) for s in (h.q, h.k, h.v))
            scores = float(node.scale or 0) * (q @ k.T)
            later = ~np.tril(np.ones((n, n), dtype=bool))
            if node.mask == "causal":
                scores = np.where(later, -np.inf, scores)
            elif isinstance(node.mask, tuple):
                how, c = node.mask
                scores = np.where(later, float(c) + (scores if how == "add" else 0), scores)
            scores = scores - scores.max(axis=1, keepdims=True)
            p = np.exp(scores)
            p /= p.sum(axis=1, keepdims=True)
            outs.append(p @ v)
        return np.concatenate(outs, axis=1)

    def describe(self) -> str:
        """One line: blocks, heads, widths, slots."""
        heads = [len(node.heads) for node in self.nodes if node.op == "attention"]
        return (f"transformer: vocabulary {self.vocabulary}, positions {self.positions}, "
                f"{self.blocks} block(s), heads {heads}, {len(self.slots)} slots, "
                f"{sum(node.op == 'layernorm' for node in self.nodes)} LayerNorm(s)")
