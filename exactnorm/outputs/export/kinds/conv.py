"""The ``conv`` kind's exporter: in ONNX ``Conv`` (kernel ``[c, C/G, kh, kw]``, ``group`` G, no
bias) on NCHW and the normalization per channel (float32), or the im2col form — ``Gather`` of
the patch rows the kernel reads (padding pixels read an appended zero), ``MatMul`` with the
kernel matrix of the whole patch restricted to those rows (a grouped kernel block-diagonal; a
channel block's masked kernel reads one block's rows, so the columns of exact zeros are neither
gathered nor multiplied, as in the float copy's
:meth:`~exactnorm.model.operators.conv.Conv.apply_float`) and the normalization on
``(N, c, positions)`` (float64: onnxruntime has no double ``Conv``); in PyTorch a ``Conv2d``
with ``groups`` and without bias and a ``BatchNorm2d``; in npz ``V{j}`` (the 4-d kernel, whose
second axis ``C/G`` gives the groups), the normalization's arrays and ``geometry{j}`` = ``[C, H,
W, sh, sw, ph, pw, dh, dw]``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from exactnorm.model.layers import FloatLayer
from exactnorm.model.operators import conv
from exactnorm.model.operators.conv import Conv
from exactnorm.model.operators.window import ConvGeometry
from exactnorm.outputs.export.kinds.base import (
    NORM_TORCH_KEYS,
    OnnxBuilder,
    batchnorm_eval,
    norm_arrays,
)

__all__ = ["ConvExporter", "EXPORTER", "read_patch"]


def _op(layer: FloatLayer) -> Conv:
    assert isinstance(layer.operator, Conv)
    return layer.operator


def _kernel(op: Conv) -> np.ndarray:
    """The float kernel as ``[c, C/G, kh, kw]`` (a framework's layout)."""
    return np.asarray(op.weight).reshape(op.channels, -1, *op.geometry.kernel_shape)


def _whole_patch(op: Conv) -> np.ndarray:
    """The float kernel over the whole patch: a grouped kernel's blocks on the diagonal."""
    W, G = np.asarray(op.weight, dtype=np.float64), op.groups
    if G == 1:
        return W
    per, d = W.shape[0] // G, W.shape[1]
    out = np.zeros((W.shape[0], d * G))
    for k in range(G):
        out[k * per:(k + 1) * per, k * d:(k + 1) * d] = W[k * per:(k + 1) * per]
    return out


def read_patch(op: Conv) -> tuple[np.ndarray, np.ndarray]:
    """The im2col form's kernel and patch index, restricted to the patch rows the kernel reads
    (a column of the whole-patch kernel with a nonzero entry; at least one, so that no tensor
    of the graph is empty). The dropped columns are exact zeros: every output is the same sum
    of the same nonzero products."""
    W = _whole_patch(op)
    idx = np.where(op.geometry.patch_index >= 0, op.geometry.patch_index,
                   op.geometry.input_size)
    used = np.flatnonzero(np.any(W != 0, axis=0))
    if len(used) == W.shape[1]:
        return W, idx
    used = used if len(used) else np.arange(1)
    return W[:, used], idx[used]


class ConvExporter:
    """Exporter of the ``conv`` kind (module doc)."""

    kind = conv.NAME
    torch_keys = {"V": "conv.weight", **NORM_TORCH_KEYS, "geometry": "geometry"}

    def input_image(self, layer: FloatLayer) -> tuple[int, int, int]:
        return _op(layer).geometry.input_shape

    def onnx(self, layer: FloatLayer, j: int, stats: Any,
             g: OnnxBuilder) -> tuple[str, tuple[int, int, int] | None]:
        op = _op(layer)
        geo = op.geometry
        if g.spatial_ops:
            v = g.node("Conv", [g.image(layer.input, geo.input_shape),
                                g.const(f"V{j}", _kernel(op))], f"v{j}", f"layer{j}_conv",
                       kernel_shape=list(geo.kernel_shape), strides=list(geo.stride),
                       pads=[geo.padding[0], geo.padding[1], geo.padding[0], geo.padding[1]],
                       dilations=list(geo.dilation), group=op.groups)
            return g.normalization(j, v, stats, trailing=2), op.output_shape
        pad = g.node("Pad", [g.flat(layer.input), g.const(f"pads{j}", [0, 0, 0, 1], True)],
                     f"pad{j}", f"layer{j}_pad", mode="constant")
        W, idx = read_patch(op)
        patches = g.node("Gather", [pad, g.const(f"idx{j}", idx, True)], f"patch{j}",
                         f"layer{j}_patches", axis=1)
        v = g.node("MatMul", [g.const(f"V{j}", W), patches], f"v{j}", f"layer{j}_matmul")
        u = g.normalization(j, v, stats, trailing=1)
        return g.node("Flatten", [u], f"flat_out{j}", f"layer{j}_flatten", axis=1), None

    def arrays(self, layer: FloatLayer, stats: Any) -> dict[str, np.ndarray]:
        op = _op(layer)
        geo = op.geometry
        return {"V": _kernel(op), **norm_arrays(stats),
                "geometry": np.array([*geo.input_shape, *geo.stride, *geo.padding,
                                      *geo.dilation], dtype=np.int64)}

    def forward(self, arrays: dict[str, np.ndarray], A: np.ndarray, eps: float) -> np.ndarray:
        C, H, W, sh, sw, ph, pw, dh, dw = (int(v) for v in np.asarray(arrays["geometry"]))
        K = np.asarray(arrays["V"], dtype=np.float64)
        geo = ConvGeometry((C, H, W), K.shape[2:], (sh, sw), (ph, pw), (dh, dw))
        op = Conv(geo, K.reshape(K.shape[0], -1), C // K.shape[1])
        return batchnorm_eval(op.apply_float(A), arrays, eps, per=geo.positions)

    def torch_parts(self, layer: FloatLayer, torch: Any, eps: float
                    ) -> tuple[dict[str, Any], dict[str, Any], Callable[[Any, Any], Any]]:
        nn, op = torch.nn, _op(layer)
        geo = op.geometry
        C, H, W = geo.input_shape
        modules = {"conv": nn.Conv2d(C, op.channels, geo.kernel_shape, stride=geo.stride,
                                     padding=geo.padding, dilation=geo.dilation,
                                     groups=op.groups, bias=False),
                   "norm": nn.BatchNorm2d(op.channels, eps=eps)}
        buffers = {"geometry": torch.tensor([C, H, W, *geo.stride, *geo.padding,
                                             *geo.dilation], dtype=torch.int64)}
        return modules, buffers, \
            lambda block, x: block.norm(block.conv(x.reshape(-1, C, H, W))).flatten(1)


EXPORTER = ConvExporter()
