"""The Hypothesis strategies of the layer kinds, one module each, in one closed registry.

``LAYERS`` maps the certificate's ``kind`` word to ``layers(shape)``, a strategy of one target
layer of that kind reading a value of tensor shape ``(C, H, W)``
(:mod:`exactnorm.strategies.kinds.base`); ``tests/kinds/test_kind_contract.py`` demands that its
keys equal the format's ``LAYER_KINDS`` and draws every kind's layers from it.

>>> sorted(LAYERS)
['avgpool', 'conv', 'dense', 'globalavgpool']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from exactnorm.strategies.kinds import avgpool, conv, dense, globalavgpool

__all__ = ["LAYERS"]

#: kind word → strategy of one layer of that kind reading a (C, H, W) value
LAYERS: dict[str, Callable[..., Any]] = {
    dense.KIND: dense.layers,
    conv.KIND: conv.layers,
    avgpool.KIND: avgpool.layers,
    globalavgpool.KIND: globalavgpool.layers,
}
