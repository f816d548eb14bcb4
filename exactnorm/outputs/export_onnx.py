"""The certificate's network as an ONNX model (float64 by default; not certified), and the
measured error of such a model under onnxruntime against the exact target. Part of
:mod:`exactnorm.outputs.export`, which re-exports both functions.
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

from exactnorm.certificate import read_target
from exactnorm.errors import InputError, require_extra
from exactnorm.outputs.batchnorm import (
    DEFAULT_EPS,
    FLOAT_DTYPES,
    FLOAT_WARNING,
    ONNX_OPSET,
    float_layers,
    floats,
)
from exactnorm.outputs.floatnet import box_points
from exactnorm.outputs.stages import ProgressHook

__all__ = ["onnx_model", "verify_onnx", "source_interface"]


def onnx_model(cert_doc: dict[str, Any], *, dtype: str = "float64",
               normalization: str = "batchnorm", mean: Any = 0, scale: Any = 1,
               eps: float = DEFAULT_EPS, progress: ProgressHook | None = None) -> Any:
    """The certificate's network as an ``onnx.ModelProto`` (float; not certified).

    Parameters
    ----------
    cert_doc
        A certificate document (read it with :func:`exactnorm.certificate.load_certificate`).
    dtype
        ``"float64"`` (the default) or ``"float32"`` for every tensor. float32 can change
        predictions: constructions cancel large shifts β (measure with :func:`verify_onnx`).
    normalization
        ``"batchnorm"`` (``BatchNormalization`` with the frozen statistics ``μ``, ``s² − eps``)
        or ``"muladd"`` (``Mul(Γ)``, ``Add(β)``: the tuned parameters themselves).
    mean, scale, eps
        Frozen statistics of the BatchNorm form (module docstring).
    progress
        ``progress(done, total)`` over the frozen layers read.

    Returns
    -------
    onnx.ModelProto
        Checked with ``onnx.checker``; input ``x`` ``(N, d_0)`` and output ``y``, or the names and
        input shape of the model the target was read from (:func:`source_interface`).

    Raises
    ------
    InputError
        Unknown ``dtype``/``normalization``, ``s² ≤ eps``.
    MissingExtraError
        Without the ``onnx`` package.
    """
    onnx = require_extra("onnx", "the ONNX export")
    from onnx import TensorProto, helper, numpy_helper

    if dtype not in FLOAT_DTYPES:
        raise InputError(f"dtype must be one of {tuple(FLOAT_DTYPES)}, got {dtype!r}")
    if normalization not in ("batchnorm", "muladd"):
        raise InputError(f"normalization must be 'batchnorm' or 'muladd', got {normalization!r}")
    np_dtype = FLOAT_DTYPES[dtype]
    elem = TensorProto.FLOAT if dtype == "float32" else TensorProto.DOUBLE
    net, layers = float_layers(cert_doc, mean, scale, eps, progress=progress)
    inits: list[Any] = []
    nodes: list[Any] = []

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(value, dtype=np_dtype), name))
        return name

    x_name, x_shape, y_name = source_interface(cert_doc, net.input_dim)
    names = ["x"]
    if x_shape is not None:  # the source model took an image: flatten it as it did
        nodes.append(helper.make_node(
            "Reshape", [x_name, _int64(inits, "x_flat_shape", [-1, net.input_dim])], ["x"],
            name="input_flatten"))
    elif x_name != "x":
        nodes.append(helper.make_node("Identity", [x_name], ["x"], name="input"))
    for j, (layer, p) in enumerate(zip(net.layers, layers), 1):
        v = f"v{j}"
        nodes.append(helper.make_node("MatMul", [names[layer.input], const(f"V{j}_T", p["V"].T)],
                                      [v], name=f"layer{j}_linear"))
        u = f"u{j}"
        if normalization == "batchnorm":
            nodes.append(helper.make_node(
                "BatchNormalization",
                [v, const(f"bn{j}_scale", p["gamma_hat"]), const(f"bn{j}_bias", p["beta_hat"]),
                 const(f"bn{j}_mean", p["mean"]), const(f"bn{j}_var", p["var"])],
                [u], name=f"layer{j}_norm", epsilon=float(eps)))
        else:
            nodes.append(helper.make_node("Mul", [v, const(f"gamma{j}", p["gamma"])],
                                          [f"g{j}"], name=f"layer{j}_scale"))
            nodes.append(helper.make_node("Add", [f"g{j}", const(f"beta{j}", p["beta"])], [u],
                                          name=f"layer{j}_shift"))
        h = u
        if layer.activation == "relu":
            h = f"a{j}"
            nodes.append(helper.make_node("Relu", [u], [h], name=f"layer{j}_relu"))
        for source, P in p["skips"]:
            sk = f"s{j}_{source}"
            nodes.append(helper.make_node("MatMul", [names[source],
                                                     const(f"P{j}_{source}_T", P.T)], [sk],
                                          name=f"layer{j}_skip{source}"))
            nodes.append(helper.make_node("Add", [h, sk], [f"h{j}_{source}"],
                                          name=f"layer{j}_skip{source}_add"))
            h = f"h{j}_{source}"
        names.append(h)
    nodes.append(helper.make_node("Identity", [names[-1]], [y_name], name="output"))
    in_shape: list[Any] = ["N", net.input_dim] if x_shape is None else \
        ["N" if d is None else d for d in x_shape]
    graph = helper.make_graph(
        nodes, "exactnorm_frozen_network",
        [helper.make_tensor_value_info(x_name, elem, in_shape)],
        [helper.make_tensor_value_info(y_name, elem, ["N", net.layers[-1].width])],
        initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", ONNX_OPSET)],
                              producer_name="exactnorm")
    model.ir_version = 8  # the oldest IR that carries opset 15; widest runtime support
    model.doc_string = FLOAT_WARNING
    onnx.checker.check_model(model)
    return model


def _int64(inits: list[Any], name: str, values: list[int]) -> str:
    from onnx import numpy_helper

    inits.append(numpy_helper.from_array(np.asarray(values, dtype=np.int64), name))
    return name


def source_interface(cert_doc: dict[str, Any],
                     d0: int) -> tuple[str, list[int | None] | None, str]:
    """Input name, input shape (``None`` unless it is an image to flatten) and output name for
    an exported model: those of the model the target was read from, as certify recorded them in
    ``provenance.source``, else ``x`` and ``y``.

    A recorded shape is used only when it describes the certified input: a batch dimension,
    then known dimensions whose product is ``d0``. Anything else falls back to ``(N, d0)``.

    >>> doc = {"provenance": {"source": {"format": "onnx", "input": {"name": "image",
    ...        "shape": [None, 1, 2, 2]}, "output": {"name": "logits"}}}}
    >>> source_interface(doc, 4)
    ('image', [None, 1, 2, 2], 'logits')
    >>> source_interface({}, 4)
    ('x', None, 'y')
    """
    prov = cert_doc.get("provenance") if isinstance(cert_doc, dict) else None
    source = prov.get("source") if isinstance(prov, dict) else None
    if not isinstance(source, dict):
        return "x", None, "y"

    def name(part: str, default: str) -> str:
        value = source.get(part, {}).get("name") if isinstance(source.get(part), dict) else None
        if isinstance(value, str) and 0 < len(value) <= 200 and value.isprintable():
            return value
        return default

    x_name, y_name = name("input", "x"), name("output", "y")
    if x_name == y_name:
        y_name = f"{y_name}_out"
    shape = source["input"].get("shape") if isinstance(source.get("input"), dict) else None
    image = None
    if isinstance(shape, list) and len(shape) > 2 and all(
            type(d) is int and d > 0 for d in shape[1:]) and math.prod(shape[1:]) == d0:
        image = [None] + list(shape[1:])
    return x_name, image, y_name


def verify_onnx(cert_doc: dict[str, Any], path: str | os.PathLike[str], points: int, *,
                seed: int = 0) -> dict[str, Any]:
    """Evaluate an exported ONNX model under onnxruntime at ``points`` seeded points of the
    certificate's box and compare with the exact target: the measured error of the float export
    (the certificate itself is exact; its float image is not).

    The points are ``lower + t·(upper − lower)`` with ``t`` a multiple of 1/1000 drawn from
    ``random.Random(seed)``, evaluated exactly by the target and as float64 inputs by the model.

    Returns
    -------
    dict
        ``points``, ``max_abs_error``, ``max_rel_error`` (relative to the largest exact output),
        ``argmax_agree`` (points whose largest output has the same index).
    """
    ort = require_extra("onnxruntime", "--verify")
    g = read_target(cert_doc)
    xs = box_points(g.lower, g.upper, points, seed)
    exact = np.array([floats(g.evaluate(x)) for x in xs])
    session = ort.InferenceSession(os.fspath(path), providers=["CPUExecutionProvider"])
    inp = session.get_inputs()[0]
    np_dtype = np.float32 if "float)" in inp.type and "double" not in inp.type else np.float64
    X = np.array([floats(x) for x in xs], dtype=np_dtype)
    dims = [d for d in inp.shape[1:] if isinstance(d, int)]
    if len(dims) == len(inp.shape) - 1 > 1:  # (N, C, H, W): the box is the flattened image
        X = X.reshape(points, *dims)
    Y = np.asarray(session.run(None, {inp.name: X})[0], dtype=np.float64)
    err = float(np.max(np.abs(Y - exact))) if points else 0.0
    scale = float(np.max(np.abs(exact))) if points else 1.0
    agree = int(np.sum(np.argmax(Y, axis=1) == np.argmax(exact, axis=1))) if points else 0
    return {"points": points, "max_abs_error": err,
            "max_rel_error": err / scale if scale else err, "argmax_agree": agree}
