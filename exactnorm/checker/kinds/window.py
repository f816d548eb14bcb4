"""The window of a convolution or pooling layer (docs/certificate-format.md §8), shared by the
``conv`` and ``avgpool`` kinds: its reading (rule ``shape``, rule ``limit``) and its comparison
with the target's (rule ``identity``). Standard library only.
"""

from __future__ import annotations

from ..numbers import CertificateError, field, show
from ..records import FrozenRecord, Geometry, TargetRecord
from ..schema import Key
from ..vocabulary import MAX_MAP_ENTRIES

__all__ = ["Geometry", "read_geometry", "same_window", "WINDOW_KEYS"]

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
