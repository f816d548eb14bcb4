"""The ``globalavgpool`` kind's exporter: ``GlobalAveragePool`` on NCHW (float32) or a
``Reshape`` to ``(N, C, H·W)`` and ``ReduceMean`` over the last axis (float64: onnxruntime has no
double ``GlobalAveragePool``); in PyTorch an ``AdaptiveAvgPool2d(1)``; in npz ``geometry{j}`` =
``[C, H, W]``. No normalization: nothing is tuned."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from exactnorm.model.kinds import globalavgpool
from exactnorm.model.kinds.globalavgpool import FloatGlobalPoolLayer
from exactnorm.outputs.export.kinds.base import OnnxBuilder

__all__ = ["GlobalPoolExporter", "EXPORTER"]


class GlobalPoolExporter:
    """Exporter of the ``globalavgpool`` kind (module doc)."""

    kind = globalavgpool.NAME
    torch_keys = {"geometry": "geometry"}

    def input_image(self, layer: FloatGlobalPoolLayer) -> tuple[int, int, int]:
        return layer.input_shape

    def onnx(self, layer: FloatGlobalPoolLayer, j: int, stats: Any,
             g: OnnxBuilder) -> tuple[str, tuple[int, int, int] | None]:
        C, H, W = layer.input_shape
        if g.spatial_ops:
            return g.node("GlobalAveragePool", [g.image(layer.input, layer.input_shape)],
                          f"u{j}", f"layer{j}_global_pool"), layer.output_shape
        r = g.node("Reshape", [g.flat(layer.input),
                               g.const(f"channels{j}", [-1, C, H * W], True)], f"r{j}",
                   f"layer{j}_channels")
        return g.node("ReduceMean", [r], f"u{j}", f"layer{j}_mean", axes=[2], keepdims=0), None

    def arrays(self, layer: FloatGlobalPoolLayer, stats: Any) -> dict[str, np.ndarray]:
        return {"geometry": np.array(layer.input_shape, dtype=np.int64)}

    def forward(self, arrays: dict[str, np.ndarray], A: np.ndarray, eps: float) -> np.ndarray:
        C, H, W = (int(v) for v in np.asarray(arrays["geometry"]))
        return np.asarray(A, dtype=np.float64).reshape(len(A), C, H * W).mean(axis=2)

    def torch_parts(self, layer: FloatGlobalPoolLayer, torch: Any, eps: float
                    ) -> tuple[dict[str, Any], dict[str, Any], Callable[[Any, Any], Any]]:
        C, H, W = layer.input_shape
        buffers = {"geometry": torch.tensor([C, H, W], dtype=torch.int64)}
        return {"pool": torch.nn.AdaptiveAvgPool2d(1)}, buffers, \
            lambda block, x: block.pool(x.reshape(-1, C, H, W)).flatten(1)


EXPORTER = GlobalPoolExporter()
