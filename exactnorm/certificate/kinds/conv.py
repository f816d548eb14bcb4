"""The ``conv`` codec, versions 2 and 3 (docs/certificate-format.md §8).

Target ``{"kind": "conv", "input_shape", "kernel_shape", "stride", "padding", "dilation",
"weight", "bias", "activation"}`` with the ``c_out × C·kh·kw`` kernel matrix in exact numbers
(plain, or over one denominator when that is shorter); frozen ``{"kind": "conv", "input",
<geometry>, "weight": {"random": R}, "gamma", "beta", "activation"}`` with one γ and one β per
channel (compact numbers) and ``R`` a draw record of 4-d shape ``[c1, C, kh, kw]`` (the same
words as ``[c1, C·kh·kw]``; 2-d with its ``{"columns"}`` mask for a kernel that reads a block
of input channels), or the explicit matrix with ``R`` in ``source``. A frozen convolution with
post-activation skips writes ``"skip": [{"from", "kind", "weight"}]`` (identity skips in their
compact form ``{"identity": n}``), and one whose channels were made stable on the hull of the
patch boxes writes ``"stability": "hull"`` (absent means ``"positions"``; docs/certificate-format.md
§8).
"""

from __future__ import annotations

from typing import Any

from flint import fmpq_mat

from exactnorm.certificate.arrays import exact_numbers, frozen_array
from exactnorm.certificate.compact import (
    compact_skip,
    frozen_matrix_json,
    is_draw_record,
    numbers_json,
)
from exactnorm.certificate.kinds.records import (
    Sources,
    flint_matrix,
    flint_numbers,
    frozen_matrix,
    geometry,
)
from exactnorm.certificate.kinds.window import geometry_json, geometry_of
from exactnorm.checker.provenance import ROLE_WEIGHT
from exactnorm.checker.records import FrozenRecord, TargetRecord
from exactnorm.errors import InputError
from exactnorm.exact.linalg import compact_when_shorter, to_fractions
from exactnorm.exact.rationals import format_number
from exactnorm.model.kinds import conv
from exactnorm.model.kinds.base import Skip
from exactnorm.model.kinds.conv import ConvTargetLayer, FloatConvLayer, FrozenConvLayer
from exactnorm.model.routes import FloatIdentity, Route

__all__ = ["ConvCodec", "CODEC"]


class ConvCodec:
    """Codec of the ``conv`` kind (module doc)."""

    kind = conv.NAME
    since_version = 2

    def target_json(self, layer: ConvTargetLayer, compact: bool = False) -> dict[str, Any]:
        if compact:
            return {"kind": self.kind, **geometry_json(layer.geometry),
                    "weight": compact_when_shorter(fmpq_mat(layer.weight)),
                    "bias": compact_when_shorter(fmpq_mat([list(layer.bias)]), vector=True),
                    "activation": layer.activation}
        return {"kind": self.kind, **geometry_json(layer.geometry),
                "weight": [[format_number(x) for x in row] for row in to_fractions(layer.weight)],
                "bias": [format_number(x) for x in layer.bias], "activation": layer.activation}

    def frozen_json(self, layer: FrozenConvLayer, j: int, version: int,
                    frozen_weights: str) -> dict[str, Any]:
        if not is_draw_record(layer.record):
            raise InputError(f"frozen convolution {j} has no draw record")
        entry: dict[str, Any] = {"kind": self.kind, "input": layer.input,
                                 **geometry_json(layer.geometry)}
        frozen_matrix_json(entry, layer.weight, layer.record, f"frozen convolution {j}",
                           frozen_weights)
        entry.update(gamma=numbers_json(layer.gamma, True), beta=numbers_json(layer.beta, True),
                     activation=layer.activation)
        if layer.skips:
            skips = []
            for s in layer.skips:
                weight = compact_skip(s.weight, s.kind)
                if weight is None:
                    raise InputError(f"frozen convolution {j}: a skip of kind {s.kind} from node "
                                     f"{s.source} is not an identity or selection route")
                skips.append({"from": s.source, "kind": s.kind, "weight": weight})
            entry["skip"] = skips
        if layer.stability != "positions":  # the default is not written: older documents stay
            entry["stability"] = layer.stability
        return entry

    def float_layer(self, entry: dict[str, Any], j: int) -> FloatConvLayer:
        return FloatConvLayer(int(entry["input"]), geometry_of(entry),
                              frozen_array(entry, f"layer {j} weight", kernel=True),
                              exact_numbers(entry["gamma"], f"layer {j} gamma"),
                              exact_numbers(entry["beta"], f"layer {j} beta"),
                              str(entry["activation"]),
                              tuple((int(s["from"]), _float_skip(s, f"layer {j} skip weight"))
                                    for s in entry.get("skip", [])),
                              tuple(str(s["kind"]) for s in entry.get("skip", [])))

    def target_from_record(self, rec: TargetRecord) -> ConvTargetLayer:
        assert rec.W is not None and rec.b is not None and rec.geom is not None
        return ConvTargetLayer(geometry(rec.geom), fmpq_mat(flint_matrix(rec.W)),
                               flint_numbers(rec.b), rec.act)

    def frozen_from_record(self, rec: FrozenRecord, j: int,
                           source: Sources) -> FrozenConvLayer:
        assert rec.gamma is not None and rec.beta is not None and rec.geom is not None
        V, record = frozen_matrix(rec.V, source(j, ROLE_WEIGHT))
        mask = record.get("mask") if isinstance(record, dict) else None
        columns = mask.get("columns") if isinstance(mask, dict) else None
        g = geometry(rec.geom)
        # the checker keeps an identity skip on the channels; the model's is on the whole map
        width = len(rec.gamma) * rec.geom.Ho * rec.geom.Wo
        return FrozenConvLayer(rec.input, g, V, flint_numbers(rec.gamma),
                               flint_numbers(rec.beta), rec.act, record=record,
                               skips=tuple(Skip(frm, Route.identity(width), "identity")
                                           for frm, _ in rec.skips),
                               drawn_columns=None if columns is None else tuple(columns),
                               stability="hull" if rec.hull else "positions")


def _float_skip(skip: dict[str, Any], what: str) -> Any:
    """A skip's float matrix; an identity is not written out (:class:`FloatIdentity`)."""
    weight = skip.get("weight")
    if skip.get("kind") == "identity" and isinstance(weight, dict) \
            and set(weight) == {"identity"} and type(weight["identity"]) is int \
            and weight["identity"] >= 1:
        return FloatIdentity(weight["identity"])
    return frozen_array(skip, what)


CODEC = ConvCodec()
