"""The checker's rules for the ``dense`` kind (docs/certificate-format.md §0, §2, §10): a layer
``σ(W a + b)``; the frozen layer ``σ(γ ⊙ (V a) + β)`` plus its post-activation skips. Standard
library only.

Layer fields: target ``{["kind": "dense",] "weight", "bias", "activation"[, "input", "skip"]}``;
frozen ``{["kind": "dense",] "input", "weight"[, "source"], "gamma", "beta", "activation"[,
"skip", "residual"]}``, a skip ``{"from", "kind", "weight"[, "source"]}`` of kind identity,
selection (checked to be what it claims: rule ``skip``) or random.

Rules: ``segment``: a dense segment holds dense layers only; the stability family is the box
itself (one position); ``identity``: the checkpoint's map equals ``(W, b)`` on the box, the
coordinates with lower = upper folded into the bias (:func:`.affine.rule_checkpoint`); the next
box is the exact interval of ``W a + b`` (:func:`..boxes.affine_box`).
"""

from __future__ import annotations

from typing import Any

from ..boxes import Box, affine_box
from ..budget import Budget
from ..numbers import CertificateError, field, index, show
from ..provenance import Draw, Provenance, rule_provenance, skip_role
from ..records import FrozenRecord, TargetRecord
from ..schema import (
    DENSE_SKIP,
    LAYER_WEIGHT,
    NUMBERS,
    RESIDUAL,
    SOURCE,
    TARGET_SKIP,
    Key,
    Schema,
)
from ..topology import Picks, compact_picks
from ..vocabulary import SKIP_KINDS
from .affine import read_tuned, read_weighted_target, rule_checkpoint
from .base import Family, Kind

__all__ = ["NAME", "Dense", "rule_skip_kind", "picks_of"]

#: the certificate's word for this kind (an entry of ``vocabulary.LAYER_KINDS``)
NAME = "dense"

#: the keys of a dense target layer and of a dense frozen layer (Appendix A)
TARGET_SCHEMA = Schema("target layer (dense)", Key("kind", "string", False),
                       Key("weight", "array or object", True, child=NUMBERS),
                       Key("bias", "array or object", True, child=NUMBERS),
                       Key("activation", "string", True), Key("input", "integer", False, 3),
                       Key("skip", "object", False, 3, child=TARGET_SKIP))
FROZEN_SCHEMA = Schema("frozen layer (dense)", Key("kind", "string", False),
                       Key("input", "integer", True),
                       Key("weight", "array or object", True, child=LAYER_WEIGHT),
                       Key("source", "object", False, child=SOURCE),
                       Key("gamma", "array or object", True, child=NUMBERS),
                       Key("beta", "array or object", True, child=NUMBERS),
                       Key("activation", "string", True),
                       Key("skip", "array", False, child=DENSE_SKIP, each=True),
                       Key("residual", "object", False, 3, child=RESIDUAL))


def picks_of(P: list[list], kind: str) -> Picks:
    """The picks of an explicit 0/1 matrix that :func:`rule_skip_kind` has accepted as
    ``kind``."""
    return Picks(tuple(next((t for t, x in enumerate(row) if x), None) for row in P), len(P[0]),
                 kind)


def rule_skip_kind(kind: object, P: list[list], where: str, layer: int) -> None:
    """A declared kind must be true of the matrix: identity is I, selection is 0/1 rows with
    at most one 1; random is any matrix."""
    if not isinstance(kind, str) or kind not in SKIP_KINDS:
        raise CertificateError("skip", f"{where}: kind {show(kind)} is not one of "
                                       f"{show(list(SKIP_KINDS))}", layer=layer)
    if kind == "identity":
        n = len(P)
        if len(P[0]) != n or any(P[r][c] != (1 if r == c else 0)
                                 for r in range(n) for c in range(n)):
            raise CertificateError("skip", f"{where}: kind identity but not an identity matrix",
                                   layer=layer)
    if kind == "selection":
        for r, row in enumerate(P):
            if any(x != 0 and x != 1 for x in row) or sum(row) > 1:
                raise CertificateError("skip", f"{where}: kind selection but row {r} is not "
                                               f"a 0/1 row with at most one 1", layer=layer)


