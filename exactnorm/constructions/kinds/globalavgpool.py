"""The ``globalavgpool`` kind's realizer: a global average pooling is copied as a declared fixed
layer (:mod:`exactnorm.constructions.kinds.fixed`).

>>> from exactnorm.model.layers import TargetLayer
>>> from exactnorm.model.operators import GlobalAvgPool
>>> pool = TargetLayer(GlobalAvgPool((2, 3, 3)))
>>> done = REALIZER.realize([pool], ((), ()), REALIZER.plan([pool], ((), ()), 2, None, ""),
...                         start=4, options={})
>>> done.layers[0].input, done.checkpoints, done.witnesses
(4, [5], [{'layer': 2, 'kind': 'globalavgpool'}])
"""

from __future__ import annotations

from exactnorm.constructions.kinds.fixed import FixedMapRealizer
from exactnorm.model.operators import globalavgpool

__all__ = ["REALIZER"]

REALIZER = FixedMapRealizer(globalavgpool.NAME)
