"""The window of a convolution or pooling layer (docs/certificate-format.md §8), shared by the
``conv`` and ``avgpool`` kinds: its reading (rule ``shape``, rule ``limit``) and its comparison
with the target's (rule ``identity``); a grouped convolution's ``group`` and its kernel read as
the block-diagonal kernel of the whole patch (:func:`read_group`, :func:`whole_patch`). Standard
library only.

Correctness argument (groups). With ``G`` groups, output channel ``o`` of group
``k = o // (c_out/G)`` reads the patch coordinates of input channels ``k·C/G … (k+1)·C/G − 1``
only, which are the consecutive coordinates ``k·d … (k+1)·d − 1`` of the whole patch
(``d = (C/G)·kh·kw``, patch order ``c·kh·kw + u·kw + v``). The written row ``o`` (``d``
entries) placed at those columns, zeros elsewhere, is therefore the row of the ungrouped kernel
with the same map; every later rule reads that kernel.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..numbers import CertificateError, IntMatrix, field, over_one_denominator, show
from ..provenance import Draw
from ..records import FrozenRecord, Geometry, TargetRecord
from ..schema import Key
from ..vocabulary import MAX_MAP_ENTRIES

__all__ = ["Geometry", "read_geometry", "same_window", "read_group", "whole_patch",
           "WINDOW_KEYS"]

#: the keys of a window every conv and avgpool layer has (its ``dilation`` is the kind's row)
WINDOW_KEYS = (Key("input_shape", "array", True), Key("kernel_shape", "array", True),
               Key("stride", "array", True), Key("padding", "array", True))


def _pair(value: object, where: str, name: str, least: int) -> tuple[int, int]:
    if not isinstance(value, list) or len(value) != 2 or \
            any(type(x) is not int or not least <= x < 1 << 31 for x in value):
        raise CertificateError("shape", f"{where}: {name} must be two integers from {least} "
                                        f"below 2^31, got {show(value)}")
    return value[0], value[1]


def read_geometry(layer: dict, where: str, width: int, pooling: bool) -> Geometry:
    """The window of a conv or (``pooling``) avgpool layer; input_shape must multiply to
    ``width``. A pooling window has no padding and no dilation."""
    shape = field(layer, "input_shape", where)
    if not isinstance(shape, list) or len(shape) != 3 or \
            any(type(x) is not int or not 1 <= x < 1 << 31 for x in shape):
        raise CertificateError("shape", f"{where}: input_shape must be three positive integers "
                                        f"[C, H, W], got {show(shape)}")
    C, H, W = shape
    if width != C * H * W:
        raise CertificateError("shape", f"{where}: input_shape {C}x{H}x{W} has {C * H * W} "
                                        f"values, the node it reads has width {width}")
    kh, kw = _pair(field(layer, "kernel_shape", where), where, "kernel_shape", 1)
    sh, sw = _pair(field(layer, "stride", where), where, "stride", 1)
    ph, pw = _pair(field(layer, "padding", where), where, "padding", 0)
    if pooling:
        if "dilation" in layer and layer["dilation"] != [1, 1]:
            raise CertificateError("shape", f"{where}: an avgpool layer has dilation [1, 1]")
        if (ph, pw) != (0, 0):
            raise CertificateError("shape", f"{where}: an avgpool layer has padding [0, 0], "
                                            f"got {show([ph, pw])}")
        dh = dw = 1
    else:
        dh, dw = _pair(field(layer, "dilation", where), where, "dilation", 1)
    g = Geometry(C, H, W, kh, kw, sh, sw, ph, pw, dh, dw)
    if g.Ho < 1 or g.Wo < 1:
        raise CertificateError("shape", f"{where}: {g.describe()} has no output position")
    if g.patch * g.Ho * g.Wo > MAX_MAP_ENTRIES:
        raise CertificateError("limit", f"{where}: {g.patch} patch coordinates at {g.Ho * g.Wo} "
                                        f"positions exceed this checker's limit "
                                        f"{MAX_MAP_ENTRIES}")
    return g


def same_window(layer: FrozenRecord, tl: TargetRecord, j: int, i: int, what: str) -> Geometry:
    """Rule ``identity`` for a window: the first layer of a convolution segment, and the pooling
    layer of a pooling segment, read the segment input through the target's window (input shape,
    kernel, stride, padding, dilation). Which nodes they read is rule ``segment``, applied before
    the walk (:func:`..document.rule_segments`)."""
    g, tg = layer.geom, tl.geom
    assert g is not None and tg is not None  # records of kinds with a window
    if not g.same_window(tg):
        raise CertificateError("identity", f"{what} {j}: {g.describe()}, target layer {i} "
                                           f"has {tg.describe()}", layer=j)
    return g


def read_group(layer: dict, where: str, g: Geometry) -> Geometry:
    """Rule ``shape``: a conv layer's ``"group"``, absent (1) or an integer ``G ≥ 1`` dividing
    the input channels; the window of one group (``C/G`` input channels), whose patch is what
    each output row of the layer's kernel is written over."""
    G = layer.get("group", 1)
    if type(G) is not int or not 1 <= G <= g.C or g.C % G:
        raise CertificateError("shape", f"{where}: group {show(G)} must be an integer from 1 "
                                        f"that divides the {g.C} input channels")
    return dataclasses.replace(g, C=g.C // G, group=G)


def whole_patch(M: IntMatrix | Draw, one: Geometry, where: str, j: int | None = None,
                prov: Any = None) -> IntMatrix:
    """The kernel ``M`` of ``one.group`` groups (rows over one group's patch, ``one`` the window of
    one group, :func:`read_group`) as the block-diagonal kernel of the whole patch (module doc):
    its rows must split into the groups (rule ``shape``) and the whole kernel fit this
    checker's limit before anything is built (rule ``limit``). A draw is regenerated here (its
    cost counted in ``prov``'s budget), so that every later rule reads one matrix. For
    ``one.group`` > 1 only: an ungrouped kernel is its own."""
    G, rows, d = one.group, M.nrows, M.ncols
    if rows % G:
        raise CertificateError("shape", f"{where}: {rows} output channels do not split into "
                                        f"{G} groups", layer=j)
    if rows * d * G > MAX_MAP_ENTRIES:
        raise CertificateError("limit", f"{where}: the kernel of {rows} channels over the whole "
                                        f"patch of {d * G} coordinates exceeds this checker's "
                                        f"limit {MAX_MAP_ENTRIES}", layer=j)
    if isinstance(M, Draw):
        prov.charge_regeneration(M, j)
        if M.integral:
            M = IntMatrix(M.integers(), 1)
        else:
            flat, den = over_one_denominator([(x.numerator, x.denominator)
                                              for row in M.fractions() for x in row], where)
            M = IntMatrix([flat[r * d:(r + 1) * d] for r in range(rows)], den)
    per = rows // G
    return IntMatrix([[0] * ((r // per) * d) + row + [0] * ((G - 1 - r // per) * d)
                      for r, row in enumerate(M.rows)], M.den)
