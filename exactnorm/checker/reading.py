"""Reading a certificate's structure (docs/certificate-format.md): format, domain,
target, frozen layers with their provenance, checkpoints and segments. Standard library only.

Contract. :func:`read_certificate` applies the reading and structural rules in document order
(``format``, ``number``, ``shape``, ``domain``, ``provenance``, ``skip``), then ``checkpoints``,
``segment`` (the node reads) and, in version 3, the stream keys of positions and the structure of
the redraws (``provenance``), and returns plain data that both arithmetics consume: the box and
every vector or matrix as integers over one denominator, frozen weights given by reference as
:class:`~.provenance.Draw` (validated now, regenerated only when the walk reaches their layer, so
memory does not grow with depth), 0/1 skips as :class:`Picks`, and convolution geometry as
:class:`Geometry`. It does no arithmetic on maps; the one walk (:mod:`.walk`) does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import kind_globalavgpool as gap
from .numbers import (
    CertificateError,
    IntMatrix,
    IntVector,
    activation,
    field,
    index,
    layer_list,
    matrix,
    show,
    vector,
    written_bits,
)
from .provenance import (
    ROLE_WEIGHT,
    TOP_LEVEL_KEYS,
    Draw,
    Provenance,
    redraw_units,
    rule_provenance,
    rule_stream_keys,
    skip_role,
)
from .seed import SEED_RULES, target_seed
from .topology import (
    Picks,
    compact_picks,
    conv_skips,
    frozen_residual,
    rule_residuals,
    segment_input,
    target_input,
    target_skip,
)
from .vocabulary import (
    FORMAT,
    LAYER_KINDS,
    MAX_DIGITS_CAP,
    MAX_MAP_ENTRIES,
    SKIP_KINDS,
    VERSIONS,
)

__all__ = ["Picks", "Geometry", "read_certificate", "read_target", "read_network",
           "rule_checkpoints", "rule_segments", "last_uses", "rule_skip_kind", "picks_of",
           "document_seed"]


@dataclass(frozen=True)
class Geometry:
    """A convolution or pooling window on a (C, H, W) input in C order (docs/certificate-format.md
    §8): kernel, stride, symmetric zero padding and dilation."""

    C: int
    H: int
    W: int
    kh: int
    kw: int
    sh: int
    sw: int
    ph: int
    pw: int
    dh: int
    dw: int

    @property
    def Ho(self) -> int:
        return (self.H + 2 * self.ph - self.dh * (self.kh - 1) - 1) // self.sh + 1

    @property
    def Wo(self) -> int:
        return (self.W + 2 * self.pw - self.dw * (self.kw - 1) - 1) // self.sw + 1

    @property
    def patch(self) -> int:
        """Patch coordinates: C·kh·kw."""
        return self.C * self.kh * self.kw

    def window(self) -> tuple[int, int, int, int]:
        return self.kh, self.kw, self.sh, self.sw

    def same_window(self, other: Geometry) -> bool:
        return (self.C, self.H, self.W, self.kh, self.kw, self.sh, self.sw, self.ph, self.pw,
                self.dh, self.dw) == (other.C, other.H, other.W, other.kh, other.kw, other.sh,
                                      other.sw, other.ph, other.pw, other.dh, other.dw)

    def pointwise(self) -> bool:
        return (self.kh, self.kw, self.sh, self.sw, self.ph, self.pw, self.dh, self.dw) == \
            (1, 1, 1, 1, 0, 0, 1, 1)

    def pixels(self, y: int, x: int) -> list[int | None]:
        """Input index (C order) of every patch coordinate t = c·kh·kw + u·kw + v at output
        position (y, x); None where the pixel lies in the zero padding."""
        out: list[int | None] = []
        for c in range(self.C):
            for u in range(self.kh):
                row = y * self.sh - self.ph + u * self.dh
                for v in range(self.kw):
                    col = x * self.sw - self.pw + v * self.dw
                    inside = 0 <= row < self.H and 0 <= col < self.W
                    out.append((c * self.H + row) * self.W + col if inside else None)
        return out

    def describe(self) -> str:
        return (f"kernel {self.kh}x{self.kw}, stride {self.sh}x{self.sw}, padding "
                f"{self.ph}x{self.pw}, dilation {self.dh}x{self.dw} on {self.C}x{self.H}x{self.W}")


# ---------------------------------------------------------------- structural rules (format §0)


def rule_format(doc: dict) -> int:
    if doc.get("format") != FORMAT:
        raise CertificateError("format", f"format must be \"{FORMAT}\"")
    version = doc.get("version")
    if type(version) is not int or version not in VERSIONS:
        raise CertificateError("format", f"unsupported version {show(version)} (this checker "
                                         f"reads versions {', '.join(map(str, VERSIONS))})")
    for key in ("domain", "target", "network"):
        field(doc, key, "certificate")
    if version >= 3:
        extra = sorted(set(map(str, doc)) - set(TOP_LEVEL_KEYS))
        if extra:
            raise CertificateError("format", f"unknown top-level key {show(extra[0])} (version "
                                             f"3 has {', '.join(TOP_LEVEL_KEYS)})")
        rule = doc.get("seed_rule", "chosen")
        if rule not in SEED_RULES:
            raise CertificateError("format", f"seed_rule must be one of "
                                             f"{show(list(SEED_RULES))}, got {show(rule)}")
    return version


def rule_domain(doc: dict, max_digits: int) -> tuple[IntVector, IntVector]:
    lower = vector(field(doc["domain"], "lower", "domain"), "domain.lower", None, max_digits)
    upper = vector(field(doc["domain"], "upper", "domain"), "domain.upper", len(lower),
                   max_digits)
    for k in range(len(lower)):
        lo, hi = lower.nums[k] * upper.den, upper.nums[k] * lower.den
        if lo > hi:
            raise CertificateError("domain", f"domain: lower[{k}] = {show(lower[k])} > "
                                             f"upper[{k}] = {show(upper[k])}")
    return lower, upper


def _pair(value: object, where: str, name: str, least: int) -> tuple[int, int]:
    if not isinstance(value, list) or len(value) != 2 or \
            any(type(x) is not int or not least <= x < 1 << 31 for x in value):
        raise CertificateError("shape", f"{where}: {name} must be two integers from {least} "
                                        f"below 2^31, got {show(value)}")
    return value[0], value[1]


def read_geometry(layer: dict, where: str, width: int, kind: str) -> Geometry:
    """The window of a conv or avgpool layer; input_shape must multiply to ``width``."""
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
    if kind == "avgpool":
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


def layer_kind(layer: object, where: str) -> str:
    kind = layer.get("kind", "dense") if isinstance(layer, dict) else "dense"
    if not isinstance(kind, str) or kind not in LAYER_KINDS:
        raise CertificateError("format", f"{where}: kind {show(kind)} is not one of "
                                         f"{show(list(LAYER_KINDS))}")
    return kind


def read_target(doc: dict, d0: int, max_digits: int, version: int = 3) -> list[dict[str, Any]]:
    """Target layers: ``{"kind", "W", "b", "act", "geom", "width", "input", "skip"}``; W is
    d_i x d_p (dense, ``p`` the node read) or c_out x C·kh·kw (conv); an avgpool layer has
    neither W nor b. ``skip`` is None or ``(q, kind, Picks)`` (:mod:`.topology`)."""
    out: list[dict[str, Any]] = []
    dims = [d0]
    for i, layer in enumerate(layer_list(doc["target"], "target"), 1):
        where = f"target layer {i}"
        kind = layer_kind(layer, where)
        p = target_input(layer, where, i, kind, version)
        width = dims[p]
        if kind == gap.NAME:  # its own module: kind_globalavgpool
            rec = gap.read_target_layer(layer, where, width)
        else:
            geom = None if kind == "dense" else read_geometry(layer, where, width, kind)
            if kind == "avgpool":
                act = activation(field(layer, "activation", where), where)
                if act != "identity":
                    raise CertificateError("format", f"{where}: an avgpool layer has activation "
                                                     f"identity")
                assert geom is not None
                rec = {"kind": kind, "W": None, "b": None, "act": act, "geom": geom,
                       "width": geom.C * geom.Ho * geom.Wo}
            else:
                cols = width if geom is None else geom.patch
                W = matrix(field(layer, "weight", where), f"{where} weight", None, cols,
                           max_digits)
                b = vector(field(layer, "bias", where), f"{where} bias", W.nrows, max_digits)
                act = activation(field(layer, "activation", where), where)
                rec = {"kind": kind, "W": W, "b": b, "act": act, "geom": geom,
                       "width": W.nrows * (1 if geom is None else geom.Ho * geom.Wo)}
        rec["input"] = p
        rec["skip"] = target_skip(layer, where, i, rec["width"], dims)
        out.append(rec)
        dims.append(rec["width"])
    return out


def picks_of(P: list[list]) -> Picks:
    """The picks of an explicit 0/1 matrix that :func:`rule_skip_kind` has accepted."""
    return Picks(tuple(next((t for t, x in enumerate(row) if x), None) for row in P), len(P[0]))


def _skips(layer: dict, where: str, j: int, n: int, dims: list[int], prov: Provenance,
           max_digits: int) -> list[tuple[int, Any]]:
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
        skips.append((frm, picks_of(rows)))
    return skips


#: fields a pooling layer never has (rule ``format``)
POOL_EXTRAS = ("weight", "gamma", "beta", "skip", "residual", "stability")


def _stability_mode(layer: dict, where: str, j: int, windowed: bool) -> bool:
    """``"stability": "positions"`` (the default) or ``"hull"``, on a layer with a weight and a
    window (a conv layer) only (rule ``format``); True for the hull."""
    if "stability" not in layer:
        return False
    mode = layer["stability"]
    if not windowed or mode not in ("positions", "hull"):
        raise CertificateError("format", f"{where}: stability {show(mode)}; a conv layer may "
                                         f"declare \"positions\" (the default) or \"hull\", "
                                         f"no other layer any", layer=j)
    return mode == "hull"


def read_network(doc: dict, d0: int, max_digits: int,
                 prov: Provenance) -> tuple[list[dict[str, Any]], list[int]]:
    """Frozen layers as dicts (kind, input, V, gamma, beta, act, skips, geom) and the
    checkpoint list. A pooling layer has V, gamma and beta None."""
    dims, out = [d0], []
    for j, layer in enumerate(layer_list(doc["network"], "network"), 1):
        where = f"network layer {j}"
        kind = layer_kind(layer, where)
        src = index(field(layer, "input", where), f"{where} input")
        if not 0 <= src < j:
            raise CertificateError("segment", f"{where} reads node {show(src)}, not an earlier "
                                              f"node", layer=j)
        if kind == gap.NAME:  # its own module: kind_globalavgpool
            out.append(gap.read_frozen_layer(layer, where, j, src, dims[src]))
            prov.pools += 1
            dims.append(out[-1]["shape"][0])
            continue
        geom = None if kind == "dense" else read_geometry(layer, where, dims[src], kind)
        if kind == "avgpool":
            assert geom is not None
            act = activation(field(layer, "activation", where), where)
            if act != "identity" or any(k in layer for k in POOL_EXTRAS):
                raise CertificateError("format", f"{where}: an avgpool layer has activation "
                                                 f"identity and no weight, gamma, beta or skip "
                                                 f"(nor residual or stability)", layer=j)
            prov.pools += 1
            out.append({"kind": kind, "input": src, "V": None, "gamma": None, "beta": None,
                        "act": act, "skips": [], "geom": geom})
            dims.append(geom.C * geom.Ho * geom.Wo)
            continue
        cols = dims[src] if geom is None else geom.patch
        V = rule_provenance(layer, field(layer, "weight", where), None, where, j, ROLE_WEIGHT,
                            None, cols, prov, max_digits, geom)
        n = V.nrows
        gamma = vector(field(layer, "gamma", where), f"{where} gamma", n, max_digits)
        beta = vector(field(layer, "beta", where), f"{where} beta", n, max_digits)
        act = activation(field(layer, "activation", where), where)
        full = n if geom is None else n * geom.Ho * geom.Wo
        if geom is not None:
            skips: list[tuple[int, Any]] = conv_skips(layer, where, j, n, full, dims)
        else:
            skips = _skips(layer, where, j, n, dims, prov, max_digits)
        out.append({"kind": kind, "input": src, "V": V, "gamma": gamma, "beta": beta,
                    "act": act, "skips": skips, "geom": geom,
                    "residual": frozen_residual(layer, where, j, full, dims, prov.version),
                    "hull": _stability_mode(layer, where, j, geom is not None)})
        dims.append(full)
    cps = field(doc["network"], "checkpoints", "network")
    if not isinstance(cps, list):
        raise CertificateError("checkpoints", "checkpoints must be a list")
    return out, [index(c, "checkpoint") for c in cps]


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


def rule_checkpoints(cps: list[int], n_target: int, n_layers: int) -> None:
    if len(cps) != n_target:
        raise CertificateError("checkpoints", f"{len(cps)} checkpoints for {n_target} target "
                                              f"layers")
    prev = 0
    for c in cps:
        if not prev < c <= n_layers:
            raise CertificateError("checkpoints", f"checkpoints must strictly increase within "
                                                  f"1..{n_layers}, got {show(cps)}")
        prev = c
    if cps[-1] != n_layers:
        raise CertificateError("checkpoints", f"last checkpoint {cps[-1]} is not the last layer "
                                              f"{n_layers}")


def _reads(layer: dict) -> list[int]:
    """The nodes a frozen layer reads: its input and its post-activation skips' sources."""
    return [layer["input"]] + [s for s, _ in layer["skips"]]


