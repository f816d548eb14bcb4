"""Seeded small transformers written directly as ONNX graphs with ``onnx.helper`` (no PyTorch):
the structural variants the transformer reader must recognise, for the tests and the proof table
T12.

Contract. :func:`onnx_transformer` returns an ``onnx.ModelProto`` reading ``tokens`` (int64,
``[1, T]``) and writing ``logits`` (``[1, T, V]``): token and learned position embeddings, then
``blocks`` blocks of multi-head causal attention and a two-layer MLP with residual adds, pre-LN,
post-LN or without LayerNorm, the LayerNorm fused (``LayerNormalization``) or decomposed
(``ReduceMean``, ``Sub``, ``Pow``, ``Add`` ε, ``Sqrt``, ``Div``, ``Mul`` g, ``Add`` b), the
queries, keys and values as three ``MatMul`` or one fused ``MatMul`` and a ``Split``, the mask as
``Where`` or an added constant, the scale as a ``Div``, the MLP's activation any ONNX operator
(``Relu``; another one to test a refusal). Weights are float32 from
``numpy.random.default_rng(seed)``, so the same seed gives the same model on every machine.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from exactnorm.errors import require_extra

__all__ = ["onnx_transformer"]


def onnx_transformer(seed: int = 0, *, vocabulary: int = 7, positions: int = 3,
                     d_model: int = 8, heads: int = 2, d_mlp: int = 16, blocks: int = 1,
                     norm: str = "pre", layernorm: str = "fused", qkv: str = "separate",
                     mask: str = "where", activation: str = "Relu", opset: int = 18,
                     scale_weights: float = 0.5) -> Any:
    """A seeded transformer as an ONNX model (module doc)."""
    onnx = require_extra("onnx", "writing an ONNX transformer")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    nodes: list[Any] = []
    inits: list[Any] = []
    count = [0]

    def name(stem: str) -> str:
        count[0] += 1
        return f"{stem}_{count[0]}"

    def const(a: Any, stem: str) -> str:
        n = name(stem)
        inits.append(numpy_helper.from_array(np.asarray(a), n))
        return n

    def weight(*shape: int) -> str:
        return const((scale_weights * rng.standard_normal(shape)).astype(np.float32), "w")

    def node(op: str, ins: list[str], **attrs: Any) -> str:
        out = name(op.lower())
        nodes.append(helper.make_node(op, ins, [out], name=out, **attrs))
        return out

    def linear(x: str, n_in: int, n_out: int) -> str:
        return node("Add", [node("MatMul", [x, weight(n_in, n_out)]), weight(n_out)])

    def layer_norm(x: str) -> str:
        g = const((1 + 0.1 * rng.standard_normal(d_model)).astype(np.float32), "g")
        b = const((0.1 * rng.standard_normal(d_model)).astype(np.float32), "b")
        if layernorm == "fused":
            return node("LayerNormalization", [x, g, b], axis=-1, epsilon=1e-5)
        axes = const(np.array([-1], dtype=np.int64), "axes")
        mean = node("ReduceMean", [x, axes], keepdims=1)
        centred = node("Sub", [x, mean])
        square = node("Pow", [centred, const(np.float32(2.0), "two")])
        var = node("ReduceMean", [square, axes], keepdims=1)
        std = node("Sqrt", [node("Add", [var, const(np.float32(1e-5), "eps")])])
        return node("Add", [node("Mul", [node("Div", [centred, std]), g]), b])

    dh = d_model // heads
    T = positions
    causal = np.triu(np.ones((T, T), dtype=bool), k=1)

    def attention(x: str) -> str:
        if qkv == "fused":
            fused = linear(x, d_model, 3 * d_model)
            q, k, v = (name("split") for _ in range(3))
            nodes.append(helper.make_node("Split", [fused, const(np.array([d_model] * 3,
                                                                          dtype=np.int64),
                                                                 "sizes")],
                                          [q, k, v], name=name("Split"), axis=-1))
        else:
            q, k, v = (linear(x, d_model, d_model) for _ in range(3))
        shape = const(np.array([1, T, heads, dh], dtype=np.int64), "shape")
        qh, kh, vh = (node("Transpose", [node("Reshape", [t, shape])], perm=[0, 2, 1, 3])
                      for t in (q, k, v))
        scores = node("MatMul", [qh, node("Transpose", [kh], perm=[0, 1, 3, 2])])
        scores = node("Div", [scores, const(np.float32(np.sqrt(dh)), "sqrt_dh")])
        if mask == "where":
            scores = node("Where", [const(causal, "mask"), const(np.float32(-np.inf), "ninf"),
                                    scores])
        elif mask == "add":
            scores = node("Add", [scores, const(np.where(causal, -np.inf, 0).astype(
                np.float32), "mask")])
        probs = node("Softmax", [scores], axis=-1)
        out = node("Transpose", [node("MatMul", [probs, vh])], perm=[0, 2, 1, 3])
        out = node("Reshape", [out, const(np.array([1, T, d_model], dtype=np.int64), "shape")])
        return linear(out, d_model, d_model)

    def mlp(x: str) -> str:
        return linear(node(activation, [linear(x, d_model, d_mlp)]), d_mlp, d_model)

    x = node("Gather", [weight(vocabulary, d_model), "tokens"])
    x = node("Add", [x, weight(T, d_model)])
    for _ in range(blocks):
        if norm == "pre":
            x = node("Add", [x, attention(layer_norm(x))])
            x = node("Add", [x, mlp(layer_norm(x))])
        elif norm == "post":
            x = layer_norm(node("Add", [x, attention(x)]))
            x = layer_norm(node("Add", [x, mlp(x)]))
        else:
            x = node("Add", [x, attention(x)])
            x = node("Add", [x, mlp(x)])
    if norm == "pre":
        x = layer_norm(x)
    linear(x, d_model, vocabulary)
    nodes[-1].output[0] = "logits"  # the unembedding's bias add writes the graph output
    graph = helper.make_graph(
        nodes, "transformer",
        [helper.make_tensor_value_info("tokens", TensorProto.INT64, [1, T])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, T, vocabulary])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model
