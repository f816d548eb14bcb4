"""The attention operators of the transformer reader (:mod:`.transformer`): queries times
keys, a constant scale, a causal mask (``Where`` or an added constant), ``Softmax``,
probabilities times values, and the settling of an attention's heads into slots.

Contract. A mixin of the reader. Scores and probabilities carry index arrays of the query
position, the key position, the batch element and the head (a pair of query and key feature
lists); every check is element by element on those arrays, so a per-head view written with any
``Reshape``/``Transpose`` order is recognised, and anything that is not one head's queries times
its keys (or probabilities times the values of the same key positions) is refused with the
node's name. A head's three slots are the rows of the query, key and value maps its features
name; they are built when the attention's output is first read by a non-layout operation.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from flint import fmpq

from exactnorm.errors import InputError
from exactnorm.model.interop.transformer_values import Expr, Value, exact_scalar
from exactnorm.model.layers import TargetLayer
from exactnorm.model.onnx_common import attributes, node_label
from exactnorm.model.transformer import Head, Node, Slot

__all__ = ["AttentionOps"]


class AttentionOps:
    """The attention handlers of the reader (mixed into it)."""

    nodes: list[Node]
    slots: dict[str, Slot]
    attentions: dict[int, dict[str, Any]]
    opset: int
    new_node: Any


    def _split_last2(self, v: Value) -> tuple[int, ...]:
        if len(v.shape) < 2:
            raise InputError("attention reads matrices")
        return v.shape[:-2]

    def scores(self, node: Any, q: Value, k: Value) -> Value:
        """``Q Kᵀ``: for every leading index, the rows of ``q`` are positions whose features
        are one head's queries, the columns of ``k`` positions whose features are its keys."""
        lead = np.broadcast_shapes(self._split_last2(q), self._split_last2(k))
        Tq, dq = q.shape[-2:]
        dk, Tk = k.shape[-2:]
        if dq != dk:
            raise InputError(f"{node_label(node)}: queries of {dq} and keys of {dk} features")
        qa = {n: np.broadcast_to(a, lead + (Tq, dq)) for n, a in q.idx.items()}
        ka = {n: np.broadcast_to(a, lead + (dk, Tk)) for n, a in k.idx.items()}
        build: dict[str, Any] = {"heads": [], "scale": fmpq(1), "mask": "none",
                                 "q": q.expr, "k": k.expr, "node": None, "closed": False}
        self.attentions[id(build)] = build
        keys: dict[tuple[tuple[int, ...], tuple[int, ...]], int] = {}
        out = {n: np.zeros(lead + (Tq, Tk), dtype=np.int64) for n in "bqkh"}
        for li in np.ndindex(*lead) if lead else [()]:
            qf, kf = qa["f"][li], ka["f"][li]
            pq, pk = [int(x) for x in qf[0]], [int(x) for x in kf[:, 0]]
            b = qa["b"][li]
            if not (qf == qf[0]).all() or not (kf == kf[:, :1]).all() \
                    or not (qa["s"][li] == qa["s"][li][:, :1]).all() \
                    or not (ka["s"][li] == ka["s"][li][:1, :]).all() \
                    or not (b == b.flat[0]).all() or not (ka["b"][li] == b.flat[0]).all():
                raise InputError(f"{node_label(node)}: not queries times keys of one head of one "
                                 f"sequence (each row one position's query features, each "
                                 f"column one position's key features)")
            h = keys.setdefault((tuple(pq), tuple(pk)), len(keys))
            out["b"][li] = b.flat[0]
            out["q"][li] = qa["s"][li][:, :1]
            out["k"][li] = ka["s"][li][:1, :]
            out["h"][li] = h
        build["pairs"] = list(keys)
        return Value("scores", out, info={"build": id(build)})

    def scores_const(self, node: Any, v: Value, c: np.ndarray, how: str) -> Value:
        build = self.attentions[v.info["build"]]
        c = np.asarray(c, dtype=np.float64)
        if how in ("mul", "div"):
            vals = np.unique(c)
            if vals.size != 1 or not np.isfinite(vals[0]) or vals[0] == 0:
                raise InputError(f"{node_label(node)}: scores scaled by a constant that is not "
                                 f"one nonzero number")
            s = exact_scalar(vals[0])
            s = s if how == "mul" else 1 / s
            mask = build["mask"]
            if mask == "causal" and s <= 0:
                raise InputError(f"{node_label(node)}: a non-positive scale after a −inf mask")
            if isinstance(mask, tuple):  # the mask's value is scaled with the scores
                build["mask"] = (mask[0], mask[1] * s)
            build["scale"] *= s
            return v
        if how == "add":
            full = np.broadcast_to(c, np.broadcast_shapes(c.shape, v.shape))
            return self.mask(node, v, "add", full != 0, full, "an additive mask")
        raise InputError(f"{node_label(node)}: {how} of scores and a constant")

    def mask(self, node: Any, v: Value, how: str, masked: np.ndarray, values: np.ndarray,
             what: str) -> Value:
        """A causal mask: the entries ``masked`` (key after query) get ``values`` added
        (``how = "add"``) or put in their place (``"fill"``); one value, −∞ or finite."""
        build = self.attentions[v.info["build"]]
        if masked.shape != v.shape:
            raise InputError(f"{node_label(node)}: {what} of another shape than the scores")
        if not masked.any():
            return v
        fills = np.unique(values[masked])
        causal = v.idx["k"] > v.idx["q"]
        if fills.size != 1 or np.isnan(fills[0]) or fills[0] == np.inf \
                or not (masked == causal).all():
            raise InputError(f"{node_label(node)}: {what} that is not a causal mask of one "
                             f"value (position p attends to positions ≤ p; a bias on the scores "
                             f"is not read)")
        if build["mask"] != "none":
            raise InputError(f"{node_label(node)}: a second mask on the same scores")
        build["mask"] = "causal" if fills[0] == -np.inf else (how, exact_scalar(fills[0]))
        return v

    def op_Where(self, node: Any, ins: list[Any]) -> Any:
        cond, a, c = ins
        if not isinstance(cond, np.ndarray) or cond.dtype != bool:
            raise InputError(f"{node_label(node)}: a Where whose condition depends on the "
                             f"tokens")
        if isinstance(c, Value) and c.form == "scores" and isinstance(a, np.ndarray):
            fill, v, take_fill = a, c, cond
        elif isinstance(a, Value) and a.form == "scores" and isinstance(c, np.ndarray):
            fill, v, take_fill = c, a, ~cond
        else:
            raise InputError(f"{node_label(node)}: a Where that is not a mask of the scores")
        shape = v.shape
        take = np.broadcast_to(take_fill, shape)
        fills = np.broadcast_to(np.asarray(fill, dtype=np.float64), shape)
        return self.mask(node, v, "fill", take, fills, "a Where mask")

    def op_Softmax(self, node: Any, ins: list[Any]) -> Any:
        v = ins[0]
        if not isinstance(v, Value) or v.form != "scores":
            raise InputError(f"{node_label(node)}: a softmax of a value that is not the scores "
                             f"of an attention")
        axis = int(attributes(node).get("axis", -1 if self.opset >= 13 else 1))
        if axis % len(v.shape) != len(v.shape) - 1:
            raise InputError(f"{node_label(node)}: a softmax over another axis than the keys")
        k, q = v.idx["k"], v.idx["q"]
        if not (q == q[..., :1]).all() or not (v.idx["h"] == v.idx["h"][..., :1]).all() \
                or sorted(k.reshape(-1, k.shape[-1])[0]) != list(range(k.shape[-1])) \
                or not (k == k.reshape(-1, k.shape[-1])[0]).all():
            raise InputError(f"{node_label(node)}: a softmax whose last axis is not every key "
                             f"position of one query and head")
        return Value("probs", v.idx, info=dict(v.info))

    def weighted(self, node: Any, p: Value, v: Value) -> Value:
        """``softmax(…) V``: the rows of ``v`` are the key positions, its features one head's
        values; the result's features are the attention node's (its heads, head-major)."""
        build = self.attentions[p.info["build"]]
        if build["closed"]:
            raise InputError(f"{node_label(node)}: a head added to an attention that is "
                             f"already read")
        lead = np.broadcast_shapes(self._split_last2(p), self._split_last2(v))
        Tq, Tk = p.shape[-2:]
        Tv, dv = v.shape[-2:]
        if Tv != Tk:
            raise InputError(f"{node_label(node)}: probabilities over {Tk} keys and {Tv} values")
        pa = {n: np.broadcast_to(a, lead + (Tq, Tk)) for n, a in p.idx.items()}
        va = {n: np.broadcast_to(a, lead + (Tv, dv)) for n, a in v.idx.items()}
        out_b = np.zeros(lead + (Tq, dv), dtype=np.int64)
        out_s = np.zeros_like(out_b)
        out_f = np.zeros_like(out_b)
        assert v.expr is not None
        bases = {build["q"].base, build["k"].base, v.expr.base}
        if len(bases) != 1 or build["q"].layers or build["k"].layers or v.expr.layers:
            raise InputError(f"{node_label(node)}: queries, keys and values of one attention "
                             f"read one node (a LayerNorm or the residual stream)")
        for li in np.ndindex(*lead) if lead else [()]:
            vf = va["f"][li]
            pv = [int(x) for x in vf[0]]
            if not (vf == vf[0]).all() or not (va["s"][li][:, 0] == pa["k"][li][0]).all() \
                    or not (va["s"][li] == va["s"][li][:, :1]).all() \
                    or not (va["b"][li] == pa["b"][li].flat[0]).all():
                raise InputError(f"{node_label(node)}: not probabilities times the values of "
                                 f"the same key positions of one head")
            h = int(pa["h"][li].flat[0])
            key = (h, tuple(pv))
            heads = build["heads"]
            if key not in [x[0] for x in heads]:
                offset = sum(len(x[0][1]) for x in heads)
                heads.append((key, offset, id(v.expr), v.expr))
            entry = next(x for x in heads if x[0] == key)
            if entry[2] != id(v.expr):
                raise InputError(f"{node_label(node)}: one head with values of two maps")
            out_b[li] = pa["b"][li][:, :1]
            out_s[li] = pa["q"][li][:, :1]
            out_f[li] = entry[1] + np.arange(dv)
        if build["node"] is None:
            build["node"] = self.new_node(Node("attention"), node.output[0])
        width = sum(len(x[0][1]) for x in build["heads"])
        return Value("vector", {"b": out_b, "s": out_s, "f": out_f},
                     Expr(build["node"], width), info={"build": id(build)})

    def close_attention(self, v: Value) -> Value:
        """A vector read by a non-layout operation: if it is an attention's output, its heads
        are settled now (their slots built) and the attention node written."""
        build_id = v.info.get("build")
        if build_id is None:
            return v
        build = self.attentions[build_id]
        assert v.expr is not None
        if build["closed"]:
            return Value("vector", v.idx, Expr(build["node"], v.expr.width))
        build["closed"] = True
        width = sum(len(x[0][1]) for x in build["heads"])
        heads = []
        for (h, pv), _, _, vexpr in build["heads"]:
            pq, pk = build["pairs"][h]
            names = []
            for e, p in ((build["q"], list(pq)), (build["k"], list(pk)), (vexpr, list(pv))):
                A, c = e.rows(p)
                name = f"slot{len(self.slots)}"
                self.slots[name] = Slot(name, (TargetLayer(A, c, "identity"),),
                                        source={"rows": p})
                names.append(name)
            heads.append(Head(*names))
        reads = (build["q"].base,)
        self.nodes[build["node"]] = Node("attention", reads, heads=tuple(heads),
                                         scale=build["scale"], mask=build["mask"])
        return Value("vector", v.idx, Expr(build["node"], width))
