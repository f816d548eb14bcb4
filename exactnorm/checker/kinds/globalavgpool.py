"""The checker's rules for the ``globalavgpool`` kind (docs/certificate-format.md §8). Standard
library only.

A ``globalavgpool`` layer maps a value of tensor shape ``(C, H, W)`` (C order) to its ``C``
channel means. It is a *fixed* linear map: nothing in it is tuned or drawn, and it is defined by
its ``input_shape`` alone.

Layer fields (target and frozen): ``{"kind": "globalavgpool", ["input": s,] "input_shape":
[C, H, W], "activation": "identity"}``; no ``weight``, ``gamma``, ``beta`` or ``skip``.

Rules (the names of the verdict):

* ``shape``: ``input_shape`` is three integers from 1 below 2^31 whose product is the width of
  the value read (the previous target layer, the frozen node ``input``);
* ``format``: ``activation`` is ``identity``, and a frozen layer has no weight, γ, β or skip;
* ``segment`` (applied while reading, :func:`..document.rule_segments`): the segment of a
  ``globalavgpool`` target layer is exactly one frozen ``globalavgpool`` layer reading the
  segment's input node, whose ``input_shape`` equals the target layer's (rule ``identity``,
  named there; the walk checks it again at the checkpoint).

Lemma (the identity rule). Two global average poolings with the same ``input_shape`` are the same
map (the map is determined by the shape), so the checkpoint equals the target layer on every
input, and on the box in particular. The next box (:meth:`GlobalAvgPool.next_box`) is the
per-channel mean of the bounds, exact because the map is monotone in every input (its
coefficients are ``1/(H·W) > 0``): the minimum over a box is at the lower corner, the maximum at
the upper one.
"""

from __future__ import annotations

from typing import Any

from ..boxes import Box, box_bits, reduced_box
from ..budget import STEP, Budget, words
from ..numbers import CertificateError, field, show
from ..provenance import Provenance
from ..records import FrozenRecord, TargetRecord
from ..schema import Key, Schema
from .base import Family, Kind

__all__ = ["NAME", "GlobalAvgPool"]

#: the certificate's word for this kind (an entry of ``vocabulary.LAYER_KINDS``)
NAME = "globalavgpool"

#: the keys of a globalavgpool target layer and of a globalavgpool frozen layer (Appendix A)
TARGET_SCHEMA = Schema("target layer (globalavgpool)", Key("kind", "string", True),
                       Key("input_shape", "array", True), Key("activation", "string", True))
FROZEN_SCHEMA = Schema("frozen layer (globalavgpool)", Key("kind", "string", True),
                       Key("input", "integer", True), Key("input_shape", "array", True),
                       Key("activation", "string", True))


def _shape(layer: dict, where: str, width: int, j: int | None) -> tuple[int, int, int]:
    shape = field(layer, "input_shape", where)
    if not isinstance(shape, list) or len(shape) != 3 or \
            any(type(x) is not int or not 1 <= x < 1 << 31 for x in shape):
        raise CertificateError("shape", f"{where}: input_shape must be three positive integers "
                                        f"[C, H, W], got {show(shape)}", layer=j)
    C, H, W = shape
    if width != C * H * W:
        raise CertificateError("shape", f"{where}: input_shape {C}x{H}x{W} has {C * H * W} "
                                        f"values, the value it reads has width {width}", layer=j)
    return C, H, W


def _identity(layer: dict, where: str, j: int | None) -> str:
    act = field(layer, "activation", where)
    if act != "identity":
        raise CertificateError("format", f"{where}: a globalavgpool layer has activation "
                                         f"identity, got {show(act)}", layer=j)
    return "identity"


def _read_target(layer: dict, where: str, width: int) -> TargetRecord:
    """A target layer reading a value of ``width`` entries, as the walk's record."""
    shape = _shape(layer, where, width, None)
    return TargetRecord(NAME, None, None, _identity(layer, where, None), shape[0],
                        shape=shape)


