"""The ``avgpool`` kind's realizer: an average pooling is copied as a declared fixed layer
(:mod:`exactnorm.constructions.kinds.fixed`).

>>> from exactnorm.model.kinds import ConvGeometry, PoolTargetLayer
>>> pool = PoolTargetLayer(ConvGeometry((1, 2, 2), (2, 2), stride=(2, 2)))
>>> done = REALIZER.realize([pool], ((), ()), REALIZER.plan([pool], ((), ()), 3, None, ""),
...                         start=5, options={})
>>> done.layers[0].input, done.checkpoints, done.witnesses
(5, [6], [{'layer': 3, 'kind': 'avgpool'}])
"""

from __future__ import annotations

from exactnorm.constructions.kinds.fixed import FixedMapRealizer
from exactnorm.model.kinds import avgpool
from exactnorm.model.kinds.avgpool import FrozenPoolLayer, PoolTargetLayer

__all__ = ["PoolRealizer", "REALIZER"]


class PoolRealizer(FixedMapRealizer):
    """Realizer of the ``avgpool`` kind (module doc)."""

    kind = avgpool.NAME
    target_type = PoolTargetLayer

    def frozen(self, layer: PoolTargetLayer, start: int) -> FrozenPoolLayer:
        return FrozenPoolLayer(start, layer.geometry)

    def channels(self, layer: PoolTargetLayer) -> int:
        return layer.geometry.input_shape[0]


REALIZER = PoolRealizer()
