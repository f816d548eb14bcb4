"""The certificate codecs of the layer kinds, one module each, in one closed registry.

``CODECS`` maps the certificate's ``kind`` word to its codec
(:class:`~exactnorm.certificate.kinds.base.Codec`); it is built from explicit imports, and
``tests/kinds/test_kind_contract.py`` demands that its keys equal the format's ``LAYER_KINDS``.

>>> sorted(CODECS), CODECS["conv"].since_version
(['avgpool', 'conv', 'dense'], 2)
"""

from __future__ import annotations

from exactnorm.certificate.kinds import avgpool, conv, dense
from exactnorm.certificate.kinds.base import Codec

__all__ = ["CODECS", "Codec"]

#: kind word → its codec
CODECS: dict[str, Codec] = {
    dense.CODEC.kind: dense.CODEC,
    conv.CODEC.kind: conv.CODEC,
    avgpool.CODEC.kind: avgpool.CODEC,
}
