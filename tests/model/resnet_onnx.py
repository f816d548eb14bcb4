"""Small residual ONNX models written with the ``onnx`` helper API from their definition (no
torch): torchvision-style BasicBlocks on a 1×side×side image, as PyTorch's exporters lay them
out (tests/model/test_interop_residual.py, tests/outputs/test_export_residual.py).

``small_resnet_onnx`` writes: a stem (Conv, BatchNormalization, Relu); a block with an identity
shortcut; a stride-2 block whose shortcut is a projection (1×1 Conv with stride 2 and its
BatchNormalization) or option A (``Slice`` every second pixel, ``Pad`` with zero channels); a
global average pooling (``GlobalAveragePool`` + ``Flatten``, or the dynamo form ``ReduceMean`` +
``Reshape``) and a ``Gemm``. ``shortcut_first`` lists the shortcut's nodes before the block's
main branch (either order is a valid topological order); ``bn=False`` writes biases only (the
dynamo exporter folds BatchNorm itself); ``den`` rounds every weight to a multiple of ``1/den``
(small exact numbers, a fast construction).
"""

from __future__ import annotations

from typing import Any

import numpy as np

onnx = __import__("pytest").importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

__all__ = ["small_resnet_onnx", "reference_forward"]


class _Graph:
    def __init__(self, rng: np.random.Generator, den: int | None) -> None:
        self.rng, self.den = rng, den
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self.params: dict[str, np.ndarray] = {}

    def const(self, name: str, a: Any, dtype: Any = np.float32) -> str:
        arr = np.asarray(a, dtype=dtype)
        self.inits.append(numpy_helper.from_array(arr, name))
        self.params[name] = arr
        return name

    def weight(self, name: str, shape: tuple[int, ...]) -> str:
        a = self.rng.normal(size=shape) * 0.6
        if self.den:
            a = np.round(a * self.den) / self.den
        return self.const(name, a)

    def node(self, op: str, inputs: list[str], name: str, **attrs: Any) -> str:
        self.nodes.append(helper.make_node(op, inputs, [f"{name}_out"], name=name, **attrs))
        return f"{name}_out"

    def conv(self, name: str, x: str, cin: int, cout: int, k: int, stride: int,
             bn: bool) -> str:
        inputs = [x, self.weight(f"{name}.weight", (cout, cin, k, k))]
        if not bn:
            inputs.append(self.weight(f"{name}.bias", (cout,)))
        h = self.node("Conv", inputs, name, kernel_shape=[k, k], strides=[stride, stride],
                      pads=[k // 2] * 4)
        if not bn:
            return h
        g = self.const(f"{name}_bn.weight", self.rng.uniform(0.5, 1.5, cout))
        b = self.const(f"{name}_bn.bias", self.rng.normal(size=cout) * 0.3)
        m = self.const(f"{name}_bn.running_mean", self.rng.normal(size=cout) * 0.2)
        v = self.const(f"{name}_bn.running_var", self.rng.uniform(0.5, 2.0, cout))
        return self.node("BatchNormalization", [h, g, b, m, v], f"{name}_bn", epsilon=1e-5)


def small_resnet_onnx(seed: int = 0, *, bn: bool = True, shortcut: str = "proj",
                      shortcut_first: bool = False, dynamo: bool = False,
                      den: int | None = None, side: int = 6,
                      channels: tuple[int, int] = (2, 3)) -> Any:
    """The model of the module doc (an ``onnx.ModelProto``, input ``x`` [1, 1, side, side],
    output ``y`` [1, 2])."""
    c1, c2 = channels
    g = _Graph(np.random.default_rng(seed), den)
    h = g.node("Relu", [g.conv("stem", "x", 1, c1, 3, 1, bn)], "stem_relu")
    a = g.node("Relu", [g.conv("b1c1", h, c1, c1, 3, 1, bn)], "b1_relu1")
    a = g.conv("b1c2", a, c1, c1, 3, 1, bn)
    h = g.node("Relu", [g.node("Add", [a, h], "b1_add")], "b1_relu2")

    def short(x: str) -> str:
        if shortcut == "proj":
            return g.conv("b2sc", x, c1, c2, 1, 2, bn)
        # option A: every second pixel, then zero channels after the block's input channels
        sub = g.node("Slice", [x, g.const("sl_starts", [0, 0], np.int64),
                               g.const("sl_ends", [side, side], np.int64),
                               g.const("sl_axes", [2, 3], np.int64),
                               g.const("sl_steps", [2, 2], np.int64)], "b2_subsample")
        return g.node("Pad", [sub, g.const("pads", [0, 0, 0, 0, 0, c2 - c1, 0, 0], np.int64)],
                      "b2_zero_channels", mode="constant")

    sc = short(h) if shortcut_first else None
    a = g.node("Relu", [g.conv("b2c1", h, c1, c2, 3, 2, bn)], "b2_relu1")
    a = g.conv("b2c2", a, c2, c2, 3, 1, bn)
    if sc is None:
        sc = short(h)
    h = g.node("Relu", [g.node("Add", [a, sc], "b2_add")], "b2_relu2")
    if dynamo:
        p = g.node("ReduceMean", [h], "pool", axes=[-1, -2], keepdims=1)
        flat = g.node("Reshape", [p, g.const("shape", [1, c2], np.int64)], "view")
    else:
        flat = g.node("Flatten", [g.node("GlobalAveragePool", [h], "pool")], "flatten", axis=1)
    g.nodes.append(helper.make_node("Gemm", [flat, g.weight("fc.weight", (2, c2)),
                                             g.weight("fc.bias", (2,))], ["y"], name="fc",
                                    transB=1))
    graph = helper.make_graph(
        g.nodes, "small_resnet",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, side, side])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])], g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def reference_forward(model: Any, X: np.ndarray) -> np.ndarray:
    """The model under onnxruntime, one sample at a time (the input's batch is 1)."""
    import onnxruntime as ort

    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    shape = [int(d.dim_value) for d in model.graph.input[0].type.tensor_type.shape.dim]
    return np.concatenate([session.run(None, {name: x.reshape(shape).astype(np.float32)})[0]
                           for x in X])
