"""The ``globalavgpool`` kind's realizer: a global average pooling is copied as a declared fixed
layer (:mod:`exactnorm.constructions.kinds.fixed`).

>>> from exactnorm.model.kinds import GlobalPoolTargetLayer
>>> pool = GlobalPoolTargetLayer((2, 3, 3))
>>> done = REALIZER.realize([pool], ((), ()), REALIZER.plan([pool], ((), ()), 2, None, ""),
...                         start=4, options={})
>>> done.layers[0].input, done.checkpoints, done.witnesses
(4, [5], [{'layer': 2, 'kind': 'globalavgpool'}])
"""

from __future__ import annotations

from exactnorm.constructions.kinds.fixed import FixedMapRealizer
from exactnorm.model.kinds import globalavgpool
from exactnorm.model.kinds.globalavgpool import FrozenGlobalPoolLayer, GlobalPoolTargetLayer

__all__ = ["GlobalPoolRealizer", "REALIZER"]


class GlobalPoolRealizer(FixedMapRealizer):
    """Realizer of the ``globalavgpool`` kind (module doc)."""

    kind = globalavgpool.NAME
    target_type = GlobalPoolTargetLayer

    def frozen(self, layer: GlobalPoolTargetLayer, start: int) -> FrozenGlobalPoolLayer:
        return FrozenGlobalPoolLayer(start, layer.input_shape)

    def channels(self, layer: GlobalPoolTargetLayer) -> int:
        return layer.input_shape[0]


REALIZER = GlobalPoolRealizer()
