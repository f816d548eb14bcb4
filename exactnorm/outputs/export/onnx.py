"""The certificate's network as an ONNX model (float64 by default; not certified), for every
layer kind, and the measured error of such a model under onnxruntime against the exact target.

One builder (:func:`onnx_model`): the float copy of the frozen network
(:class:`~exactnorm.model.network.FloatNetwork`) is written layer by layer, each layer's
pre-activation by the exporter of its kind (:data:`~exactnorm.outputs.export.kinds.EXPORTERS`),
then — kind-free — ``Relu`` where declared and ``MatMul(h_s, P_sᵀ)`` + ``Add`` per skip
(``Add`` alone for an identity skip). Nodes are kept flat ``(N, d)`` (a tensor is its C-order
vector) or as images ``(N, C, H, W)`` where a kind gave one,
converted by ``Flatten``/``Reshape`` only where the next reader needs the other form.
Around the body, the source model's interface — its input name, dtype and shape (a leading
``Cast`` to the arithmetic dtype), its output names and classifier head
(:mod:`exactnorm.outputs.onnx_interface`) — or input ``x`` and output ``y`` without a recorded
source. The normalization is ``BatchNormalization`` (inference form, opset 15) with the frozen
statistics ``μ``, ``s² − eps``, or ``Mul(Γ)`` + ``Add(β)`` (``normalization="muladd"``, one
rounding fewer), per neuron or per channel.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from exactnorm.errors import InputError, require_extra
from exactnorm.model.routes import Route, Skip
from exactnorm.outputs.export.batchnorm import (
    DEFAULT_EPS,
    FLOAT_DTYPES,
    FLOAT_WARNING,
    ONNX_OPSET,
    float_layers,
)
from exactnorm.outputs.export.kinds import EXPORTERS
from exactnorm.outputs.onnx_interface import Interface, assemble, interface_of
from exactnorm.outputs.stages import ProgressHook

__all__ = ["onnx_model", "verify_onnx", "INTERFACES", "NORMALIZATIONS", "LAYOUTS"]

#: ``interface`` values of the ONNX exports: the source model's, or plain ``x``/``y``
INTERFACES = ("source", "plain")
#: ``normalization`` values
NORMALIZATIONS = ("batchnorm", "muladd")
#: ``layout`` values: windowed kinds as framework operators on NCHW, or in im2col form
LAYOUTS = ("auto", "nchw", "im2col")


class _Builder:
    """The kind-free graph under construction (the :class:`~exactnorm.outputs.export.kinds.
    base.OnnxBuilder` the exporters use)."""

    def __init__(self, np_dtype: Any, normalization: str, eps: float, spatial_ops: bool,
                 input_image: tuple[int, int, int] | None, d0: int) -> None:
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.np_dtype, self.normalization_form, self.eps = np_dtype, normalization, eps
        self.spatial_ops = spatial_ops
        self.inits: list[Any] = []
        self.nodes: list[Any] = []
        self.names = ["x"]
        #: per node: its image shape when it is held as (N, C, H, W), else None
        self.images: list[tuple[int, int, int] | None] = [input_image]
        self.dims = [d0]
        self._flat: dict[int, str] = {}
        self._image: dict[int, str] = {}

    def const(self, name: str, value: Any, integer: bool = False) -> str:
        scalar = np.int64 if integer else self.np_dtype
        self.inits.append(self.numpy_helper.from_array(np.ascontiguousarray(value, dtype=scalar),
                                                       name))
        return name

    def node(self, op: str, inputs: list[str], output: str, name: str, **attrs: Any) -> str:
        self.nodes.append(self.helper.make_node(op, inputs, [output], name=name, **attrs))
        return output

    def flat(self, k: int) -> str:
        if self.images[k] is None:
            return self.names[k]
        if k not in self._flat:
            self._flat[k] = self.node("Flatten", [self.names[k]], f"flat{k}", f"flatten{k}",
                                      axis=1)
        return self._flat[k]

    def image(self, k: int, shape: tuple[int, int, int]) -> str:
        if self.images[k] is not None:
            if tuple(self.images[k]) != tuple(shape):  # type: ignore[arg-type]
                raise InputError(f"node {k} has shape {self.images[k]}, a layer reads it as "
                                 f"{shape}")
            return self.names[k]
        if k not in self._image:
            self._image[k] = self.node(
                "Reshape", [self.flat(k), self.const(f"shape{k}", [-1, *shape], True)],
                f"image{k}", f"image{k}")
        return self._image[k]

    def normalization(self, j: int, src: str, stats: Any, trailing: int) -> str:
        if self.normalization_form == "batchnorm":
            return self.node(
                "BatchNormalization",
                [src, self.const(f"bn{j}_scale", stats["gamma_hat"]),
                 self.const(f"bn{j}_bias", stats["beta_hat"]),
                 self.const(f"bn{j}_mean", stats["mean"]), self.const(f"bn{j}_var", stats["var"])],
                f"u{j}", f"layer{j}_norm", epsilon=float(self.eps))
        shape = (-1,) + (1,) * trailing
        g = self.node("Mul", [src, self.const(f"gamma{j}", stats["gamma"].reshape(shape))],
                      f"g{j}", f"layer{j}_scale")
        return self.node("Add", [g, self.const(f"beta{j}", stats["beta"].reshape(shape))],
                         f"u{j}", f"layer{j}_shift")


def _residual(g: _Builder, j: int, h: str, shape: tuple[int, int, int] | None,
              r: Skip) -> tuple[str, tuple[int, int, int] | None]:
    """``Add(h, R h_r)``: an identity residual adds node ``r.source`` itself (as an image when
    ``h`` is one: a ResNet's ``Add`` of two feature maps); a selection gathers its entries
    from the flat node with a zero appended (a row without a 1 reads the zero)."""
    route = r.weight
    assert isinstance(route, Route)
    if route.is_identity:
        other = g.image(r.source, shape) if shape is not None else g.flat(r.source)
        return g.node("Add", [h, other], f"res{j}", f"layer{j}_residual_add"), shape
    if shape is not None:
        h, shape = g.node("Flatten", [h], f"flat_u{j}", f"layer{j}_flatten_u", axis=1), None
    pad = g.node("Pad", [g.flat(r.source), g.const(f"res_pads{j}", [0, 0, 0, 1], True)],
                 f"res_pad{j}", f"layer{j}_residual_pad", mode="constant")
    idx = np.array([route.columns if c is None else c for c in route.picks], dtype=np.int64)
    sel = g.node("Gather", [pad, g.const(f"res_idx{j}", idx, True)], f"res_sel{j}",
                 f"layer{j}_residual_select", axis=1)
    return g.node("Add", [h, sel], f"res{j}", f"layer{j}_residual_add"), shape


def onnx_model(cert_doc: Any, *, dtype: str = "float64", normalization: str = "batchnorm",
               mean: Any = 0, scale: Any = 1, eps: float = DEFAULT_EPS,
               progress: ProgressHook | None = None, interface: str = "source",
               layout: str = "auto") -> Any:
    """The certificate's network as an ``onnx.ModelProto`` (float; not certified).

    Parameters
    ----------
    cert_doc
        A certificate document (read it with :func:`exactnorm.certificate.load_certificate`),
        or a construction or frozen network (then without a recorded interface).
    dtype
        ``"float64"`` (the default) or ``"float32"`` for every tensor. float32 can change
        predictions: constructions cancel large shifts β (measure with :func:`verify_onnx`).
    normalization
        ``"batchnorm"`` (``BatchNormalization`` with the frozen statistics ``μ``, ``s² − eps``)
        or ``"muladd"`` (``Mul(Γ)``, ``Add(β)``: the tuned parameters themselves).
    mean, scale, eps
        Frozen statistics of the BatchNorm form (:mod:`exactnorm.outputs.export`), per neuron or
        channel.
    progress
        ``progress(done, total)`` over the frozen layers read.
    interface
        ``"source"`` (default): the input, outputs and classifier head of the model the target
        was read from, as certify recorded them (:mod:`exactnorm.outputs.onnx_interface`);
        ``"plain"``: input ``x`` and output ``y`` (the logits) in ``dtype``.
    layout
        Windowed kinds (convolutions, poolings) as ``Conv``/``AveragePool``/
        ``GlobalAveragePool`` on NCHW (``"nchw"``) or in im2col form (``"im2col"``);
        ``"auto"``: NCHW in float32, im2col in float64, since onnxruntime has no double
        ``Conv`` or pooling kernels.

    Returns
    -------
    onnx.ModelProto
        Checked with ``onnx.checker``.

    Raises
    ------
    InputError
        Unknown ``dtype``/``normalization``/``interface``/``layout``, ``s² ≤ eps``.
    MissingExtraError
        Without the ``onnx`` package.
    """
    require_extra("onnx", "the ONNX export")
    from onnx import TensorProto

    if interface not in INTERFACES:
        raise InputError(f"interface must be one of {', '.join(INTERFACES)}, got {interface!r}",
                         parameter="interface")
    if dtype not in FLOAT_DTYPES:
        raise InputError(f"dtype must be one of {tuple(FLOAT_DTYPES)}, got {dtype!r}",
                         parameter="dtype")
    if normalization not in NORMALIZATIONS:
        raise InputError(f"normalization must be 'batchnorm' or 'muladd', got {normalization!r}",
                         parameter="normalization")
    if layout not in LAYOUTS:
        raise InputError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}",
                         parameter="layout")
    spatial_ops = layout == "nchw" or (layout == "auto" and dtype == "float32")
    # BatchNormalization's epsilon is a float32 attribute: the statistics are written for the
    # value it holds, so that running_var + epsilon is s² and the normalization is Γ·v + β
    eps = float(np.float32(eps))
    net, stats = float_layers(cert_doc, mean, scale, eps, progress=progress)
    first = [layer for layer in net.layers if layer.input == 0]
    image = EXPORTERS[first[0].kind].input_image(first[0]) if first else None
    g = _Builder(FLOAT_DTYPES[dtype], normalization, eps, spatial_ops, image, net.input_dim)
    for j, (layer, p) in enumerate(zip(net.layers, stats), 1):
        h, shape = EXPORTERS[layer.kind].onnx(layer, j, p, g)
        r = net.residual(j)
        if r is not None:  # the target's skip, added to the normalized branch before the Relu
            h, shape = _residual(g, j, h, shape, r)
        if layer.activation == "relu":
            h = g.node("Relu", [h], f"a{j}", f"layer{j}_relu")
        for (s, P), route in zip(layer.skips, layer.skip_kinds):
            if shape is not None:
                h, shape = g.node("Flatten", [h], f"flat_h{j}", f"layer{j}_flatten_h",
                                  axis=1), None
            # an identity skip adds the node itself: no n × n constant (a convolution's
            # accumulator skip is the identity on a whole feature map)
            sk = g.flat(s) if route == "identity" else g.node(
                "MatMul", [g.flat(s), g.const(f"P{j}_{s}_T", P.T)], f"s{j}_{s}",
                f"layer{j}_skip{s}")
            h = g.node("Add", [h, sk], f"h{j}_{s}", f"layer{j}_skip{s}_add")
        g.names.append(h)
        g.images.append(shape)
        g.dims.append(layer.width)
    g.node("Identity", [g.flat(net.depth)], "y", "output")
    face = interface_of(cert_doc, net.input_dim) if interface == "source" \
        and isinstance(cert_doc, dict) else Interface()
    body_input: list[Any] = ["N", *image] if image is not None else ["N", net.input_dim]
    return assemble(g.nodes, g.inits,
                    elem=TensorProto.FLOAT if dtype == "float32" else TensorProto.DOUBLE,
                    body_input=body_input, width=net.layers[-1].width, interface=face,
                    opset=ONNX_OPSET, graph_name="exactnorm_frozen_network",
                    doc_string=FLOAT_WARNING)


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