def rule_segments(layers: list[dict], cps: list[int], target: list[dict]) -> None:
    """Rule ``segment``, node reads (docs/certificate-format.md §0, §8, §10), before any
    arithmetic.

    Segment i is layers ``c_{i-1} < j <= c_i``; its input is ``s_i``, the checkpoint of the node
    target layer i reads (``c_{i-1}`` for a chain). Layer j reads (input and skips) only ``s_i``
    or nodes ``c_{i-1} < s < j``, and the checkpoint layer has no skip (rule ``skip``). By the
    kind of target layer i: a dense segment holds dense layers; in a convolution segment the
    first layer is a conv reading ``s_i``, every later conv layer reading ``s_i`` has the target's
    window (the segment input holds pixels, which only the target's window turns into the patch
    coordinates every inner node is a map of; the first layer's window is rule ``identity`` of
    the walk), every other layer is a pointwise conv on the first layer's output grid reading a
    node strictly inside the segment, and its skips read nodes strictly inside the segment; a
    pooling segment is one avgpool layer reading ``s_i``.
    """
    start = 0
    for i, (end, tl) in enumerate(zip(cps, target), 1):
        kind = tl["kind"]
        seg_in = segment_input(cps, tl, i)
        grid = (0, 0)  # the output grid of the segment's first convolution
        for j in range(start + 1, end + 1):
            layer = layers[j - 1]
            for src in _reads(layer):
                if src != seg_in and not start < src < j:
                    inside = f"[{start}, {j})" if seg_in == start else \
                        f"(its input node {seg_in}" + (f" and nodes {start + 1} to {j - 1})"
                                                       if j > start + 1 else ")")
                    raise CertificateError("segment", f"network layer {j} reads node {src}, "
                                                      f"outside its segment {inside}", layer=j)
            if kind == "dense":
                if layer["kind"] != "dense":
                    raise CertificateError("segment", f"network layer {j} is a {layer['kind']} "
                                                      f"layer inside the dense segment of target "
                                                      f"layer {i}", layer=j)
            elif kind == gap.NAME:  # its own module: kind_globalavgpool
                gap.check_segment(layers, start, end, tl, i)
            elif kind == "avgpool":
                if end != start + 1 or layer["kind"] != "avgpool" or layer["input"] != start:
                    raise CertificateError("segment", f"network layer {start + 1}: the segment "
                                                      f"of avgpool target layer {i} is one "
                                                      f"avgpool layer reading node {start}",
                                           layer=start + 1)
            elif j == start + 1:
                if layer["kind"] != "conv" or layer["input"] != seg_in:
                    raise CertificateError("segment", f"network layer {j}: a convolution segment "
                                                      f"(target layer {i}) starts with a conv "
                                                      f"layer reading node {seg_in}", layer=j)
                grid = (layer["geom"].Ho, layer["geom"].Wo)
                _no_pixel_skip(layer, j, i, seg_in)
            else:
                _inner_conv(layer, j, i, seg_in, grid, tl)
        if layers[end - 1]["skips"]:
            raise CertificateError("skip", f"checkpoint layer {end} has a skip connection",
                                   layer=end)
        start = end


