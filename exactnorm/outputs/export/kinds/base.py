"""What a layer kind's exporter must implement: its layer in each float format.

The builders of the formats (:mod:`~exactnorm.outputs.export.onnx`,
:mod:`~exactnorm.outputs.export.torch`, :mod:`~exactnorm.outputs.export.npz`) are kind-free: they
walk the float copy of the frozen network (:class:`~exactnorm.model.network.FloatNetwork`), keep
every node as a flat ``(N, d)`` value (a tensor is its C-order vector), add the activation and the
skips, and ask the exporter of each layer's kind for its *pre-activation* ``u_j`` — the frozen
map followed by the normalization with frozen statistics (:class:`~exactnorm.outputs.export.
batchnorm.Stats`; a fixed map has none). An exporter gives:

* ``onnx(layer, j, stats, g)``: the ONNX nodes of ``u_j`` through the :class:`OnnxBuilder` ``g``,
  returning the output's name and its image shape ``(C, H, W)`` (``None`` when it is flat);
  ``input_image(layer)`` is the image shape it reads (``None``: it reads a flat value);
* ``arrays(layer, stats)``: its parameters as float64 arrays under the names of the npz layout
  (``V``, ``gamma``, ``beta``, ``running_mean``, ``running_var``, ``geometry``, …), and
  ``forward(arrays, A, eps)``: the numpy evaluation of ``u_j`` from them, as a framework computes
  it (the reference of the npz and PyTorch tests);
* ``torch_keys``: npz name → the key of the same array in a PyTorch block's state dict, and
  ``torch_parts(layer, torch, eps)``: the block's modules and buffers and its ``pre(block, x)``.

Correctness: each exporter's map is the kind's frozen map with every parameter rounded once
(the float copy), followed by ``γ̂ (v − μ)/√(var + eps) + β̂``, which is ``Γ v + β`` up to that
rounding (:mod:`exactnorm.outputs.export`). Tests run every kind's export under onnxruntime and
compare with the exact target.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from exactnorm.model.layers import FloatLayer

__all__ = ["Exporter", "OnnxBuilder", "batchnorm_eval", "NORM_TORCH_KEYS"]

#: npz names of a normalization → the keys of a PyTorch ``BatchNorm`` module named ``norm``
NORM_TORCH_KEYS = {"gamma": "norm.weight", "beta": "norm.bias",
                   "running_mean": "norm.running_mean", "running_var": "norm.running_var"}


def batchnorm_eval(v: np.ndarray, arrays: dict[str, np.ndarray], eps: float,
                   per: int = 1) -> np.ndarray:
    """A framework BatchNorm in eval mode on a flat ``(N, c·per)`` value whose entries come in
    groups of ``per`` per channel: ``γ̂ (v − μ)/sqrt(var + eps) + β̂``."""
    def rep(name: str) -> np.ndarray:
        return np.repeat(np.asarray(arrays[name], dtype=np.float64), per)

    return rep("gamma") * (v - rep("running_mean")) / np.sqrt(rep("running_var") + eps) \
        + rep("beta")


def norm_arrays(stats: Any) -> dict[str, np.ndarray]:
    """The npz names of a layer's float normalization."""
    return {"gamma": stats["gamma_hat"], "beta": stats["beta_hat"],
            "running_mean": stats["mean"], "running_var": stats["var"]}


class OnnxBuilder(Protocol):
    """The kind-free ONNX builder as an exporter sees it."""

    #: True: ``Conv``/``AveragePool``/``GlobalAveragePool`` on NCHW (float32); False: the
    #: im2col forms (``Gather`` and ``MatMul``/``ReduceMean``), which onnxruntime runs in float64
    spatial_ops: bool

    def const(self, name: str, value: Any, integer: bool = False) -> str: ...

    def node(self, op: str, inputs: list[str], output: str, name: str,
             **attrs: Any) -> str: ...

    def flat(self, k: int) -> str: ...                          # node k as (N, d)

    def image(self, k: int, shape: tuple[int, int, int]) -> str: ...   # node k as (N, C, H, W)

    def normalization(self, j: int, src: str, stats: Any, trailing: int) -> str: ...


class Exporter(Protocol):
    """A kind's pieces of the float exports (module doc)."""

    @property
    def kind(self) -> str: ...

    @property
    def torch_keys(self) -> dict[str, str]: ...

    def input_image(self, layer: FloatLayer) -> tuple[int, int, int] | None: ...

    def onnx(self, layer: FloatLayer, j: int, stats: Any,
             g: OnnxBuilder) -> tuple[str, tuple[int, int, int] | None]: ...

    def arrays(self, layer: FloatLayer, stats: Any) -> dict[str, np.ndarray]: ...

    def forward(self, arrays: dict[str, np.ndarray], A: np.ndarray, eps: float) -> np.ndarray: ...

    def torch_parts(self, layer: FloatLayer, torch: Any, eps: float
                    ) -> tuple[dict[str, Any], dict[str, Any], Callable[[Any, Any], Any]]: ...
