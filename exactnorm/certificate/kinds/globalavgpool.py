"""The ``globalavgpool`` codec, version 2 (docs/certificate-format.md §8): target and frozen
layers ``{"kind": "globalavgpool", ["input",] "input_shape": [C, H, W], "activation":
"identity"}`` — a declared fixed map (the channel means), no weight, γ or β.

Its exact reading (:meth:`GlobalPoolCodec.target_from_json`, :meth:`~GlobalPoolCodec.
frozen_from_json`) is what :mod:`exactnorm.certificate.read_kinds` asks of a kind it has no branch
for, until one reader on the checker's records replaces it.
"""

from __future__ import annotations

from typing import Any

from exactnorm.model.kinds import globalavgpool
from exactnorm.model.kinds.globalavgpool import (
    FloatGlobalPoolLayer,
    FrozenGlobalPoolLayer,
    GlobalPoolTargetLayer,
)

__all__ = ["GlobalPoolCodec", "CODEC"]


class GlobalPoolCodec:
    """Codec of the ``globalavgpool`` kind (module doc)."""

    kind = globalavgpool.NAME
    since_version = 2

    def target_json(self, layer: GlobalPoolTargetLayer, compact: bool = False) -> dict[str, Any]:
        return {"kind": self.kind, "input_shape": list(layer.input_shape),
                "activation": "identity"}

    def frozen_json(self, layer: FrozenGlobalPoolLayer, j: int, version: int,
                    frozen_weights: str) -> dict[str, Any]:
        return {"kind": self.kind, "input": layer.input, "input_shape": list(layer.input_shape),
                "activation": "identity"}

    def float_layer(self, entry: dict[str, Any], j: int) -> FloatGlobalPoolLayer:
        return FloatGlobalPoolLayer(int(entry["input"]), tuple(entry["input_shape"]),
                                    str(entry["activation"]))

    def target_from_json(self, entry: dict[str, Any], what: str) -> GlobalPoolTargetLayer:
        return GlobalPoolTargetLayer(tuple(entry["input_shape"]), entry["activation"])

    def frozen_from_json(self, entry: dict[str, Any], what: str) -> FrozenGlobalPoolLayer:
        return FrozenGlobalPoolLayer(int(entry["input"]), tuple(entry["input_shape"]),
                                     entry["activation"])


CODEC = GlobalPoolCodec()
