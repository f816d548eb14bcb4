"""The certificate codecs of the layer kinds, one module each, in one closed registry.

``CODECS`` maps the certificate's ``kind`` word to its codec
(:class:`~exactnorm.certificate.kinds.base.Codec`); it is built from explicit imports, and
``tests/kinds/test_kind_contract.py`` demands that its keys equal the format's ``LAYER_KINDS``.

>>> sorted(CODECS), CODECS["conv"].since_version
(['avgpool', 'conv', 'dense', 'globalavgpool'], 2)
"""

from __future__ import annotations

from typing import Any

from exactnorm.certificate.kinds import avgpool, conv, dense, globalavgpool
from exactnorm.certificate.kinds.base import Codec
from exactnorm.errors import InputError

__all__ = ["CODECS", "Codec", "kind_of"]

#: kind word → its codec
CODECS: dict[str, Codec] = {
    dense.CODEC.kind: dense.CODEC,
    conv.CODEC.kind: conv.CODEC,
    avgpool.CODEC.kind: avgpool.CODEC,
    globalavgpool.CODEC.kind: globalavgpool.CODEC,
}


def kind_of(entry: Any) -> str:
    """The ``kind`` word of a layer entry of a certificate (absent: the dense kind)."""
    kind = entry.get("kind", dense.CODEC.kind) if isinstance(entry, dict) else None
    if kind not in CODECS:
        raise InputError(f"unknown layer kind {str(kind)[:40]!r}; known: {', '.join(CODECS)}")
    return kind