def _no_pixel_skip(layer: dict, j: int, i: int, seg_in: int) -> None:
    """Rule ``segment``: a skip inside a convolution segment reads a node inside it, never the
    segment input, whose pixels are no patch coordinates."""
    if any(s == seg_in for s, _ in layer["skips"]):
        raise CertificateError("segment", f"network layer {j}: a skip inside the convolution "
                                          f"segment of target layer {i} reads node {seg_in}, the "
                                          f"segment input (pixels, not patch coordinates); it "
                                          f"reads a node inside the segment", layer=j)


def _inner_conv(layer: dict, j: int, i: int, seg_in: int, grid: tuple[int, int],
                tl: dict) -> None:
    """Rule ``segment`` for a layer after the first of the convolution segment of target layer
    ``i`` (:func:`rule_segments`)."""
    g, conv = layer["geom"], layer["kind"] == "conv"
    if conv and layer["input"] == seg_in:
        if not g.same_window(tl["geom"]):
            raise CertificateError("segment", f"network layer {j} reads node {seg_in}, the input "
                                              f"of the convolution segment of target layer {i}, "
                                              f"with {g.describe()}: a layer reading the segment "
                                              f"input has the target's window, "
                                              f"{tl['geom'].describe()}", layer=j)
    elif not conv or not g.pointwise() or grid != (g.H, g.W):
        raise CertificateError("segment", f"network layer {j}: inside the convolution segment "
                                          f"of target layer {i} a layer that does not read the "
                                          f"segment input is a 1x1 conv (stride 1, padding 0, "
                                          f"dilation 1) on the {grid[0]}x{grid[1]} output grid",
                               layer=j)
    _no_pixel_skip(layer, j, i, seg_in)


