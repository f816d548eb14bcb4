"""The ``globalavgpool`` kind's exporter: ``GlobalAveragePool`` on NCHW (float32) or a
``Reshape`` to ``(N, C, H·W)`` and ``ReduceMean`` over the last axis (float64: onnxruntime has no
double ``GlobalAveragePool``); in PyTorch an ``AdaptiveAvgPool2d(1)``; in npz ``geometry{j}`` =
``[C, H, W]``. No normalization: nothing is tuned."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from exactnorm.model.layers import FloatLayer
from exactnorm.model.operators import globalavgpool
from exactnorm.model.operators.globalavgpool import GlobalAvgPool
from exactnorm.outputs.export.kinds.base import OnnxBuilder

__all__ = ["GlobalPoolExporter", "EXPORTER"]


def _shape(layer: FloatLayer) -> tuple[int, int, int]:
    assert isinstance(layer.operator, GlobalAvgPool)
    return layer.operator.input_shape


class GlobalPoolExporter:
    """Exporter of the ``globalavgpool`` kind (module doc)."""

    kind = globalavgpool.NAME
    torch_keys = {"geometry": "geometry"}

    def input_image(self, layer: FloatLayer) -> tuple[int, int, int]:
        return _shape(layer)

    def onnx(self, layer: FloatLayer, j: int, stats: Any,
             g: OnnxBuilder) -> tuple[str, tuple[int, int, int] | None]:
        C, H, W = _shape(layer)
        if g.spatial_ops:
            return g.node("GlobalAveragePool", [g.image(layer.input, (C, H, W))],
                          f"u{j}", f"layer{j}_global_pool"), (C, 1, 1)
        r = g.node("Reshape", [g.flat(layer.input),
                               g.const(f"channels{j}", [-1, C, H * W], True)], f"r{j}",
                   f"layer{j}_channels")
        return g.node("ReduceMean", [r], f"u{j}", f"layer{j}_mean", axes=[2], keepdims=0), None

    def arrays(self, layer: FloatLayer, stats: Any) -> dict[str, np.ndarray]:
        return {"geometry": np.array(_shape(layer), dtype=np.int64)}

    def forward(self, arrays: dict[str, np.ndarray], A: np.ndarray, eps: float) -> np.ndarray:
        C, H, W = (int(v) for v in np.asarray(arrays["geometry"]))
        return np.asarray(A, dtype=np.float64).reshape(len(A), C, H * W).mean(axis=2)

    def torch_parts(self, layer: FloatLayer, torch: Any, eps: float
                    ) -> tuple[dict[str, Any], dict[str, Any], Callable[[Any, Any], Any]]:
        C, H, W = _shape(layer)
        buffers = {"geometry": torch.tensor([C, H, W], dtype=torch.int64)}
        return {"pool": torch.nn.AdaptiveAvgPool2d(1)}, buffers, \
            lambda block, x: block.pool(x.reshape(-1, C, H, W)).flatten(1)


EXPORTER = GlobalPoolExporter()
