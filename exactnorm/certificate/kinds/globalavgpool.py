"""The ``globalavgpool`` codec, version 2 (docs/certificate-format.md §8): target and frozen
layers ``{"kind": "globalavgpool", ["input",] "input_shape": [C, H, W], "activation":
"identity"}`` — a declared fixed map (the channel means), no weight, γ or β.

"""

from __future__ import annotations

from typing import Any

from exactnorm.certificate.kinds.records import Sources
from exactnorm.checker.records import FrozenRecord, TargetRecord
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

    def target_from_record(self, rec: TargetRecord) -> GlobalPoolTargetLayer:
        assert rec.shape is not None  # a global pooling's record
        return GlobalPoolTargetLayer(rec.shape, rec.act)

    def frozen_from_record(self, rec: FrozenRecord, j: int,
                           source: Sources) -> FrozenGlobalPoolLayer:
        assert rec.shape is not None  # a global pooling's record
        return FrozenGlobalPoolLayer(rec.input, rec.shape, rec.act)


CODEC = GlobalPoolCodec()