def last_uses(layers: list[dict], start: int, end: int) -> dict[int, int]:
    """For every node read in segment (start, end], the last layer that reads it."""
    last: dict[int, int] = {}
    for j in range(start + 1, end + 1):
        for src in _reads(layers[j - 1]):
            last[src] = j
    return last


def read_certificate(doc: object, max_digits: int, budget: Any = None) -> tuple[Any, ...]:
    """The reading and structural rules, in order; returns (lower, upper, target, layers,
    checkpoints, provenance). ``budget`` counts the few draws the reader regenerates."""
    if not isinstance(doc, dict):
        raise CertificateError("format", "a certificate is a JSON object")
    version = rule_format(doc)
    prov = Provenance(version, budget=budget)
    lo, hi = rule_domain(doc, max_digits)
    target = read_target(doc, len(lo), max_digits, version)
    layers, cps = read_network(doc, len(lo), max_digits, prov)
    rule_checkpoints(cps, len(target), len(layers))
    rule_segments(layers, cps, target)
    rule_residuals(layers, cps, target)
    rule_stream_keys(prov, cps)
    redraw_units(doc, layers, cps, prov, max_digits)
    if version >= 3:
        prov.seed_rule = doc.get("seed_rule", "chosen")
    prov.written = written_size(lo, hi, target, layers, prov)
    return lo, hi, target, layers, cps, prov


