"""The ``dense`` codec: ``{"weight", "bias", "activation"}`` targets (no ``kind`` field, the
default), frozen ``{"input", "weight", "gamma", "beta", "activation", "skip"}`` in versions 1
to 3 (docs/certificate-format.md §1–§5).

Version 1 writes plain lists and explicit frozen matrices; versions 2 and 3 write γ, β and
rational matrices as ``{"den", "num"}``, the target's weight and bias over one denominator when
that is shorter, each frozen random matrix by reference or explicitly with its draw record, and
0/1 skips in their compact form.
"""

from __future__ import annotations

from typing import Any

from flint import fmpq_mat

from exactnorm.certificate.arrays import frozen_array
from exactnorm.certificate.compact import (
    compact_skip,
    frozen_matrix_json,
    numbers_json,
    weight_json,
)
from exactnorm.certificate.kinds.records import (
    Sources,
    flint_matrix,
    flint_numbers,
    float_frozen,
    frozen_matrix,
    picks_matrix,
)
from exactnorm.checker.provenance import ROLE_WEIGHT, skip_role
from exactnorm.checker.records import FrozenRecord, TargetRecord
from exactnorm.checker.topology import Picks
from exactnorm.exact.linalg import compact_when_shorter, to_fractions
from exactnorm.exact.rationals import format_number
from exactnorm.model.layers import FloatLayer, FrozenLayer, TargetLayer
from exactnorm.model.operators import dense
from exactnorm.model.operators.dense import Dense
from exactnorm.model.routes import Skip

__all__ = ["DenseCodec", "CODEC"]

#: the first version whose γ, β and rational matrices are compact and whose matrices carry
#: records
COMPACT_VERSION = 2


class DenseCodec:
    """Codec of the ``dense`` kind (module doc)."""

    kind = dense.NAME
    since_version = 1

    def target_json(self, layer: TargetLayer, compact: bool = False) -> dict[str, Any]:
        if compact:
            return {"weight": compact_when_shorter(fmpq_mat(layer.weight)),
                    "bias": compact_when_shorter(fmpq_mat([list(layer.bias)]), vector=True),
                    "activation": layer.activation}
        return {"weight": [[format_number(x) for x in row] for row in to_fractions(layer.weight)],
                "bias": [format_number(x) for x in layer.bias],
                "activation": layer.activation}

    def frozen_json(self, layer: FrozenLayer, j: int, version: int,
                    frozen_weights: str) -> dict[str, Any]:
        compact = version >= COMPACT_VERSION
        entry: dict[str, Any] = {"input": layer.input}
        if version == 1:
            entry["weight"] = weight_json(layer.weight, compact=False)
        else:
            frozen_matrix_json(entry, layer.weight, layer.record, f"frozen layer {j}",
                               frozen_weights)
        entry.update(gamma=numbers_json(layer.gamma, compact),
                     beta=numbers_json(layer.beta, compact), activation=layer.activation)
        if layer.skips:
            skips = []
            for s in layer.skips:
                skip: dict[str, Any] = {"from": s.source, "kind": s.kind}
                if version >= COMPACT_VERSION and s.kind == "random":
                    frozen_matrix_json(skip, s.weight, s.record,
                                       f"random skip of frozen layer {j}", frozen_weights)
                else:
                    short = compact_skip(s.weight, s.kind) if compact else None
                    skip["weight"] = short if short is not None else weight_json(s.weight,
                                                                                 compact)
                skips.append(skip)
            entry["skip"] = skips
        return entry

    def float_layer(self, entry: dict[str, Any], j: int) -> FloatLayer:
        return float_frozen(entry, j, Dense(frozen_array(entry, f"layer {j} weight")))

    def target_from_record(self, rec: TargetRecord) -> TargetLayer:
        assert rec.W is not None and rec.b is not None  # a weighted kind's record
        return TargetLayer(Dense(fmpq_mat(flint_matrix(rec.W))), flint_numbers(rec.b), rec.act)

    def frozen_from_record(self, rec: FrozenRecord, j: int, source: Sources) -> FrozenLayer:
        assert rec.gamma is not None and rec.beta is not None  # a tuned kind's record
        skips = []
        for t, (frm, P) in enumerate(rec.skips):
            if isinstance(P, Picks):  # identity or selection (checked to be what it claims)
                skips.append(Skip(frm, picks_matrix(P), P.kind))
            else:  # random: drawn, or explicit with its record
                M, record = frozen_matrix(P, source(j, skip_role(t)))
                skips.append(Skip(frm, M, "random", record=record))
        V, record = frozen_matrix(rec.V, source(j, ROLE_WEIGHT))
        return FrozenLayer(rec.input, Dense(V), flint_numbers(rec.gamma),
                           flint_numbers(rec.beta), rec.act, tuple(skips), record=record)


CODEC = DenseCodec()