def _read_frozen(layer: dict, where: str, j: int, src: int, width: int) -> FrozenRecord:
    """Frozen layer ``j`` reading node ``src`` of ``width`` entries, as the walk's record."""
    act = _identity(layer, where, j)
    if any(k in layer for k in ("weight", "gamma", "beta", "skip", "residual", "stability")):
        raise CertificateError("format", f"{where}: a globalavgpool layer has no weight, gamma, "
                                         f"beta or skip (nor residual or stability)", layer=j)
    return FrozenRecord(NAME, src, None, None, None, act, shape=_shape(layer, where, width, j))


def _check_segment(layers: list[FrozenRecord], start: int, end: int, tl: TargetRecord,
                   i: int) -> None:
    """Rules ``segment`` and ``identity`` of a globalavgpool target layer ``i`` whose segment
    is frozen layers ``start + 1 … end``."""
    layer = layers[end - 1]
    if end != start + 1 or layer.kind != NAME or layer.input != start:
        raise CertificateError("segment", f"network layer {start + 1}: the segment of "
                                          f"globalavgpool target layer {i} is one globalavgpool "
                                          f"layer reading node {start}", layer=start + 1)
    _same_shape(layer, tl, end, i)


def _same_shape(layer: FrozenRecord, tl: TargetRecord, j: int, i: int) -> None:
    """Rule ``identity`` at checkpoint ``j``: the same ``input_shape`` as target layer ``i``."""
    if layer.shape != tl.shape:
        mine, theirs = ("x".join(map(str, s or ())) for s in (layer.shape, tl.shape))
        raise CertificateError("identity", f"checkpoint layer {j}: global pooling of {mine}, "
                                           f"target layer {i} pools {theirs}", layer=j)


def _channel_sums(layer: TargetRecord, box: Box) -> Box:
    """The box of the channel means: the sums of each channel's bounds over ``Q·H·W`` (module
    doc), not reduced."""
    lo, hi, Q = box
    assert layer.shape is not None  # a global pooling's record has its shape
    C, H, W = layer.shape
    n = H * W
    return ([sum(lo[c * n:(c + 1) * n]) for c in range(C)],
            [sum(hi[c * n:(c + 1) * n]) for c in range(C)], Q * n)


class GlobalAvgPool(Kind):
    """``globalavgpool``: a global average pooling."""

    name = NAME
    target_schema = TARGET_SCHEMA
    frozen_schema = FROZEN_SCHEMA

    def read_target(self, layer: dict, where: str, width: int,
                    max_digits: int) -> TargetRecord:
        return _read_target(layer, where, width)

    def read_frozen(self, layer: dict, where: str, j: int, src: int, dims: list[int],
                    prov: Provenance, max_digits: int) -> tuple[FrozenRecord, int]:
        rec = _read_frozen(layer, where, j, src, dims[src])
        prov.pools += 1
        assert rec.shape is not None  # read by _shape
        return rec, rec.shape[0]

    def segment(self, layers: list[FrozenRecord], j: int, start: int, end: int, seg_in: int,
                tl: TargetRecord, i: int) -> None:
        _check_segment(layers, start, end, tl, i)

    def family(self, layers: list[FrozenRecord], start: int, tl: TargetRecord, i: int, box: Box,
               budget: Budget) -> Family | None:
        return None

    def folded(self, tl: TargetRecord, box: Box) -> list[int]:
        return []

    def identity(self, layer: FrozenRecord, plain: Any, tl: TargetRecord, j: int, i: int,
                 box: Box) -> None:
        _same_shape(layer, tl, j, i)

    def next_box(self, tl: TargetRecord, box: Box, budget: Budget, i: int,
                 skip: tuple[Any, Box] | None) -> Box:
        where = f"target layer {i}"
        bits = box_bits(box)
        assert tl.shape is not None  # a global pooling's record has its shape
        C, H, W = tl.shape
        n = H * W
        budget.size(2, C, None, bits + n.bit_length() + 1, where=where, what="its box")
        budget.work(2 * C * (n + 2) * (STEP + words(bits + n.bit_length())), None, where)
        return reduced_box(*_channel_sums(tl, box), budget, where)
