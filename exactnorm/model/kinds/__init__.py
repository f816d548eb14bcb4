"""The layer kinds of the model, one module each, in one closed registry.

``KINDS`` maps the certificate's ``kind`` word to the kind's target and frozen layer classes. It
is built from explicit imports (no registration by decorators or import side effects), so reading
this file lists every kind; ``tests/kinds/test_kind_contract.py`` demands that its keys equal the
format's ``LAYER_KINDS`` and runs one contract suite for each. What a kind implements is declared
in :mod:`exactnorm.model.kinds.base`.

>>> sorted(KINDS)
['avgpool', 'conv', 'dense']
"""

from __future__ import annotations

from exactnorm.model.kinds import avgpool, conv, dense
from exactnorm.model.kinds.avgpool import FrozenPoolLayer, PoolTargetLayer
from exactnorm.model.kinds.base import FrozenKind, LayerKind, Skip, TargetKind
from exactnorm.model.kinds.conv import ConvTargetLayer, FrozenConvLayer
from exactnorm.model.kinds.dense import FrozenLayer, TargetLayer
from exactnorm.model.kinds.window import ConvGeometry

__all__ = ["KINDS", "LayerKind", "TargetKind", "FrozenKind", "Skip", "ConvGeometry",
           "TargetLayer", "FrozenLayer", "ConvTargetLayer", "FrozenConvLayer",
           "PoolTargetLayer", "FrozenPoolLayer"]

#: kind word → its layer classes (the format's LAYER_KINDS, each implemented once)
KINDS: dict[str, LayerKind] = {
    dense.NAME: dense.KIND,
    conv.NAME: conv.KIND,
    avgpool.NAME: avgpool.KIND,
}
