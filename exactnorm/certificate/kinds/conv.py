"""The ``conv`` codec, versions 2 and 3 (docs/certificate-format.md §8).

Target ``{"kind": "conv", "input_shape", "kernel_shape", "stride", "padding", "dilation"[,
"group"], "weight", "bias", "activation"}`` with the ``c_out × (C/group)·kh·kw`` kernel matrix in
exact numbers (plain, or over one denominator when that is shorter); frozen ``{"kind": "conv",
"input", <geometry>[, "group"], "weight": {"random": R}, "gamma", "beta", "activation"}`` with
one γ and one β per channel (compact numbers) and ``R`` a draw record of 4-d shape ``[c1,
C/group, kh, kw]`` (the same words as ``[c1, (C/group)·kh·kw]``; 2-d with its ``{"columns"}``
mask for a kernel that reads a block of input channels), or the explicit matrix with ``R`` in
``source``. ``"group"`` is written for a grouped convolution only (absent means 1). A frozen
convolution with post-activation skips writes ``"skip": [{"from", "kind", "weight"}]`` (identity
skips in their compact form ``{"identity": n}``), and one whose channels were made stable on the
hull of the patch boxes writes ``"stability": "hull"`` (absent means ``"positions"``).

The checker reads a grouped kernel as the block-diagonal kernel of the whole patch; the reader
takes each output group's block back (:func:`_blocks`), the matrix that was written.
"""

from __future__ import annotations

from typing import Any

from flint import fmpq_mat

from exactnorm.certificate.arrays import frozen_array
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
    float_frozen,
    frozen_matrix,
    geometry,
)
from exactnorm.certificate.kinds.window import geometry_json, geometry_of
from exactnorm.checker.provenance import ROLE_WEIGHT
from exactnorm.checker.records import FrozenRecord, TargetRecord
from exactnorm.errors import InputError
from exactnorm.exact.linalg import FlintMatrix, compact_when_shorter, to_fractions
from exactnorm.exact.rationals import format_number
from exactnorm.model.layers import FloatLayer, FrozenLayer, TargetLayer
from exactnorm.model.operators import conv
from exactnorm.model.operators.conv import Conv
from exactnorm.model.routes import Route, Skip

__all__ = ["ConvCodec", "CODEC"]


def _window(op: Conv) -> dict[str, Any]:
    return {**geometry_json(op.geometry), **({"group": op.groups} if op.groups > 1 else {})}


def _blocks(M: FlintMatrix, groups: int) -> FlintMatrix:
    """Output group ``k``'s rows of a block-diagonal kernel on its columns of group ``k``: the
    ``c_out × (C/G)·kh·kw`` kernel of a grouped convolution (``M`` itself for one group)."""
    if groups == 1:
        return M
    rows, cols = M.nrows(), M.ncols()
    per, width = rows // groups, cols // groups
    kind: Any = type(M)
    return kind([[M[r, (r // per) * width + t] for t in range(width)] for r in range(rows)])


class ConvCodec:
    """Codec of the ``conv`` kind (module doc)."""

    kind = conv.NAME
    since_version = 2

    def target_json(self, layer: TargetLayer, compact: bool = False) -> dict[str, Any]:
        op = layer.operator
        assert isinstance(op, Conv)
        if compact:
            return {"kind": self.kind, **_window(op),
                    "weight": compact_when_shorter(fmpq_mat(op.weight)),
                    "bias": compact_when_shorter(fmpq_mat([list(layer.bias)]), vector=True),
                    "activation": layer.activation}
        return {"kind": self.kind, **_window(op),
                "weight": [[format_number(x) for x in row] for row in to_fractions(op.weight)],
                "bias": [format_number(x) for x in layer.bias], "activation": layer.activation}

    def frozen_json(self, layer: FrozenLayer, j: int, version: int,
                    frozen_weights: str) -> dict[str, Any]:
        op = layer.operator
        assert isinstance(op, Conv)
        if not is_draw_record(layer.record):
            raise InputError(f"frozen convolution {j} has no draw record")
        entry: dict[str, Any] = {"kind": self.kind, "input": layer.input, **_window(op)}
        frozen_matrix_json(entry, op.weight, layer.record, f"frozen convolution {j}",
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

    def float_layer(self, entry: dict[str, Any], j: int) -> FloatLayer:
        return float_frozen(entry, j, Conv(geometry_of(entry),
                                           frozen_array(entry, f"layer {j} weight", kernel=True),
                                           int(entry.get("group", 1))))

    def target_from_record(self, rec: TargetRecord) -> TargetLayer:
        assert rec.W is not None and rec.b is not None and rec.geom is not None
        G = rec.geom.group
        return TargetLayer(Conv(geometry(rec.geom), _blocks(fmpq_mat(flint_matrix(rec.W)), G), G),
                           flint_numbers(rec.b), rec.act)

    def frozen_from_record(self, rec: FrozenRecord, j: int, source: Sources) -> FrozenLayer:
        assert rec.gamma is not None and rec.beta is not None and rec.geom is not None
        V, record = frozen_matrix(rec.V, source(j, ROLE_WEIGHT))
        mask = record.get("mask") if isinstance(record, dict) else None
        columns = mask.get("columns") if isinstance(mask, dict) else None
        G = rec.geom.group
        # the checker keeps an identity skip on the channels; the model's is on the whole map
        width = len(rec.gamma) * rec.geom.Ho * rec.geom.Wo
        return FrozenLayer(rec.input, Conv(geometry(rec.geom), _blocks(V, G), G),
                           flint_numbers(rec.gamma), flint_numbers(rec.beta), rec.act,
                           tuple(Skip(frm, Route.identity(width), "identity")
                                 for frm, _ in rec.skips), record,
                           None if columns is None else tuple(columns),
                           "hull" if rec.hull else "positions")


CODEC = ConvCodec()
