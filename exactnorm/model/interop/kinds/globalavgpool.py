"""Reading the ``globalavgpool`` kind: ONNX ``GlobalAveragePool``, a ``ReduceMean`` over the two
spatial axes (what PyTorch's dynamo exporter writes for ``AdaptiveAvgPool2d(1)``; axes as an
attribute before opset 18, as a stored input from opset 18 on, negative axes counted from the
end), and the state-dict token ``globalavgpool`` (an ``AdaptiveAvgPool2d(1)``).

Each maps an image ``(C, H, W)`` to its channel means; ``keepdims = 1`` (the default) gives the
tensor ``(C, 1, 1)``, ``keepdims = 0`` the vector ``(C,)``: the same C-order vector, so a
following flatten or reshape to ``[N, C]`` changes nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from exactnorm.errors import InputError
from exactnorm.model.interop.chain import Chain, Constants, Entry, Raw
from exactnorm.model.layers import TargetLayer
from exactnorm.model.onnx_common import node_label
from exactnorm.model.operators import globalavgpool
from exactnorm.model.operators.globalavgpool import GlobalAvgPool

__all__ = ["NAME", "ONNX_OPS", "TORCH_TOKENS"]

NAME = globalavgpool.NAME


def _build(raw: Raw) -> TargetLayer:
    return TargetLayer(GlobalAvgPool(raw.spec))


def _global_pool(chain: Chain, what: str, keepdims: bool = True) -> None:
    shape = chain.image(what)
    chain.add(Raw(NAME, _build, what, spec=shape),
              (shape[0], 1, 1) if keepdims else (shape[0],))


def _global_average_pool(chain: Chain, node: Any, attrs: dict[str, Any],
                         consts: Constants) -> None:
    _global_pool(chain, node_label(node))


def _reduce_mean(chain: Chain, node: Any, attrs: dict[str, Any], consts: Constants) -> None:
    what = node_label(node)
    if "axes" in attrs:
        axes = [int(a) for a in attrs["axes"]]
    elif len(node.input) > 1 and node.input[1]:
        axes = [int(a) for a in np.asarray(consts.get(node, 1, weight=False)).reshape(-1)]
    else:
        axes = []
    if sorted(a % 4 for a in axes) != [2, 3] or len(axes) != 2:
        raise InputError(f"{what}: only a mean over the two spatial axes of an image [N, C, H, "
                         f"W] (axes [2, 3] or [-2, -1]) is a global average pooling; got axes "
                         f"{axes}")
    _global_pool(chain, what, keepdims=bool(attrs.get("keepdims", 1)))


def _global_token(chain: Chain, entry: Entry) -> None:
    _global_pool(chain, entry.label)


#: (domain, op type) → handler(chain, node, attributes, constants)
ONNX_OPS = {("", "GlobalAveragePool"): _global_average_pool, ("", "ReduceMean"): _reduce_mean}
#: architecture token → (handler(chain, entry), whether the module has parameters)
TORCH_TOKENS = {"globalavgpool": (_global_token, False)}
