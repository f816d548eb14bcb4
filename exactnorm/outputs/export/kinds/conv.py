"""The ``conv`` kind's exporter: in ONNX ``Conv`` (kernel ``[c, C, kh, kw]``, no bias) on NCHW
and the normalization per channel (float32), or the im2col form — ``Gather`` of the patches
(padding pixels read an appended zero), ``MatMul`` with the kernel matrix and the normalization
on ``(N, c, positions)`` (float64: onnxruntime has no double ``Conv``); in PyTorch a ``Conv2d``
without bias and a ``BatchNorm2d``; in npz ``V{j}`` (the 4-d kernel), the normalization's arrays
and ``geometry{j}`` = ``[C, H, W, sh, sw, ph, pw, dh, dw]``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from exactnorm.model.kinds import conv
from exactnorm.model.kinds.conv import FloatConvLayer
from exactnorm.model.kinds.window import ConvGeometry
from exactnorm.outputs.export.kinds.base import (
    NORM_TORCH_KEYS,
    OnnxBuilder,
    batchnorm_eval,
    norm_arrays,
)

__all__ = ["ConvExporter", "EXPORTER"]


def _geometry(arrays: dict[str, np.ndarray]) -> ConvGeometry:
    C, H, W, sh, sw, ph, pw, dh, dw = (int(v) for v in np.asarray(arrays["geometry"]))
    kh, kw = np.asarray(arrays["V"]).shape[2:]
    return ConvGeometry((C, H, W), (int(kh), int(kw)), (sh, sw), (ph, pw), (dh, dw))


class ConvExporter:
    """Exporter of the ``conv`` kind (module doc)."""

    kind = conv.NAME
    torch_keys = {"V": "conv.weight", **NORM_TORCH_KEYS, "geometry": "geometry"}

    def input_image(self, layer: FloatConvLayer) -> tuple[int, int, int]:
        return layer.geometry.input_shape

    def onnx(self, layer: FloatConvLayer, j: int, stats: Any,
             g: OnnxBuilder) -> tuple[str, tuple[int, int, int] | None]:
        geo = layer.geometry
        if g.spatial_ops:
            v = g.node("Conv", [g.image(layer.input, geo.input_shape),
                                g.const(f"V{j}", layer.kernel)], f"v{j}", f"layer{j}_conv",
                       kernel_shape=list(geo.kernel_shape), strides=list(geo.stride),
                       pads=[geo.padding[0], geo.padding[1], geo.padding[0], geo.padding[1]],
                       dilations=list(geo.dilation), group=1)
            return g.normalization(j, v, stats, trailing=2), layer.output_shape
        pad = g.node("Pad", [g.flat(layer.input), g.const(f"pads{j}", [0, 0, 0, 1], True)],
                     f"pad{j}", f"layer{j}_pad", mode="constant")
        idx = np.where(geo.patch_index >= 0, geo.patch_index, geo.input_size)
        patches = g.node("Gather", [pad, g.const(f"idx{j}", idx, True)], f"patch{j}",
                         f"layer{j}_patches", axis=1)
        v = g.node("MatMul", [g.const(f"V{j}", layer.weight), patches], f"v{j}",
                   f"layer{j}_matmul")
        u = g.normalization(j, v, stats, trailing=1)
        return g.node("Flatten", [u], f"flat_out{j}", f"layer{j}_flatten", axis=1), None

    def arrays(self, layer: FloatConvLayer, stats: Any) -> dict[str, np.ndarray]:
        geo = layer.geometry
        return {"V": layer.kernel, **norm_arrays(stats),
                "geometry": np.array([*geo.input_shape, *geo.stride, *geo.padding,
                                      *geo.dilation], dtype=np.int64)}

    def forward(self, arrays: dict[str, np.ndarray], A: np.ndarray, eps: float) -> np.ndarray:
        geo = _geometry(arrays)
        K = np.asarray(arrays["V"], dtype=np.float64)
        v = np.einsum("od,ndp->nop", K.reshape(K.shape[0], -1), geo.patches_float(A))
        return batchnorm_eval(v.reshape(len(A), -1), arrays, eps, per=geo.positions)

    def torch_parts(self, layer: FloatConvLayer, torch: Any, eps: float
                    ) -> tuple[dict[str, Any], dict[str, Any], Callable[[Any, Any], Any]]:
        nn, geo = torch.nn, layer.geometry
        C, H, W = geo.input_shape
        modules = {"conv": nn.Conv2d(C, layer.channels, geo.kernel_shape, stride=geo.stride,
                                     padding=geo.padding, dilation=geo.dilation, bias=False),
                   "norm": nn.BatchNorm2d(layer.channels, eps=eps)}
        buffers = {"geometry": torch.tensor([C, H, W, *geo.stride, *geo.padding,
                                             *geo.dilation], dtype=torch.int64)}
        return modules, buffers, \
            lambda block, x: block.norm(block.conv(x.reshape(-1, C, H, W))).flatten(1)


EXPORTER = ConvExporter()