def _skips(layer: dict, where: str, j: int, n: int, dims: list[int], prov: Provenance,
           max_digits: int) -> list[tuple[int, Any]]:
    """The post-activation skips of a dense layer of ``n`` rows: compact 0/1 skips as picks,
    explicit or drawn ones with their provenance (0/1 kinds checked and kept as picks)."""
    skips_raw = layer.get("skip", [])
    if not isinstance(skips_raw, list):
        raise CertificateError("skip", f"{where} skip must be a list", layer=j)
    skips: list[tuple[int, Any]] = []
    for t, s in enumerate(skips_raw):
        sw = f"{where} skip {t}"
        frm = index(field(s, "from", sw), f"{sw} from")
        if not 0 <= frm < j:
            raise CertificateError("segment", f"{sw} reads node {show(frm)}, not an earlier "
                                              f"node", layer=j)
        kind = field(s, "kind", sw)
        if not isinstance(kind, str) or kind not in SKIP_KINDS:
            raise CertificateError("skip", f"{sw}: kind {show(kind)} is not one of "
                                           f"{show(list(SKIP_KINDS))}", layer=j)
        weight = field(s, "weight", sw)
        if isinstance(weight, dict) and ({"identity"} <= set(weight)
                                         or {"selection"} <= set(weight)):
            if "source" in s:
                raise CertificateError("provenance", f"{sw}: a compact {kind} skip carries "
                                                     f"no source", layer=j)
            prov.explicit += 1
            skips.append((frm, compact_picks(weight, kind, sw, n, dims[frm], j)))
            continue
        P = rule_provenance(s, weight, kind, sw, j, skip_role(t), n, dims[frm], prov,
                            max_digits)
        if kind == "random":
            skips.append((frm, P))
            continue
        if isinstance(P, Draw):
            prov.charge_regeneration(P, j)
        rows = P.integers() if isinstance(P, Draw) and P.integral else \
            P.fractions() if isinstance(P, Draw) else \
            [[x if P.den == 1 else P.entry(r, c) for c, x in enumerate(row)]
             for r, row in enumerate(P.rows)]
        rule_skip_kind(kind, rows, sw, j)
        skips.append((frm, picks_of(rows, kind)))
    return skips


class Dense(Kind):
    """``dense``: a fully connected layer."""

    name = NAME
    target_schema = TARGET_SCHEMA
    frozen_schema = FROZEN_SCHEMA

    def read_target(self, layer: dict, where: str, width: int,
                    max_digits: int) -> TargetRecord:
        return read_weighted_target(NAME, layer, where, width, 1, None, max_digits)

    def read_frozen(self, layer: dict, where: str, j: int, src: int, dims: list[int],
                    prov: Provenance, max_digits: int) -> tuple[FrozenRecord, int]:
        return read_tuned(NAME, layer, where, j, src, dims, prov, max_digits, None,
                          lambda n, full: _skips(layer, where, j, n, dims, prov, max_digits))

    def segment(self, layers: list[FrozenRecord], j: int, start: int, end: int, seg_in: int,
                tl: TargetRecord, i: int) -> None:
        layer = layers[j - 1]
        if layer.kind != NAME:
            raise CertificateError("segment", f"network layer {j} is a {layer.kind} "
                                              f"layer inside the dense segment of target "
                                              f"layer {i}", layer=j)

    def family(self, layers: list[FrozenRecord], start: int, tl: TargetRecord, i: int, box: Box,
               budget: Budget) -> Family | None:
        return [[x] for x in box[0]], [[x] for x in box[1]], len(box[0]), None

    def folded(self, tl: TargetRecord, box: Box) -> list[int]:
        lo, hi, _ = box
        return [t for t in range(len(lo)) if lo[t] == hi[t]]

    def identity(self, layer: FrozenRecord, plain: Any, tl: TargetRecord, j: int, i: int,
                 box: Box) -> None:
        rule_checkpoint(layer, plain, tl, j, i, box, self.folded(tl, box), "width")

    def next_box(self, tl: TargetRecord, box: Box, budget: Budget, i: int,
                 skip: tuple[Any, Box] | None) -> Box:
        return affine_box(tl, box, budget, i, skip)
