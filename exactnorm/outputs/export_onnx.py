"""The certificate's network as an ONNX model (float64 by default; not certified), and the
measured error of such a model under onnxruntime against the exact target. Part of
:mod:`exactnorm.outputs.export`, which re-exports both functions.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from exactnorm.errors import InputError, require_extra
from exactnorm.outputs.batchnorm import (
    DEFAULT_EPS,
    FLOAT_DTYPES,
    FLOAT_WARNING,
    ONNX_OPSET,
    float_layers,
)
from exactnorm.outputs.onnx_interface import Interface, assemble, interface_of
from exactnorm.outputs.stages import ProgressHook

__all__ = ["onnx_model", "verify_onnx", "INTERFACES"]

#: ``interface`` values of the ONNX exports: the source model's, or plain ``x``/``y``
INTERFACES = ("source", "plain")


def onnx_model(cert_doc: dict[str, Any], *, dtype: str = "float64",
               normalization: str = "batchnorm", mean: Any = 0, scale: Any = 1,
               eps: float = DEFAULT_EPS, progress: ProgressHook | None = None,
               interface: str = "source") -> Any:
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
    interface
        ``"source"`` (default): the input, outputs and classifier head of the model the target
        was read from, as certify recorded them (:mod:`exactnorm.outputs.onnx_interface`);
        ``"plain"``: input ``x`` ``(N, d_0)`` and output ``y`` (the logits) in ``dtype``.

    Returns
    -------
    onnx.ModelProto
        Checked with ``onnx.checker``.

    Raises
    ------
    InputError
        Unknown ``dtype``/``normalization``, ``s² ≤ eps``.
    MissingExtraError
        Without the ``onnx`` package.
    """
    require_extra("onnx", "the ONNX export")
    from onnx import TensorProto, helper, numpy_helper

    if interface not in INTERFACES:
        raise InputError(f"interface must be one of {', '.join(INTERFACES)}, got {interface!r}",
                         parameter="interface")
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

    names = ["x"]
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
    nodes.append(helper.make_node("Identity", [names[-1]], ["y"], name="output"))
    face = interface_of(cert_doc, net.input_dim) if interface == "source" else Interface()
    return assemble(nodes, inits, elem=elem, body_input=["N", net.input_dim],
                    width=net.layers[-1].width, interface=face, opset=ONNX_OPSET,
                    graph_name="exactnorm_frozen_network", doc_string=FLOAT_WARNING)


def verify_onnx(cert_doc: dict[str, Any], path: str | os.PathLike[str], points: int, *,
                seed: int = 0) -> dict[str, Any]:
    """Evaluate an exported ONNX model under onnxruntime at ``points`` seeded points of the
    certificate's box and compare with the exact target: the measured error of the float export
    (the certificate itself is exact; its float image is not).

    The points are ``lower + t·(upper − lower)`` with ``t`` a multiple of 1/1000 drawn from
    ``random.Random(seed)``, rounded to the model's input dtype and evaluated there exactly by
    the target and by the model (:func:`~exactnorm.outputs.onnx_runs.verify_export` also
    compares a source model and the user's data).

    Returns
    -------
    dict
        ``points``, ``max_abs_error``, ``max_rel_error`` (relative to the largest exact output),
        ``argmax_agree`` (points whose largest output has the same index).
    """
    from exactnorm.outputs.onnx_runs import verify_export

    m = verify_export(cert_doc, path, points, seed=seed, timing=False).get("box")
    if m is None:
        return {"points": 0, "max_abs_error": 0.0, "max_rel_error": 0.0, "argmax_agree": 0}
    e = m["export"]
    return {"points": points, "max_abs_error": e["max_abs"], "max_rel_error": e["max_rel"],
            "argmax_agree": points - e["changed"]}
