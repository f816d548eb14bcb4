"""What a layer kind's certificate codec must implement (docs/certificate-format.md §8).

A codec writes one target layer and one frozen layer of its kind as the JSON objects of the
``target`` and ``network`` sections; the document frame (:mod:`exactnorm.certificate.write`) is
kind-free and asks the codec of each layer's ``kind``. ``since_version`` is the first format
version with the kind; the frame refuses an older version before writing anything.

``float_layer`` reads one frozen layer of the ``network`` section as the kind's float copy
(:class:`~exactnorm.model.kinds.base.FloatKind`: frozen entries float64, γ and β exact) for the
float view (:func:`~exactnorm.certificate.float_read.float_network`) that the exports, the report
and the data study use; it builds no exact matrix (:mod:`~exactnorm.certificate.arrays`). Exact
reading stays with the readers of :mod:`exactnorm.certificate.read` for now (one reader, built on
the checker's records, is a later step).
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["Codec"]


class Codec(Protocol):
    """A kind's certificate encoding."""

    @property
    def kind(self) -> str: ...

    @property
    def since_version(self) -> int: ...

    # plain exact numbers, or (``compact``) each vector and matrix over one denominator when
    # that is shorter (:func:`~exactnorm.exact.linalg.compact_when_shorter`)
    def target_json(self, layer: Any, compact: bool = False) -> dict[str, Any]: ...

    def frozen_json(self, layer: Any, j: int, version: int,
                    frozen_weights: str) -> dict[str, Any]: ...

    def float_layer(self, entry: dict[str, Any], j: int) -> Any: ...   # a FloatKind
