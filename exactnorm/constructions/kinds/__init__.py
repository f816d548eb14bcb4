"""The realizers of the layer kinds, one module each, in one closed registry.

``REALIZERS`` maps the certificate's ``kind`` word to the object that claims, plans and realizes
runs of that kind (:class:`~exactnorm.constructions.kinds.base.Realizer`); it is built from
explicit imports, and ``tests/kinds/test_kind_contract.py`` demands that its keys equal the
format's ``LAYER_KINDS``.

>>> sorted(REALIZERS)
['avgpool', 'conv', 'dense', 'globalavgpool']
"""

from __future__ import annotations

from exactnorm.constructions.kinds import avgpool, conv, dense, globalavgpool
from exactnorm.constructions.kinds.base import Realizer

__all__ = ["REALIZERS", "COMPOSITE", "COMPOSITE_SHIFT_MODE"]

#: kind word → its realizer
REALIZERS: dict[str, Realizer] = {
    dense.REALIZER.kind: dense.REALIZER,
    conv.REALIZER.kind: conv.REALIZER,
    avgpool.REALIZER.kind: avgpool.REALIZER,
    globalavgpool.REALIZER.kind: globalavgpool.REALIZER,
}

#: the provenance name of a construction realized run by run (a target of several kinds, or of
#: a kind without whole-target constructions); format version 2 introduced such constructions
#: with convolutions and named them so (the checker ignores the name)
COMPOSITE = conv.REALIZER.kind
#: activating shifts of such a construction unless given: per-channel and per-neuron smallest
#: shifts rounded up to integers, so that β stays a few digits next to Γ
COMPOSITE_SHIFT_MODE = conv.DEFAULT_CONV_SHIFT_MODE