def _route_bits(route: Any) -> int:
    """Bits a target skip or a residual writes: 64 for ``{"identity": n}`` (one number), 8 per
    row of a selection (its list)."""
    if route is None:
        return 0
    return 64 if route[1] == "identity" else 8 * len(route[2].rows)


def written_size(lo: IntVector, hi: IntVector, target: list[dict], layers: list[dict],
                 prov: Provenance) -> int:
    """The bits of the numbers a certificate writes (docs/certificate-format.md §7): every
    number the checker reads (:func:`.numbers.written_bits`: bit lengths plus one, a shared
    denominator once), 64 per draw record, 8 per entry of a frozen dense layer's compact skip,
    a target skip's and a residual's :func:`_route_bits`; the default work budget grows with
    it."""
    total = lo.written + hi.written + 64 * len(prov.draws)
    total += sum(written_bits(v) for unit in prov.units for _, v in unit.kernels)
    for tl in target:
        total += (tl["W"].written + tl["b"].written) if tl["W"] is not None else 64
        total += _route_bits(tl.get("skip"))
    for layer in layers:
        if layer["V"] is None:
            total += 64
            continue
        total += _route_bits(layer.get("residual"))
        total += layer["gamma"].written + layer["beta"].written
        for M in [layer["V"]] + ([] if layer["geom"] else [P for _, P in layer["skips"]]):
            total += M.written if isinstance(M, IntMatrix) else \
                8 * len(M.rows) if isinstance(M, Picks) else 0
    return total


def document_seed(doc: dict, max_digits: int = MAX_DIGITS_CAP) -> int:
    """The seed of rule ``target`` of a document's ``domain`` and ``target`` sections, read as
    the checker reads them (docs/generator.md §8): what a writer draws from with ``--seed
    target``."""
    lo, hi = rule_domain(doc, max_digits)
    return target_seed(lo, hi, read_target(doc, len(lo), max_digits))
