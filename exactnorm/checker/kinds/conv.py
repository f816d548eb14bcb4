"""The checker's rules for the ``conv`` kind (docs/certificate-format.md §8, §10): a convolution
``σ(K * a + b)`` on a ``(C, H, W)`` value in C order, its kernel ``K`` a ``c_out × C·kh·kw``
matrix over the patch coordinates. Standard library only.

Layer fields: target ``{"kind": "conv", "input_shape", "kernel_shape", "stride", "padding",
"dilation"[, "group"], "weight", "bias", "activation"[, "input", "skip"]}``; frozen the same
window with ``"input", "weight"[, "source"], "gamma", "beta", "activation"[, "skip", "residual",
"stability"]}``, a skip a list of identity skips (:func:`..topology.conv_skips`). A grouped
convolution's kernel (``"group"`` G > 1: rows over one group's patch) is read as the
block-diagonal kernel of the whole patch (:func:`.window.whole_patch`), the record every later
rule reads; its frozen draw is regenerated while reading.

Rules. ``segment``: the first layer is a conv reading the segment input; a later conv reading
the segment input has the target's window (the segment input holds pixels, which only the
target's window turns into the patch coordinates every inner node is a map of); every other
layer is a pointwise conv on the first layer's output grid; no skip reads the segment input.
``identity``: the first layer's window is the target's (:func:`.window.same_window`), and the
checkpoint's kernel and bias equal the target's entry by entry. The stability family is the
family of patch boxes at every output position (:func:`..boxes.patch_family`); the next box is
the exact interval at every position (:func:`..boxes.affine_box`).

Correctness argument: the kernel equality with the same window gives the same value at every
position, borders included, because padding pixels are 0 on both sides.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..boxes import Box, affine_box, patch_family
from ..budget import Budget
from ..numbers import CertificateError
from ..provenance import Provenance
from ..records import FrozenRecord, TargetRecord
from ..schema import CONV_SKIP, LAYER_WEIGHT, NUMBERS, RESIDUAL, SOURCE, TARGET_SKIP, Key, Schema
from ..topology import conv_skips
from .affine import read_tuned, read_weighted_target, rule_checkpoint
from .base import Family, Kind
from .window import WINDOW_KEYS, read_geometry, read_group, same_window, whole_patch

__all__ = ["NAME", "Conv"]

#: the certificate's word for this kind (an entry of ``vocabulary.LAYER_KINDS``)
NAME = "conv"

#: the keys of a conv target layer and of a conv frozen layer (Appendix A)
TARGET_SCHEMA = Schema("target layer (conv)", Key("kind", "string", True), *WINDOW_KEYS,
                       Key("dilation", "array", True), Key("group", "integer", False),
                       Key("weight", "array or object", True, child=NUMBERS),
                       Key("bias", "array or object", True, child=NUMBERS),
                       Key("activation", "string", True), Key("input", "integer", False, 3),
                       Key("skip", "object", False, 3, child=TARGET_SKIP))
FROZEN_SCHEMA = Schema("frozen layer (conv)", Key("kind", "string", True),
                       Key("input", "integer", True), *WINDOW_KEYS,
                       Key("dilation", "array", True), Key("group", "integer", False),
                       Key("weight", "array or object", True, child=LAYER_WEIGHT),
                       Key("source", "object", False, child=SOURCE),
                       Key("gamma", "array or object", True, child=NUMBERS),
                       Key("beta", "array or object", True, child=NUMBERS),
                       Key("activation", "string", True),
                       Key("skip", "array", False, child=CONV_SKIP, each=True),
                       Key("residual", "object", False, 3, child=RESIDUAL),
                       Key("stability", "string", False))


def _no_pixel_skip(layer: FrozenRecord, j: int, i: int, seg_in: int) -> None:
    """Rule ``segment``: a skip inside a convolution segment reads a node inside it, never the
    segment input, whose pixels are no patch coordinates."""
    if any(s == seg_in for s, _ in layer.skips):
        raise CertificateError("segment", f"network layer {j}: a skip inside the convolution "
                                          f"segment of target layer {i} reads node {seg_in}, the "
                                          f"segment input (pixels, not patch coordinates); it "
                                          f"reads a node inside the segment", layer=j)


def _inner_conv(layer: FrozenRecord, j: int, i: int, seg_in: int, grid: tuple[int, int],
                tl: TargetRecord) -> None:
    """Rule ``segment`` for a layer after the first of the convolution segment of target layer
    ``i``."""
    if layer.kind != NAME:  # a dense or pooling layer has no 1x1 kernel on the grid
        raise CertificateError("segment", f"network layer {j} is a {layer.kind} layer inside the "
                                          f"convolution segment of target layer {i}: every "
                                          f"layer of a convolution segment is a conv layer",
                               layer=j)
    g, tg = layer.geom, tl.geom
    assert g is not None and tg is not None  # records of kinds with a window
    if layer.input == seg_in:
        if not g.same_window(tg):
            raise CertificateError("segment", f"network layer {j} reads node {seg_in}, the input "
                                              f"of the convolution segment of target layer {i}, "
                                              f"with {g.describe()}: a layer reading the segment "
                                              f"input has the target's window, "
                                              f"{tg.describe()}", layer=j)
    elif not g.pointwise() or grid != (g.H, g.W):
        raise CertificateError("segment", f"network layer {j}: inside the convolution segment "
                                          f"of target layer {i} a layer that does not read the "
                                          f"segment input is a 1x1 conv (stride 1, padding 0, "
                                          f"dilation 1) on the {grid[0]}x{grid[1]} output grid",
                               layer=j)
    _no_pixel_skip(layer, j, i, seg_in)


class Conv(Kind):
    """``conv``: a convolution."""

    name = NAME
    target_schema = TARGET_SCHEMA
    frozen_schema = FROZEN_SCHEMA

    def read_target(self, layer: dict, where: str, width: int,
                    max_digits: int) -> TargetRecord:
        geom = read_geometry(layer, where, width, False)
        one = read_group(layer, where, geom)
        rec = read_weighted_target(NAME, layer, where, one.patch, geom.Ho * geom.Wo,
                                   dataclasses.replace(geom, group=one.group), max_digits)
        assert rec.W is not None  # a weighted record
        return rec if one.group == 1 else rec._replace(W=whole_patch(rec.W, one, where))

    def read_frozen(self, layer: dict, where: str, j: int, src: int, dims: list[int],
                    prov: Provenance, max_digits: int) -> tuple[FrozenRecord, int]:
        geom = read_geometry(layer, where, dims[src], False)
        one = read_group(layer, where, geom)
        rec, full = read_tuned(NAME, layer, where, j, src, dims, prov, max_digits, one,
                               lambda n, full: conv_skips(layer, where, j, n, full, dims))
        if one.group == 1:
            return rec, full
        return rec._replace(V=whole_patch(rec.V, one, where, j, prov),
                            geom=dataclasses.replace(geom, group=one.group)), full

    def segment(self, layers: list[FrozenRecord], j: int, start: int, end: int, seg_in: int,
                tl: TargetRecord, i: int) -> None:
        layer = layers[j - 1]
        if j == start + 1:
            if layer.kind != NAME or layer.input != seg_in:
                raise CertificateError("segment", f"network layer {j}: a convolution segment "
                                                  f"(target layer {i}) starts with a conv "
                                                  f"layer reading node {seg_in}", layer=j)
            _no_pixel_skip(layer, j, i, seg_in)
        else:  # the first layer passed this rule: its output grid is every inner node's
            first = layers[start].geom
            assert first is not None  # a conv layer
            _inner_conv(layer, j, i, seg_in, (first.Ho, first.Wo), tl)

    def family(self, layers: list[FrozenRecord], start: int, tl: TargetRecord, i: int, box: Box,
               budget: Budget) -> Family | None:
        g = same_window(layers[start], tl, start + 1, i, "network layer")
        fam_lo, fam_hi = patch_family(box, g, budget, start + 1)
        return fam_lo, fam_hi, g.patch, g

    def folded(self, tl: TargetRecord, box: Box) -> list[int]:
        return []

    def identity(self, layer: FrozenRecord, plain: Any, tl: TargetRecord, j: int, i: int,
                 box: Box) -> None:
        rule_checkpoint(layer, plain, tl, j, i, box, [], "channels")

    def next_box(self, tl: TargetRecord, box: Box, budget: Budget, i: int,
                 skip: tuple[Any, Box] | None) -> Box:
        return affine_box(tl, box, budget, i, skip)
