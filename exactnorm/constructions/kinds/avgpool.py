"""The ``avgpool`` kind's realizer: an average pooling is copied as a declared fixed layer
(:mod:`exactnorm.constructions.kinds.fixed`).

>>> from exactnorm.model.layers import TargetLayer
>>> from exactnorm.model.operators import AvgPool, ConvGeometry
>>> pool = TargetLayer(AvgPool(ConvGeometry((1, 2, 2), (2, 2), stride=(2, 2))))
>>> done = REALIZER.realize([pool], ((), ()), REALIZER.plan([pool], ((), ()), 3, None, ""),
...                         start=5, options={})
>>> done.layers[0].input, done.checkpoints, done.witnesses
(5, [6], [{'layer': 3, 'kind': 'avgpool'}])
"""

from __future__ import annotations

from exactnorm.constructions.kinds.fixed import FixedMapRealizer
from exactnorm.model.operators import avgpool

__all__ = ["REALIZER"]

REALIZER = FixedMapRealizer(avgpool.NAME)
