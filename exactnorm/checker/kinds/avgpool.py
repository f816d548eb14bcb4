"""The checker's rules for the ``avgpool`` kind (docs/certificate-format.md §8): an average
pooling, a *fixed* linear map defined by its window alone (no padding, no dilation). Standard
library only.

Layer fields (target and frozen): ``{"kind": "avgpool", ["input": s,] "input_shape",
"kernel_shape", "stride", "padding": [0, 0], "activation": "identity"}``; no weight, γ, β or
skip.

Rules: ``segment``: the segment of an avgpool target layer is exactly one avgpool layer reading
the segment's input node; ``identity``: its window equals the target's (two average poolings
with the same window are the same map). The next box is the mean of each window's bounds, exact
because the map is monotone in every input (its coefficients are ``1/(kh·kw) > 0``).
"""

from __future__ import annotations

from operator import add
from typing import Any

from ..boxes import Box, box_bits, reduced_box
from ..budget import STEP, Budget, words
from ..numbers import CertificateError, activation, field
from ..provenance import Provenance
from ..records import FrozenRecord, TargetRecord
from ..schema import Key, Schema
from .base import Family, Kind
from .window import WINDOW_KEYS, read_geometry, same_window

__all__ = ["NAME", "AvgPool", "POOL_EXTRAS"]

#: the certificate's word for this kind (an entry of ``vocabulary.LAYER_KINDS``)
NAME = "avgpool"

#: fields a pooling layer never has (rule ``format``)
POOL_EXTRAS = ("weight", "gamma", "beta", "skip", "residual", "stability")

#: the keys of an avgpool target layer and of an avgpool frozen layer (Appendix A)
TARGET_SCHEMA = Schema("target layer (avgpool)", Key("kind", "string", True), *WINDOW_KEYS,
                       Key("dilation", "array", False), Key("activation", "string", True))
FROZEN_SCHEMA = Schema("frozen layer (avgpool)", Key("kind", "string", True),
                       Key("input", "integer", True), *WINDOW_KEYS,
                       Key("dilation", "array", False), Key("activation", "string", True))


class AvgPool(Kind):
    """``avgpool``: an average pooling."""

    name = NAME
    target_schema = TARGET_SCHEMA
    frozen_schema = FROZEN_SCHEMA

    def read_target(self, layer: dict, where: str, width: int,
                    max_digits: int) -> TargetRecord:
        geom = read_geometry(layer, where, width, True)
        act = activation(field(layer, "activation", where), where)
        if act != "identity":
            raise CertificateError("format", f"{where}: an avgpool layer has activation "
                                             f"identity")
        return TargetRecord(NAME, None, None, act, geom.C * geom.Ho * geom.Wo, geom)

    def read_frozen(self, layer: dict, where: str, j: int, src: int, dims: list[int],
                    prov: Provenance, max_digits: int) -> tuple[FrozenRecord, int]:
        geom = read_geometry(layer, where, dims[src], True)
        act = activation(field(layer, "activation", where), where)
        if act != "identity" or any(k in layer for k in POOL_EXTRAS):
            raise CertificateError("format", f"{where}: an avgpool layer has activation "
                                             f"identity and no weight, gamma, beta or skip "
                                             f"(nor residual or stability)", layer=j)
        prov.pools += 1
        return FrozenRecord(NAME, src, None, None, None, act, geom=geom), \
            geom.C * geom.Ho * geom.Wo

    def segment(self, layers: list[FrozenRecord], j: int, start: int, end: int, seg_in: int,
                tl: TargetRecord, i: int) -> None:
        layer = layers[j - 1]
        if end != start + 1 or layer.kind != NAME or layer.input != start:
            raise CertificateError("segment", f"network layer {start + 1}: the segment "
                                              f"of avgpool target layer {i} is one "
                                              f"avgpool layer reading node {start}",
                                   layer=start + 1)

    def family(self, layers: list[FrozenRecord], start: int, tl: TargetRecord, i: int, box: Box,
               budget: Budget) -> Family | None:
        return None

    def folded(self, tl: TargetRecord, box: Box) -> list[int]:
        return []

    def identity(self, layer: FrozenRecord, plain: Any, tl: TargetRecord, j: int, i: int,
                 box: Box) -> None:
        same_window(layer, tl, j, i, "checkpoint layer")

    def next_box(self, tl: TargetRecord, box: Box, budget: Budget, i: int,
                 skip: tuple[Any, Box] | None) -> Box:
        """The sums of each window's bounds over ``Q·kh·kw``, reduced."""
        where = f"target layer {i}"
        lo, hi, Q = box
        bits = box_bits(box)
        g = tl.geom
        assert g is not None  # an avgpool record has its window
        size = g.kh * g.kw
        out = g.C * g.Ho * g.Wo
        budget.size(2, out, None, bits + size.bit_length() + 1, where=where, what="its box")
        budget.work(2 * out * (size + 2) * (STEP + words(bits + size.bit_length())), None, where)
        out_lo: list[int] = []
        out_hi: list[int] = []
        span = g.sw * (g.Wo - 1) + 1
        for c in range(g.C):
            for y in range(g.Ho):
                # output row y: for each window offset (u, v) the strided slice of input row
                # y·sh + u starting at column v, summed slice by slice (no padding, §8)
                row_lo: list[int] = [0] * g.Wo
                row_hi: list[int] = [0] * g.Wo
                for u in range(g.kh):
                    base = (c * g.H + y * g.sh + u) * g.W
                    for v in range(g.kw):
                        start = base + v
                        row_lo = list(map(add, row_lo, lo[start:start + span:g.sw]))
                        row_hi = list(map(add, row_hi, hi[start:start + span:g.sw]))
                out_lo += row_lo
                out_hi += row_hi
        return reduced_box(out_lo, out_hi, Q * size, budget, where)
