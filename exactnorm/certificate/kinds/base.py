"""What a layer kind's certificate codec must implement (docs/certificate-format.md §8).

A codec writes one target layer and one frozen layer of its kind as the JSON objects of the
``target`` and ``network`` sections; the document frame (:mod:`exactnorm.certificate.write`) is
kind-free and asks the codec of each layer's ``kind``. ``since_version`` is the first format
version with the kind; the frame refuses an older version before writing anything.

``float_layer`` reads one frozen layer of the ``network`` section as the kind's float copy
(:class:`~exactnorm.model.layers.FloatLayer`: frozen entries float64, γ and β exact) for the
float view (:func:`~exactnorm.certificate.float_read.float_network`) that the exports, the report
and the data study use; it builds no exact matrix (:mod:`~exactnorm.certificate.arrays`).

``target_from_record`` and ``frozen_from_record`` build the exact model layer from the checker's
typed record of it (:mod:`exactnorm.checker.records`): the document is parsed and validated once,
by the checker's reader, and the package's exact reader
(:mod:`exactnorm.certificate.read_kinds`) only changes representation
(:mod:`exactnorm.certificate.kinds.records`).
"""

from __future__ import annotations

from typing import Any, Protocol

from exactnorm.certificate.kinds.records import Sources
from exactnorm.checker.records import FrozenRecord, TargetRecord
from exactnorm.model.layers import FloatLayer, FrozenLayer, TargetLayer

__all__ = ["Codec"]


class Codec(Protocol):
    """A kind's certificate encoding."""

    @property
    def kind(self) -> str: ...

    @property
    def since_version(self) -> int: ...

    # plain exact numbers, or (``compact``) each vector and matrix over one denominator when
    # that is shorter (:func:`~exactnorm.exact.linalg.compact_when_shorter`)
    def target_json(self, layer: TargetLayer, compact: bool = False) -> dict[str, Any]: ...

    def frozen_json(self, layer: FrozenLayer, j: int, version: int,
                    frozen_weights: str) -> dict[str, Any]: ...

    # the float copy around the kind's operator (the frame: records.float_frozen)
    def float_layer(self, entry: dict[str, Any], j: int) -> FloatLayer: ...

    # the exact layers of the checker's records; ``source(j, role)`` is the draw record or
    # fixed declaration of an explicit matrix
    def target_from_record(self, rec: TargetRecord) -> TargetLayer: ...

    def frozen_from_record(self, rec: FrozenRecord, j: int, source: Sources) -> FrozenLayer: ...
