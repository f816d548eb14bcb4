"""The layer kinds of the model, one module each, in one closed registry.

``KINDS`` maps the certificate's ``kind`` word to the kind's target, frozen and float layer
classes. It is built from explicit imports (no registration by decorators or import side
effects), so reading this file lists every kind; ``tests/kinds/test_kind_contract.py`` demands
that its keys equal the format's ``LAYER_KINDS`` and runs one contract suite for each. What a
kind implements is declared in :mod:`exactnorm.model.kinds.base`.

>>> sorted(KINDS)
['avgpool', 'conv', 'dense', 'globalavgpool']
"""

from __future__ import annotations

from exactnorm.model.kinds import avgpool, conv, dense, globalavgpool
from exactnorm.model.kinds.avgpool import FloatPoolLayer, FrozenPoolLayer, PoolTargetLayer
from exactnorm.model.kinds.base import FloatKind, FrozenKind, LayerKind, Skip, TargetKind
from exactnorm.model.kinds.conv import ConvTargetLayer, FloatConvLayer, FrozenConvLayer
from exactnorm.model.kinds.dense import FloatLayer, FrozenLayer, TargetLayer
from exactnorm.model.kinds.globalavgpool import (
    FloatGlobalPoolLayer,
    FrozenGlobalPoolLayer,
    GlobalPoolTargetLayer,
)
from exactnorm.model.kinds.window import ConvGeometry

__all__ = ["KINDS", "LayerKind", "TargetKind", "FrozenKind", "FloatKind", "Skip",
           "ConvGeometry", "TargetLayer", "FrozenLayer", "FloatLayer", "ConvTargetLayer",
           "FrozenConvLayer", "FloatConvLayer", "PoolTargetLayer", "FrozenPoolLayer",
           "FloatPoolLayer", "GlobalPoolTargetLayer", "FrozenGlobalPoolLayer",
           "FloatGlobalPoolLayer"]

#: kind word → its layer classes (the format's LAYER_KINDS, each implemented once)
KINDS: dict[str, LayerKind] = {
    dense.NAME: dense.KIND,
    conv.NAME: conv.KIND,
    avgpool.NAME: avgpool.KIND,
    globalavgpool.NAME: globalavgpool.KIND,
}
