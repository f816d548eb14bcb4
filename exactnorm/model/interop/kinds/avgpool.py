"""Reading the ``avgpool`` kind: ONNX ``AveragePool`` (``pads`` 0, ``ceil_mode`` 0, dilation 1)
and the state-dict token ``avgpool(k[, stride=s])`` (an ``AvgPool2d``; stride defaults to the
kernel). The mean of each window of one channel, a fixed map of an image of known shape.
"""

from __future__ import annotations

from typing import Any

from exactnorm.errors import InputError
from exactnorm.model.interop.chain import Chain, Constants, Entry, Raw
from exactnorm.model.layers import TargetLayer
from exactnorm.model.onnx_common import node_label
from exactnorm.model.operators import avgpool
from exactnorm.model.operators.avgpool import AvgPool
from exactnorm.model.operators.window import ConvGeometry

__all__ = ["NAME", "ONNX_OPS", "TORCH_TOKENS"]

NAME = avgpool.NAME


def _build(raw: Raw) -> TargetLayer:
    return TargetLayer(AvgPool(raw.spec))


def _pool(chain: Chain, kernel: Any, stride: Any, what: str) -> None:
    shape = chain.image(what)
    g = ConvGeometry(shape, tuple(kernel), tuple(stride))
    chain.add(Raw(NAME, _build, what, spec=g), g.output_shape(shape[0]))


def _average_pool(chain: Chain, node: Any, attrs: dict[str, Any], consts: Constants) -> None:
    what = node_label(node)
    chain.image(what)
    if attrs.get("ceil_mode", 0) or any(attrs.get("pads", [0])):
        raise InputError(f"{what}: only pads 0 and ceil_mode 0 are supported")
    if any(d != 1 for d in attrs.get("dilations", [1, 1])):
        raise InputError(f"{what}: dilated pooling is not supported")
    _pool(chain, attrs["kernel_shape"], attrs.get("strides", [1, 1]), what)


def _avgpool_token(chain: Chain, entry: Entry) -> None:
    k = entry.options.get("kernel", 2)
    s = entry.options.get("stride", k)
    _pool(chain, (k, k), (s, s), entry.label)


#: (domain, op type) → handler(chain, node, attributes, constants)
ONNX_OPS = {("", "AveragePool"): _average_pool}
#: architecture token → (handler(chain, entry), whether the module has parameters)
TORCH_TOKENS = {"avgpool": (_avgpool_token, False)}
