"""The ``avgpool`` kind's exporter: ``AveragePool`` on NCHW (float32) or ``Gather`` of each
window and ``ReduceMean`` (float64); in PyTorch an ``AvgPool2d``; in npz ``geometry{j}`` =
``[C, H, W, kh, kw, sh, sw]``. No normalization: nothing is tuned."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from exactnorm.model.layers import FloatLayer
from exactnorm.model.operators import avgpool
from exactnorm.model.operators.avgpool import AvgPool
from exactnorm.model.operators.window import ConvGeometry
from exactnorm.outputs.export.kinds.base import OnnxBuilder

__all__ = ["PoolExporter", "EXPORTER"]


def _geometry(layer: FloatLayer) -> ConvGeometry:
    assert isinstance(layer.operator, AvgPool)
    return layer.operator.geometry


class PoolExporter:
    """Exporter of the ``avgpool`` kind (module doc)."""

    kind = avgpool.NAME
    torch_keys = {"geometry": "geometry"}

    def input_image(self, layer: FloatLayer) -> tuple[int, int, int]:
        return _geometry(layer).input_shape

    def onnx(self, layer: FloatLayer, j: int, stats: Any,
             g: OnnxBuilder) -> tuple[str, tuple[int, int, int] | None]:
        geo = _geometry(layer)
        if g.spatial_ops:
            return g.node("AveragePool", [g.image(layer.input, geo.input_shape)], f"u{j}",
                          f"layer{j}_pool", kernel_shape=list(geo.kernel_shape),
                          strides=list(geo.stride)), geo.output_shape(geo.input_shape[0])
        pad = g.node("Pad", [g.flat(layer.input), g.const(f"pads{j}", [0, 0, 0, 1], True)],
                     f"pad{j}", f"layer{j}_pad", mode="constant")
        C = geo.input_shape[0]
        win = geo.patch_index.reshape(C, -1, geo.positions)
        w = g.node("Gather", [pad, g.const(f"win{j}", win, True)], f"w{j}",
                   f"layer{j}_windows", axis=1)
        m = g.node("ReduceMean", [w], f"m{j}", f"layer{j}_mean", axes=[2], keepdims=0)
        return g.node("Flatten", [m], f"flat_out{j}", f"layer{j}_flatten", axis=1), None

    def arrays(self, layer: FloatLayer, stats: Any) -> dict[str, np.ndarray]:
        geo = _geometry(layer)
        return {"geometry": np.array([*geo.input_shape, *geo.kernel_shape, *geo.stride],
                                     dtype=np.int64)}

    def forward(self, arrays: dict[str, np.ndarray], A: np.ndarray, eps: float) -> np.ndarray:
        C, H, W, kh, kw, sh, sw = (int(v) for v in np.asarray(arrays["geometry"]))
        return AvgPool(ConvGeometry((C, H, W), (kh, kw), (sh, sw))).apply_float(A)

    def torch_parts(self, layer: FloatLayer, torch: Any, eps: float
                    ) -> tuple[dict[str, Any], dict[str, Any], Callable[[Any, Any], Any]]:
        geo = _geometry(layer)
        C, H, W = geo.input_shape
        buffers = {"geometry": torch.tensor([C, H, W, *geo.kernel_shape, *geo.stride],
                                            dtype=torch.int64)}
        return {"pool": torch.nn.AvgPool2d(geo.kernel_shape, geo.stride)}, buffers, \
            lambda block, x: block.pool(x.reshape(-1, C, H, W)).flatten(1)


EXPORTER = PoolExporter()
