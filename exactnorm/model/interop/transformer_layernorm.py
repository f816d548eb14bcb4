"""The LayerNorm operators of the transformer reader (:mod:`.transformer`): the fused
``LayerNormalization`` and its decomposed form (``ReduceMean``, ``Sub``, ``Pow`` or ``Mul``,
``Add`` ε, ``Sqrt``, ``Div`` or ``Reciprocal`` and ``Mul``, then ``Mul`` g and ``Add`` b).

Contract. A mixin of the reader: each handler takes the node and its input values and returns
the output value, or raises an :class:`~exactnorm.errors.InputError` naming the node. The parts
of a decomposed LayerNorm are values of their own forms (``mean``, ``centered``, ``square``,
``variance``, ``std``, ``invstd``), each remembering the node it normalizes, so only the exact
sequence of a LayerNorm of one token's features becomes a LayerNorm node; the gain and bias
that follow a fresh LayerNorm join it (``LN(x)·g`` is the LayerNorm with gain ``g``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from exactnorm.errors import InputError
from exactnorm.model.interop.transformer_values import Value, exact_scalar
from exactnorm.model.onnx_common import attributes, node_label
from exactnorm.model.transformer import LayerNorm, Node, layernorm_radius

__all__ = ["LayerNormOps"]


class LayerNormOps:
    """The LayerNorm handlers of the reader (mixed into it: they use its ``materialize``,
    ``close_attention``, ``new_node``, ``node_value``, ``nodes``, ``vals``, ``uses``)."""

    nodes: list[Node]
    vals: dict[str, Any]
    uses: dict[str, int]
    tensor_of: dict[int, str]
    materialize: Any
    close_attention: Any
    new_node: Any
    node_value: Any


    def op_LayerNormalization(self, node: Any, ins: list[Any]) -> Any:
        x, g = ins[0], ins[1]
        b = ins[2] if len(ins) > 2 else None
        at = attributes(node)
        if not isinstance(x, Value) or x.form != "vector" or not isinstance(g, np.ndarray) \
                or (b is not None and not isinstance(b, np.ndarray)):
            raise InputError(f"{node_label(node)}: a LayerNorm of a per-token vector with "
                             f"constant gain and bias")
        if int(at.get("axis", -1)) % len(x.shape) != len(x.shape) - 1:
            raise InputError(f"{node_label(node)}: a LayerNorm over another axis than the "
                             f"features")
        if any(o for o in node.output[1:] if self.uses.get(o)):
            raise InputError(f"{node_label(node)}: its mean or inverse deviation is used")
        x = self.materialize(self.close_attention(x), node, node.input[0])
        assert x.expr is not None
        d = x.expr.width
        gain = np.broadcast_to(np.asarray(g, dtype=np.float64), (d,))
        bias = np.broadcast_to(np.asarray(b if b is not None else 0.0, dtype=np.float64), (d,))
        return self.layernorm(node, x, gain, bias, float(at.get("epsilon", 1e-5)))

    def layernorm(self, node: Any, x: Value, gain: np.ndarray, bias: np.ndarray,
                  eps: float) -> Value:
        assert x.expr is not None
        d = x.expr.width
        if not (np.all(np.isfinite(gain)) and np.all(np.isfinite(bias))) or eps < 0:
            raise InputError(f"{node_label(node)}: a LayerNorm with a non-finite gain or bias "
                             f"or a negative epsilon")
        ln = LayerNorm(tuple(exact_scalar(t) for t in gain), tuple(exact_scalar(t) for t in bias),
                       exact_scalar(eps), layernorm_radius(d))
        k = self.new_node(Node("layernorm", (x.expr.base,), layernorm=ln), node.output[0])
        return self.node_value(k, d, x.idx["b"][..., 0], x.idx["s"][..., 0])

    def _ln_absorb(self, node: Any, v: Value, c: np.ndarray, how: str) -> bool:
        """``LN(x)·g`` or ``LN(x) + b`` right after a LayerNorm that nothing else reads yet:
        the gain or bias joins the LayerNorm (the decomposed form's affine part)."""
        e = v.expr
        assert e is not None
        k = e.base
        data = node.input[0] if isinstance(self.vals.get(node.input[0]), Value) \
            else node.input[1]
        if self.nodes[k].op != "layernorm" or k != len(self.nodes) - 1 \
                or self.uses.get(data, 0) != 1 or v.info.get("build") is not None:
            return False
        f = v.idx["f"]
        if f.shape[-1] != e.width or not (f == np.arange(e.width)).all() \
                or not e.is_base(list(range(e.width))):
            return False
        ln = self.nodes[k].layernorm
        assert ln is not None
        d = len(ln.gain)
        try:
            vec = np.broadcast_to(np.asarray(c, dtype=np.float64), (d,)) if c.size in (1, d) \
                and c.shape[-1:] in ((1,), (d,), ()) and c.size in (1, d) else None
        except ValueError:
            vec = None
        if vec is None or not np.all(np.isfinite(vec)):
            return False
        x = [exact_scalar(t) for t in vec]
        if how == "mul":
            new = LayerNorm(tuple(g * s for g, s in zip(ln.gain, x)),
                            tuple(b * s for b, s in zip(ln.bias, x)), ln.epsilon, ln.r)
        else:
            new = LayerNorm(ln.gain, tuple(b + s for b, s in zip(ln.bias, x)), ln.epsilon, ln.r)
        self.nodes[k] = Node("layernorm", self.nodes[k].reads, layernorm=new)
        self.tensor_of[k] = node.output[0]
        self.vals[node.output[0]] = v
        return True

    def op_ReduceMean(self, node: Any, ins: list[Any]) -> Any:
        x = ins[0]
        at = attributes(node)
        axes = at.get("axes")
        if axes is None and len(ins) > 1 and isinstance(ins[1], np.ndarray):
            axes = [int(a) for a in ins[1].reshape(-1)]
        if not isinstance(x, Value) or axes is None or len(axes) != 1 \
                or axes[0] % len(x.shape) != len(x.shape) - 1 or not at.get("keepdims", 1):
            raise InputError(f"{node_label(node)}: a mean over the features of a token (the "
                             f"decomposed LayerNorm) is the only reduction read")
        if x.form == "vector":
            x = self.materialize(self.close_attention(x), node, node.input[0])
            assert x.expr is not None
            return Value("mean", {n: x.idx[n][..., :1] for n in "bs"},
                         info={"node": x.expr.base, "value": x})
        if x.form == "square":
            return Value("variance", {n: x.idx[n][..., :1] for n in "bs"}, info=dict(x.info))
        raise InputError(f"{node_label(node)}: a mean of a {x.form} value")

    def ln_sub(self, node: Any, x: Any, m: Any) -> Value:
        if isinstance(x, Value) and isinstance(m, Value) and x.form == "vector" \
                and m.form == "mean":
            x = self.materialize(self.close_attention(x), node, node.input[0])
            assert x.expr is not None
            if x.expr.base == m.info["node"]:
                return Value("centered", x.idx, info={"node": x.expr.base, "value": x})
        raise InputError(f"{node_label(node)}: a difference of two per-token values that is not "
                         f"a token minus its mean (the decomposed LayerNorm)")

    def ln_mul(self, node: Any, a: Any, c: Any) -> Value:
        if isinstance(a, Value) and isinstance(c, Value):
            forms = {a.form, c.form}
            if forms == {"centered"} and a.info["node"] == c.info["node"]:
                return Value("square", a.idx, info=dict(a.info))
            if forms == {"centered", "invstd"}:
                cen, inv = (a, c) if a.form == "centered" else (c, a)
                if cen.info["node"] == inv.info["node"]:
                    return self.layernorm(node, cen.info["value"], *self._unit(cen),
                                          inv.info["eps"])
        raise InputError(f"{node_label(node)}: a product of two per-token values (not an "
                         f"affine map; a gated or SiLU MLP is not piecewise linear: exact "
                         f"reproduction by a ReLU network is impossible)")

    def _unit(self, cen: Value) -> tuple[np.ndarray, np.ndarray]:
        d = cen.info["value"].expr.width
        return np.ones(d), np.zeros(d)

    def ln_div(self, node: Any, a: Any, c: Any) -> Value:
        if isinstance(a, Value) and isinstance(c, Value) and a.form == "centered" \
                and c.form == "std" and a.info["node"] == c.info["node"]:
            return self.layernorm(node, a.info["value"], *self._unit(a), c.info["eps"])
        raise InputError(f"{node_label(node)}: a division by a per-token value that is not a "
                         f"token's deviation (the decomposed LayerNorm)")

    def ln_const(self, node: Any, v: Value, c: np.ndarray, how: str) -> Value:
        scalar = np.asarray(c, dtype=np.float64).reshape(-1)
        if scalar.size == 1 and v.form == "centered" and node.op_type == "Pow" \
                and scalar[0] == 2:
            return Value("square", v.idx, info=dict(v.info))
        if scalar.size == 1 and v.form == "variance" and how == "add" and scalar[0] >= 0:
            return Value("variance", v.idx, info=dict(v.info, eps=float(scalar[0]) + float(
                v.info.get("eps", 0.0)) if v.info.get("eps") else float(scalar[0])))
        raise InputError(f"{node_label(node)}: {how} of a constant and a part of a LayerNorm "
                         f"that is not its epsilon")

    def op_Pow(self, node: Any, ins: list[Any]) -> Any:
        v, c = ins
        if isinstance(v, Value) and v.form == "centered" and isinstance(c, np.ndarray):
            return self.ln_const(node, v, c, "pow")
        if isinstance(v, Value) and v.form == "vector":
            raise InputError(f"{node_label(node)}: a power of a per-token value that is not "
                             f"centred (an RMSNorm or a nonlinearity is not read; exactnorm "
                             f"reads LayerNorm)")
        raise InputError(f"{node_label(node)}: a power that is not the square of a centred "
                         f"token")

    def op_Sqrt(self, node: Any, ins: list[Any]) -> Any:
        v = ins[0]
        if isinstance(v, Value) and v.form == "variance":
            return Value("std", v.idx, info=dict(v.info, eps=v.info.get("eps", 0.0)))
        raise InputError(f"{node_label(node)}: a square root of a value that is not a token's "
                         f"variance (plus epsilon)")

    def op_Reciprocal(self, node: Any, ins: list[Any]) -> Any:
        v = ins[0]
        if isinstance(v, Value) and v.form == "std":
            return Value("invstd", v.idx, info=dict(v.info))
        raise InputError(f"{node_label(node)}: a reciprocal of a value that is not a token's "
                         f"deviation")
