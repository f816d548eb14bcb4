"""Reading a transformer from ONNX, as PyTorch's exporters write it (TorchScript and dynamo):
token and position embeddings, LayerNorms (the ``LayerNormalization`` operator or its
decomposed form), attention as ``MatMul``/``Transpose``/``Reshape``/``Split``/``Slice``, a
constant scale, an additive or ``Where`` causal mask, ``Softmax``, ReLU MLPs, residual adds,
pre-LN and post-LN blocks, a final LayerNorm and the unembedding.

Contract. :func:`transformer_from_onnx` returns a :class:`~exactnorm.model.transformer.
Transformer` whose graph, evaluated in float64, gives the model's outputs (tested against
onnxruntime), or raises an :class:`~exactnorm.errors.InputError` naming the ONNX node that does
not fit and what would (a GELU or SiLU MLP: not piecewise linear), in well under a second.

How. The graph is run at its concrete input shape on *symbolic* values
(:mod:`.transformer_values`): constants are folded with NumPy and ONNX's reference evaluator;
every tensor that depends on the tokens carries index arrays (batch, position, feature; or
query position, key position, head) moved by NumPy exactly as ONNX moves numbers, and an exact
affine map of a graph node. Constants applied to a vector tensor compose into its map; a
non-affine operation (a LayerNorm, a ReLU, the product of queries and keys, a residual add, the
output) materializes the map into a **slot** — so each slot is exactly the composite linear map
the model applies between two parameter-free operations, however the exporter split it into
``MatMul``, ``Add``, ``Mul`` and layout nodes. The slots are named by their place (``embed``,
``block0.head1.q``, ``block0.o``, ``block0.mlp``, ``unembed``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from flint import fmpq

from exactnorm.errors import InputError
from exactnorm.exact.linalg import from_numpy_exact
from exactnorm.model.interop.transformer_attention import AttentionOps
from exactnorm.model.interop.transformer_layernorm import LayerNormOps
from exactnorm.model.interop.transformer_values import (
    INDEX_OPS,
    Expr,
    Value,
    exact_scalar,
    index_op,
)
from exactnorm.model.layers import TargetLayer
from exactnorm.model.onnx_common import array, attributes, is_token_model, load_model, node_label
from exactnorm.model.operators.dense import Dense
from exactnorm.model.transformer import (
    Head,
    Node,
    Slot,
    Transformer,
)

__all__ = ["transformer_from_onnx", "is_token_model", "NOT_PIECEWISE_LINEAR"]

#: operators that are not piecewise linear: no ReLU network equals them on a box with interior
NOT_PIECEWISE_LINEAR = ("Erf", "Gelu", "FastGelu", "BiasGelu", "QuickGelu", "Tanh", "Sigmoid",
                        "Exp", "Log", "Softplus", "Softsign", "Elu", "Selu", "Celu", "Mish",
                        "HardSigmoid", "HardSwish", "Sin", "Cos")
_PL_HINT = ("not piecewise linear: exact reproduction by a ReLU network is impossible; "
            "exactnorm certifies transformers whose MLPs use ReLU (train with a ReLU MLP)")
#: the largest tensor (entries) the reader follows symbolically
MAX_ENTRIES = 1 << 22


class _Reader(LayerNormOps, AttentionOps):
    def __init__(self, proto: Any) -> None:
        self.graph = proto.graph
        self.opset = max((int(o.version) for o in proto.opset_import
                          if o.domain in ("", "ai.onnx")), default=13)
        self.vals: dict[str, Any] = {}  # tensor name → np.ndarray (constant) or Value
        self.nodes: list[Node] = [Node("input")]
        self.tensor_of: dict[int, str] = {}
        self.slots: dict[str, Slot] = {}
        self.slot_cache: dict[tuple[int, tuple[int, ...]], int] = {}
        self.vocabulary = 0
        self.positions_used = False
        self.T = 0
        self.attentions: dict[int, dict[str, Any]] = {}  # id of a build → its state
        self.uses: dict[str, int] = {}
        for node in self.graph.node:
            for i in node.input:
                self.uses[i] = self.uses.get(i, 0) + 1
        for out in self.graph.output:
            self.uses[out.name] = self.uses.get(out.name, 0) + 1

    # ---------------------------------------------------------------- inputs and constants

    def start(self) -> str:
        inits = {t.name: t for t in self.graph.initializer}
        for name, t in inits.items():
            self.vals[name] = array(t)
        inputs = [i for i in self.graph.input if i.name not in inits]
        if len(inputs) != 1:
            raise InputError(f"a transformer graph has one input (the token ids); this one has "
                             f"{len(inputs)}: {', '.join(i.name for i in inputs)} (a mask or "
                             f"position input is not read: export the model with the tokens "
                             f"only)")
        inp = inputs[0]
        dims = [d.dim_value if d.HasField("dim_value") else None
                for d in inp.type.tensor_type.shape.dim]
        if len(dims) not in (1, 2):
            raise InputError(f"the token input {inp.name!r} has {len(dims)} dimensions; a "
                             f"transformer reads (batch, sequence) or (sequence) token ids")
        if dims[-1] is None:
            raise InputError(f"the sequence length of the token input {inp.name!r} is "
                             f"symbolic: export with a fixed sequence length T (the certificate "
                             f"covers every sequence of length ≤ T)")
        self.T = int(dims[-1])
        B = 1 if len(dims) == 1 or dims[0] is None else int(dims[0])
        shape = (B, self.T) if len(dims) == 2 else (self.T,)
        b, s = np.meshgrid(np.arange(B), np.arange(self.T), indexing="ij")
        self.vals[inp.name] = Value("tokens", {"b": b.reshape(shape), "s": s.reshape(shape)})
        return str(inp.name)

    def const(self, name: str) -> Any:
        v = self.vals.get(name) if name else None
        return v if isinstance(v, np.ndarray) else None

    def fold(self, node: Any) -> list[np.ndarray]:
        from onnx.reference import ReferenceEvaluator

        ins = [self.vals[i] if i else None for i in node.input]
        feeds = {i: v for i, v in zip(node.input, ins) if i}
        try:
            out = ReferenceEvaluator(node).run(None, feeds)
        except Exception as exc:
            raise InputError(f"{node_label(node)}: cannot evaluate it on its constant inputs "
                             f"({type(exc).__name__})") from None
        return [np.asarray(o) for o in out]

    # ---------------------------------------------------------------- materialization

    def row(self, v: Value, node: Any) -> list[int]:
        """The features along the last axis, the same at every other index, with one batch
        element and position along it; else the node is refused."""
        f, b, s = v.idx["f"], v.idx["b"], v.idx["s"]
        if f.ndim == 0 or f.size == 0:
            raise InputError(f"{node_label(node)} reads an empty or scalar per-token value")
        first = f.reshape(-1, f.shape[-1])
        p = [int(x) for x in first[0]]
        if not (first == first[0]).all() or \
                not (b == b[..., :1]).all() or not (s == s[..., :1]).all():
            raise InputError(f"{node_label(node)} reads a tensor whose last axis is not the "
                             f"features of one token: not a per-token map")
        return p

    def materialize(self, v: Value, node: Any, tensor: str) -> Value:
        """The vector value ``v`` as a node of the graph (a new slot unless it is a node's
        value unchanged); the result's features are the node's, in order."""
        assert v.expr is not None
        p = self.row(v, node)
        e = v.expr
        if e.is_base(p):
            k = e.base
        else:
            key = (id(e), tuple(p))
            if key not in self.slot_cache:
                A, c = e.rows(p)
                name = f"slot{len(self.slots)}"
                layers = e.layers + (TargetLayer(Dense(A), c, "identity"),)
                self.slots[name] = Slot(name, layers, source={"tensor": tensor, "rows": p})
                self.nodes.append(Node("slot", (e.base,), slot=name))
                self.tensor_of[len(self.nodes) - 1] = tensor
                self.slot_cache[key] = len(self.nodes) - 1
                self._keep(e)
            k = self.slot_cache[key]
        width = len(p)
        return self.node_value(k, width, v.idx["b"][..., 0], v.idx["s"][..., 0])

    def _keep(self, e: Expr) -> None:
        """Keep ``e`` alive so that ``id(e)`` stays unique while the cache uses it."""
        self.attentions.setdefault(-1, {}).setdefault("kept", []).append(e)

    def node_value(self, k: int, width: int, b: np.ndarray, s: np.ndarray) -> Value:
        shape = b.shape + (width,)
        f = np.broadcast_to(np.arange(width), shape)
        return Value("vector", {"b": np.broadcast_to(b[..., None], shape).copy(),
                                "s": np.broadcast_to(s[..., None], shape).copy(),
                                "f": f.copy()}, Expr(k, width))

    def new_node(self, node: Node, tensor: str) -> int:
        self.nodes.append(node)
        self.tensor_of[len(self.nodes) - 1] = tensor
        return len(self.nodes) - 1

    # ---------------------------------------------------------------- the walk

    def run(self) -> Transformer:
        token_input = self.start()
        for node in self.graph.node:
            if sum(o.nbytes for o in self.vals.values() if isinstance(o, np.ndarray)) > 1 << 31:
                raise InputError("the graph's constants exceed 2 GiB")
            self.step(node)
        outs = list(self.graph.output)
        if len(outs) != 1:
            raise InputError(f"a transformer graph has one output (the logits); this one has "
                             f"{len(outs)}")
        v = self.vals.get(outs[0].name)
        if not isinstance(v, Value) or v.form != "vector":
            raise InputError(f"the graph output {outs[0].name!r} is not a per-token vector of "
                             f"the tokens (a classifier head after the logits is not read: "
                             f"export the logits)")
        out = self.materialize(v, outs[0], outs[0].name)
        assert out.expr is not None
        return self.finish(out.expr.base, token_input, outs[0].name)

    def step(self, node: Any) -> None:
        if node.domain not in ("", "ai.onnx"):
            raise InputError(f"{node_label(node)}: operators of domain {node.domain!r} are not "
                             f"read")
        ins = [self.vals.get(i) if i else None for i in node.input]
        missing = [i for i, v in zip(node.input, ins) if i and v is None]
        if missing:
            raise InputError(f"{node_label(node)} reads {missing[0]!r}, which no earlier node "
                             f"writes")
        if node.op_type == "Constant":
            self.vals[node.output[0]] = array(attributes(node)["value"])
            return
        if all(not isinstance(v, Value) for v in ins):
            for name, value in zip(node.output, self.fold(node)):
                if value.size > MAX_ENTRIES:
                    raise InputError(f"{node_label(node)} computes {value.size} entries")
                self.vals[name] = value
            return
        if node.op_type == "Shape":
            v = ins[0]
            assert isinstance(v, Value)  # not every input is constant
            shape = np.array(v.shape, dtype=np.int64)
            a = attributes(node)
            self.vals[node.output[0]] = shape[a.get("start", 0):a.get("end", len(shape))]
            return
        handler = getattr(self, f"op_{node.op_type}", None)
        if node.op_type in INDEX_OPS and handler is None:
            handler = self.index
        if handler is None:
            raise self.refusal(node)
        result = handler(node, ins)
        if not isinstance(result, list):
            result = [result]
        for name, value in zip(node.output, result):
            if name:
                self.vals[name] = value

    def refusal(self, node: Any) -> InputError:
        op = node.op_type
        if op in NOT_PIECEWISE_LINEAR:
            why = _PL_HINT
        elif op in ("LeakyRelu", "PRelu"):
            why = "a leaky ReLU is piecewise linear but not a ReLU; the slots' MLPs use ReLU"
        elif op in ("RMSNormalization", "SimplifiedLayerNormalization"):
            why = "RMSNorm is not read; the transformer reader takes LayerNorm"
        else:
            why = ("not an operator of the transformers exactnorm reads (embeddings, "
                   "LayerNorm, linear maps, multi-head attention with softmax, ReLU MLPs, "
                   "residual adds)")
        return InputError(f"{node_label(node)}: {why}")

    # ---------------------------------------------------------------- layout

    def index(self, node: Any, ins: list[Any]) -> Any:
        v = ins[0]
        if not isinstance(v, Value):
            raise InputError(f"{node_label(node)}: only its data input may depend on the tokens")
        consts = [self.const(i) for i in node.input]
        if node.op_type == "Gather" and (consts[1] is None or consts[1].dtype.kind not in "iu"):
            raise InputError(f"{node_label(node)}: a Gather of a per-token value by indices that "
                             f"are not integer constants")
        if any(isinstance(x, Value) for x in ins[1:]):
            raise InputError(f"{node_label(node)}: its shape or index input depends on the "
                             f"tokens")
        if node.op_type == "Cast":
            to = int(attributes(node).get("to", 1))
            if v.form != "tokens" and to not in (1, 11):
                raise InputError(f"{node_label(node)}: a cast of a per-token value to another "
                                 f"type than float32 or float64 changes its values")
        attrs = attributes(node)
        outs: list[dict[str, np.ndarray]] = [{} for _ in node.output]
        for name, a in v.idx.items():
            for k, r in enumerate(index_op(node.op_type, [a], consts, attrs, len(node.output),
                                           self.opset)):
                outs[k][name] = np.ascontiguousarray(r)
        if node.op_type == "Dropout":
            return [v.with_idx(outs[0])]
        return [v.with_idx(o) for o in outs if o]

    def op_Concat(self, node: Any, ins: list[Any]) -> Any:
        values = [v for v in ins if isinstance(v, Value)]
        if len(values) != len(ins) or len({(v.form, id(v.expr)) for v in values}) != 1:
            raise InputError(f"{node_label(node)} concatenates tensors that are not views of "
                             f"one value")
        axis = int(attributes(node)["axis"])
        idx = {n: np.concatenate([v.idx[n] for v in values], axis=axis) for n in values[0].idx}
        return values[0].with_idx(idx)

    # ---------------------------------------------------------------- embeddings

    def op_Gather(self, node: Any, ins: list[Any]) -> Any:
        table, ids = ins
        if isinstance(table, np.ndarray) and isinstance(ids, Value) and ids.form == "tokens":
            if int(attributes(node).get("axis", 0)) != 0 or table.ndim != 2:
                raise InputError(f"{node_label(node)}: an embedding gathers rows of a matrix")
            if self.vocabulary:
                raise InputError(f"{node_label(node)}: a second embedding of the tokens")
            V, d = table.shape
            self.vocabulary = V
            E = from_numpy_exact(table.astype(np.float64).T, "embedding")
            A = E.__class__(d, V + self.T)
            for r in range(d):
                for t in range(V):
                    A[r, t] = E[r, t]
            shape = ids.shape + (d,)
            idx = {n: np.broadcast_to(a[..., None], shape).copy() for n, a in ids.idx.items()}
            idx["f"] = np.broadcast_to(np.arange(d), shape).copy()
            return Value("vector", idx, Expr(0, V + self.T, (), A, tuple(fmpq(0)
                                                                         for _ in range(d))))
        return self.index(node, ins)

    # ---------------------------------------------------------------- affine operations

    def _table(self, v: Value, c: np.ndarray, node: Any) -> dict[tuple[int, int], float]:
        """The constant ``c`` broadcast onto ``v``: its value for each (position, feature),
        refused if it differs between batch elements."""
        full = np.broadcast_to(c, np.broadcast_shapes(c.shape, v.shape))
        if full.shape != v.shape:
            raise InputError(f"{node_label(node)}: a constant broadcasts the per-token value "
                             f"to another shape")
        out: dict[tuple[int, int], float] = {}
        for s, f, x in zip(v.idx["s"].ravel(), v.idx["f"].ravel(), full.ravel()):
            key = (int(s), int(f))
            if out.setdefault(key, float(x)) != float(x):
                raise InputError(f"{node_label(node)}: the constant differs between batch "
                                 f"elements")
        return out

    def _per_feature(self, table: dict[tuple[int, int], float], node: Any,
                     allow_positions: bool) -> tuple[dict[int, float], dict[tuple[int, int],
                                                                            float]]:
        by_f: dict[int, set[float]] = {}
        for (_, f), x in table.items():
            by_f.setdefault(f, set()).add(x)
        if all(len(xs) == 1 for xs in by_f.values()):
            return {f: next(iter(xs)) for f, xs in by_f.items()}, {}
        if not allow_positions:
            raise InputError(f"{node_label(node)}: a constant that depends on the position is "
                             f"only read as the embedding's position term")
        return {}, table

    def affine_const(self, node: Any, v: Value, c: np.ndarray, how: str) -> Value:
        """``v + c``, ``v − c``, ``c − v``, ``v·c`` or ``v/c`` with a constant ``c``."""
        assert v.expr is not None
        if not np.all(np.isfinite(c)):
            raise InputError(f"{node_label(node)}: a non-finite constant")
        table = self._table(v, np.asarray(c, dtype=np.float64), node)
        e = v.expr
        if how in ("add", "sub", "rsub"):
            if how == "rsub":
                e = e.scaled({f: fmpq(-1) for f in range(e.width)})
            sign = -1 if how == "sub" else 1
            per_f, per_pf = self._per_feature(table, node, e.base == 0 and not e.layers)
            if per_pf:
                self.positions_used = True
                V = self.vocabulary
                e = e.with_columns({(f, V + s): sign * exact_scalar(x)
                                    for (s, f), x in per_pf.items() if x != 0})
            else:
                e = e.shifted({f: sign * exact_scalar(x) for f, x in per_f.items()})
        else:
            per_f, _ = self._per_feature(table, node, False)
            if how == "div" and any(x == 0 for x in per_f.values()):
                raise InputError(f"{node_label(node)}: division by zero")
            e = e.scaled({f: (exact_scalar(x) if how == "mul" else 1 / exact_scalar(x))
                          for f, x in per_f.items()})
        return Value("vector", v.idx, e)

    def op_MatMul(self, node: Any, ins: list[Any]) -> Any:
        a, w = ins
        if isinstance(a, Value) and isinstance(w, np.ndarray):
            return self.linear(node, a, w, None)
        if isinstance(a, Value) and isinstance(w, Value):
            if a.form == "vector" and w.form == "vector":
                return self.scores(node, a, w)
            if a.form == "probs" and w.form == "vector":
                return self.weighted(node, a, w)
        raise InputError(f"{node_label(node)}: a product that is neither a linear map of a "
                         f"per-token value, queries times keys, nor probabilities times values")

    def op_Gemm(self, node: Any, ins: list[Any]) -> Any:
        a, w = ins[0], ins[1]
        c = ins[2] if len(ins) > 2 else None
        at = attributes(node)
        if not isinstance(a, Value) or not isinstance(w, np.ndarray) or at.get("transA", 0) \
                or (c is not None and not isinstance(c, np.ndarray)):
            raise InputError(f"{node_label(node)}: a Gemm reads a per-token value and constants")
        W = w.T if at.get("transB", 0) else w
        alpha, beta = at.get("alpha", 1.0), at.get("beta", 1.0)
        out = self.linear(node, a, W, None)
        if alpha != 1.0:
            out = self.affine_const(node, out, np.asarray(alpha), "mul")
        if c is not None:
            out = self.affine_const(node, out, np.asarray(c) * beta, "add")
        return out

    def linear(self, node: Any, v: Value, W: np.ndarray, bias: Any) -> Value:
        if v.form != "vector" or W.ndim != 2:
            raise InputError(f"{node_label(node)}: a linear map reads a per-token vector")
        assert v.expr is not None
        v = self.close_attention(v)
        p = self.row(v, node)
        if len(p) != W.shape[0]:
            raise InputError(f"{node_label(node)}: a {W.shape[0]}×{W.shape[1]} matrix reads "
                             f"{len(p)} features")
        Wt = from_numpy_exact(np.asarray(W, dtype=np.float64).T, node.name or "weight")
        assert v.expr is not None
        e = v.expr.then(Wt, p)
        m = W.shape[1]
        shape = v.shape[:-1] + (m,)
        idx = {"b": np.broadcast_to(v.idx["b"][..., :1], shape).copy(),
               "s": np.broadcast_to(v.idx["s"][..., :1], shape).copy(),
               "f": np.broadcast_to(np.arange(m), shape).copy()}
        return Value("vector", idx, e)

    def _binary(self, node: Any, ins: list[Any], how: str, rhow: str) -> Any:
        a, c = ins
        if isinstance(a, Value) and isinstance(c, np.ndarray):
            return self.on_const(node, a, c, how)
        if isinstance(c, Value) and isinstance(a, np.ndarray):
            return self.on_const(node, c, a, rhow)
        return None

    def on_const(self, node: Any, v: Value, c: np.ndarray, how: str) -> Any:
        if v.form == "vector":
            if how in ("mul", "add") and self._ln_absorb(node, v, c, how):
                return self.vals[node.output[0]]
            return self.affine_const(node, v, c, how)
        if v.form == "scores":
            return self.scores_const(node, v, c, how)
        return self.ln_const(node, v, c, how)

    def op_Add(self, node: Any, ins: list[Any]) -> Any:
        out = self._binary(node, ins, "add", "add")
        if out is not None:
            return out
        a, c = ins
        if a.form == "vector" and c.form == "vector":
            return self.residual(node, a, c)
        raise InputError(f"{node_label(node)}: an addition of two values that are not "
                         f"per-token vectors")

    def op_Sub(self, node: Any, ins: list[Any]) -> Any:
        out = self._binary(node, ins, "sub", "rsub")
        if out is not None:
            return out
        return self.ln_sub(node, *ins)

    def op_Mul(self, node: Any, ins: list[Any]) -> Any:
        out = self._binary(node, ins, "mul", "mul")
        if out is not None:
            return out
        return self.ln_mul(node, *ins)

    def op_Div(self, node: Any, ins: list[Any]) -> Any:
        a, c = ins
        if isinstance(a, Value) and isinstance(c, np.ndarray):
            return self.on_const(node, a, c, "div")
        return self.ln_div(node, a, c)

    def op_Neg(self, node: Any, ins: list[Any]) -> Any:
        return self.on_const(node, ins[0], np.asarray(-1.0), "mul")

    def op_Relu(self, node: Any, ins: list[Any]) -> Any:
        v = ins[0]
        if v.form != "vector":
            raise InputError(f"{node_label(node)}: a ReLU of a value that is not per-token")
        v = self.close_attention(v)
        p = self.row(v, node)
        e = v.expr.relu(p)
        return self.node_like(v, e, len(p))

    def node_like(self, v: Value, e: Expr, width: int) -> Value:
        shape = v.shape[:-1] + (width,)
        return Value("vector", {"b": np.broadcast_to(v.idx["b"][..., :1], shape).copy(),
                                "s": np.broadcast_to(v.idx["s"][..., :1], shape).copy(),
                                "f": np.broadcast_to(np.arange(width), shape).copy()}, e)

    def residual(self, node: Any, a: Value, c: Value) -> Value:
        a = self.materialize(self.close_attention(a), node, node.input[0])
        c = self.materialize(self.close_attention(c), node, node.input[1])
        if a.shape != c.shape or not all((a.idx[n] == c.idx[n]).all() for n in "bsf"):
            raise InputError(f"{node_label(node)} adds per-token values of different layouts")
        assert a.expr is not None and c.expr is not None
        k = self.new_node(Node("add", (a.expr.base, c.expr.base)), node.output[0])
        return self.node_value(k, a.expr.width, a.idx["b"][..., 0], a.idx["s"][..., 0])

    # ---------------------------------------------------------------- names

    def finish(self, output: int, token_input: str, output_name: str) -> Transformer:
        if not self.vocabulary:
            raise InputError("no embedding of the token ids (a Gather of a matrix by the token "
                             "input) was found")
        positions = self.T if self.positions_used else 0
        if not positions:
            self._drop_position_columns()
        names = self._names(output)
        nodes = []
        for node in self.nodes:
            if node.slot:
                node = Node("slot", node.reads, slot=names[node.slot])
            elif node.heads:
                node = Node("attention", node.reads, heads=tuple(
                    Head(names[h.q], names[h.k], names[h.v]) for h in node.heads),
                    scale=node.scale, mask=node.mask)
            nodes.append(node)
        slots = {names[n]: Slot(names[n], s.layers, _role(names[n]), s.source)
                 for n, s in self.slots.items()}
        source = {"format": "onnx", "input": {"name": token_input},
                  "output": {"name": output_name},
                  "nodes": {str(k): t for k, t in sorted(self.tensor_of.items())}}
        return Transformer(self.vocabulary, positions, nodes, output, slots, source)

    def _drop_position_columns(self) -> None:
        V = self.vocabulary
        for name, s in list(self.slots.items()):
            if name in self._reads_input():
                first = s.layers[0]
                W = first.weight
                keep = W.__class__([[W[r, t] for t in range(V)] for r in range(W.nrows())])
                self.slots[name] = Slot(name, (TargetLayer(keep, first.bias, first.activation),)
                                        + s.layers[1:], source=s.source)

    def _reads_input(self) -> set[str]:
        out = {n.slot for n in self.nodes if n.slot and n.reads == (0,)}
        for n in self.nodes:
            if n.heads and n.reads == (0,):
                out |= {x for h in n.heads for x in (h.q, h.k, h.v)}
        return {x for x in out if x}

    def _names(self, output: int) -> dict[str, str]:
        names: dict[str, str] = {}
        block = -1
        taken: set[str] = set()

        def claim(name: str) -> str:
            base, k = name, 1
            while name in taken:
                name, k = f"{base}.{k}", k + 1
            taken.add(name)
            return name

        for k, node in enumerate(self.nodes):
            prefix = f"block{block}." if block >= 0 else ""
            if node.heads:
                block += 1
                for h, head in enumerate(node.heads):
                    for role, n in zip("qkv", (head.q, head.k, head.v)):
                        names[n] = claim(f"block{block}.head{h}.{role}")
            elif node.slot:
                s = self.slots[node.slot]
                read = self.nodes[node.reads[0]]
                if k == output:
                    name = "unembed"
                elif node.reads == (0,):
                    name = "embed"
                elif read.op == "attention":
                    name = f"{prefix}o"
                elif len(s.layers) > 1:
                    name = f"{prefix}mlp"
                else:
                    name = f"{prefix}linear"
                names[node.slot] = claim(name)
        return names


def _role(name: str) -> str:
    last = name.split(".")[-1] if not name[-1].isdigit() or "." not in name else \
        name.split(".")[-2]
    return last if last in ("embed", "q", "k", "v", "o", "mlp", "unembed") else "linear"


def transformer_from_onnx(model: Any) -> Transformer:
    """The transformer of an ONNX model (a path or a ``ModelProto``), or an
    :class:`InputError` naming the first node that does not fit (module doc)."""
    proto = load_model(model)
    reader = _Reader(proto)
    return reader.run()
