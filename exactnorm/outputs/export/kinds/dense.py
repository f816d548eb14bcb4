"""The ``dense`` kind's exporter: ``MatMul(h, Vᵀ)`` then the normalization on ``(N, d)``; in
PyTorch a ``Linear`` without bias and a ``BatchNorm1d`` (the layout of
:mod:`exactnorm.outputs.export.torch`); in npz ``V{j}`` and the normalization's arrays."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from exactnorm.model.layers import FloatLayer
from exactnorm.model.operators import dense
from exactnorm.outputs.export.kinds.base import (
    NORM_TORCH_KEYS,
    OnnxBuilder,
    batchnorm_eval,
    norm_arrays,
)

__all__ = ["DenseExporter", "EXPORTER"]


class DenseExporter:
    """Exporter of the ``dense`` kind (module doc)."""

    kind = dense.NAME
    torch_keys = {"V": "linear.weight", **NORM_TORCH_KEYS}

    def input_image(self, layer: FloatLayer) -> None:
        return None

    def onnx(self, layer: FloatLayer, j: int, stats: Any, g: OnnxBuilder) -> tuple[str, None]:
        v = g.node("MatMul", [g.flat(layer.input), g.const(f"V{j}_T", layer.weight.T)],
                   f"v{j}", f"layer{j}_linear")
        return g.normalization(j, v, stats, trailing=0), None

    def arrays(self, layer: FloatLayer, stats: Any) -> dict[str, np.ndarray]:
        return {"V": layer.weight, **norm_arrays(stats)}

    def forward(self, arrays: dict[str, np.ndarray], A: np.ndarray, eps: float) -> np.ndarray:
        return batchnorm_eval(A @ np.asarray(arrays["V"]).T, arrays, eps)

    def torch_parts(self, layer: FloatLayer, torch: Any, eps: float
                    ) -> tuple[dict[str, Any], dict[str, Any], Callable[[Any, Any], Any]]:
        nn = torch.nn
        modules = {"linear": nn.Linear(layer.input_size, layer.width, bias=False),
                   "norm": nn.BatchNorm1d(layer.width, eps=eps)}
        return modules, {}, lambda block, x: block.norm(block.linear(x))


EXPORTER = DenseExporter()
