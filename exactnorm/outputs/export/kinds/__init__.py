"""The exporters of the layer kinds, one module each, in one closed registry.

``EXPORTERS`` maps the certificate's ``kind`` word to the kind's pieces of the float exports
(:class:`~exactnorm.outputs.export.kinds.base.Exporter`: ONNX nodes, npz arrays, PyTorch modules
and their numpy evaluation); it is built from explicit imports, and
``tests/kinds/test_kind_contract.py`` demands that its keys equal the format's ``LAYER_KINDS``.

>>> sorted(EXPORTERS)
['avgpool', 'conv', 'dense', 'globalavgpool']
"""

from __future__ import annotations

from exactnorm.outputs.export.kinds import avgpool, conv, dense, globalavgpool
from exactnorm.outputs.export.kinds.base import Exporter

__all__ = ["EXPORTERS", "Exporter"]

#: kind word → its exporter
EXPORTERS: dict[str, Exporter] = {
    dense.EXPORTER.kind: dense.EXPORTER,
    conv.EXPORTER.kind: conv.EXPORTER,
    avgpool.EXPORTER.kind: avgpool.EXPORTER,
    globalavgpool.EXPORTER.kind: globalavgpool.EXPORTER,
}
