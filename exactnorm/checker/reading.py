"""Reading a certificate's structure (docs/certificate-format.md): format, domain,
target, frozen layers with their provenance, checkpoints and segments. Standard library only.

Contract. :func:`read_certificate` applies the reading and structural rules in document order
(``format``, ``number``, ``shape``, ``domain``, ``provenance``, ``skip``, ``checkpoints``,
``segment``) and returns plain data that both arithmetics consume: the box and every vector or
matrix as integers over one denominator, frozen weights given by reference as :class:`Draw`
(validated now, regenerated only when the walk reaches their layer, so memory does not grow with
depth), 0/1 skips as :class:`Picks`, and convolution geometry as :class:`Geometry`. It does no
arithmetic on maps; the one walk (:mod:`.walk`) does.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dc_field
from fractions import Fraction
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
)
from .regenerate import RecordError, regenerate, regenerate_integers, validate_record
from .vocabulary import FORMAT, LAYER_KINDS, MAX_MAP_ENTRIES, SKIP_KINDS, VERSIONS

__all__ = ["Draw", "Picks", "Geometry", "Provenance", "read_certificate", "read_target",
           "read_network", "rule_checkpoints", "rule_segments", "last_uses", "rule_skip_kind",
           "picks_of"]


@dataclass(frozen=True)
class Draw:
    """A frozen matrix given by reference: a validated draw record and its shape."""

    record: dict
    rows: int
    cols: int
    integral: bool

    @property
    def nrows(self) -> int:
        return self.rows

    @property
    def ncols(self) -> int:
        return self.cols

    def integers(self) -> list[list[int]]:
        """The regenerated matrix, integer distributions only."""
        return regenerate_integers(self.record, max_entries=MAX_MAP_ENTRIES)

    def fractions(self) -> list[list[Fraction]]:
        return regenerate(self.record, max_entries=MAX_MAP_ENTRIES)


@dataclass(frozen=True)
class Picks:
    """A 0/1 skip matrix with at most one 1 per row (kinds identity and selection), kept as the
    column each row copies (None: a zero row) instead of rows x cols numbers."""

    rows: tuple[int | None, ...]
    cols: int


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


@dataclass
class Provenance:
    """What the frozen matrices were proven to be: draws (seed, key) or given explicitly."""

    version: int
    seeds: set[int] = dc_field(default_factory=set)
    keys: dict[tuple[int, ...], str] = dc_field(default_factory=dict)
    regenerated: int = 0
    explicit: int = 0
    fixed: list[str] = dc_field(default_factory=list)
    constant: int = 0
    distributions: set[str] = dc_field(default_factory=set)
    pools: int = 0
    records: dict[tuple[int, ...], tuple[dict, str, int]] = dc_field(default_factory=dict)
    redraws: int = 0


# ---------------------------------------------------------------- structural rules (format §0)


def rule_format(doc: dict) -> int:
    if doc.get("format") != FORMAT:
        raise CertificateError("format", f"format must be \"{FORMAT}\"")
    version = doc.get("version")
    if type(version) is not int or version not in VERSIONS:
        raise CertificateError("format", f"unsupported version {show(version)} (this checker "
                                         f"reads versions 1 and 2)")
    for key in ("domain", "target", "network"):
        field(doc, key, "certificate")
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


def read_target(doc: dict, d0: int, max_digits: int) -> list[dict[str, Any]]:
    """Target layers: ``{"kind", "W", "b", "act", "geom", "width"}``; W is d_i x d_{i-1} (dense)
    or c_out x C·kh·kw (conv); an avgpool layer has neither W nor b."""
    out: list[dict[str, Any]] = []
    width = d0
    for i, layer in enumerate(layer_list(doc["target"], "target"), 1):
        where = f"target layer {i}"
        kind = layer_kind(layer, where)
        if kind == gap.NAME:  # its own module: kind_globalavgpool
            out.append(gap.read_target_layer(layer, where, width))
            width = out[-1]["width"]
            continue
        geom = None if kind == "dense" else read_geometry(layer, where, width, kind)
        if kind == "avgpool":
            act = activation(field(layer, "activation", where), where)
            if act != "identity":
                raise CertificateError("format", f"{where}: an avgpool layer has activation "
                                                 f"identity")
            assert geom is not None
            out.append({"kind": kind, "W": None, "b": None, "act": act, "geom": geom,
                        "width": geom.C * geom.Ho * geom.Wo})
        else:
            cols = width if geom is None else geom.patch
            W = matrix(field(layer, "weight", where), f"{where} weight", None, cols, max_digits)
            b = vector(field(layer, "bias", where), f"{where} bias", W.nrows, max_digits)
            act = activation(field(layer, "activation", where), where)
            out.append({"kind": kind, "W": W, "b": b, "act": act, "geom": geom,
                        "width": W.nrows * (1 if geom is None else geom.Ho * geom.Wo)})
        width = out[-1]["width"]
    return out


# ---------------------------------------------------------------- provenance (version 2)


def rule_draw_record(record: object, where: str, j: int, prov: Provenance) -> Any:
    """Validate a draw record (rules provenance and shape) and register its seed and key."""
    try:
        rec = validate_record(record, max_entries=MAX_MAP_ENTRIES)
    except RecordError as exc:
        raise CertificateError("provenance", f"{where}: {exc}", layer=j) from None
    if rec.rows == 0 or rec.cols == 0:
        raise CertificateError("shape", f"{where}: the draw record has an empty shape", layer=j)
    if prov.seeds and rec.seed not in prov.seeds:
        raise CertificateError("provenance", f"{where}: draw record seed {rec.seed}, other "
                                             f"matrices of this certificate were drawn with seed "
                                             f"{min(prov.seeds)}", layer=j)
    keys = [(rec.key, where)]
    if rec.mask is not None and rec.mask.key is not None:
        keys.append((rec.mask.key, f"the mask of {where}"))
    for key, owner in keys:
        if key in prov.keys:
            raise CertificateError("provenance", f"{owner}: stream key {show(list(key))} is "
                                                 f"also the key of {prov.keys[key]}", layer=j)
        prov.keys[key] = owner
    prov.seeds.add(rec.seed)
    prov.records[rec.key] = (record, where, j)  # type: ignore[assignment]
    prov.distributions.add(rec.distribution)
    if rec.kind == "set" and len(set(rec.values)) == 1:
        prov.constant += 1
    return rec


def rule_same_as_draw(M: IntMatrix, drawn: list[list[Any]], where: str, j: int) -> None:
    """An explicit matrix with a draw record equals the regenerated matrix entry by entry."""
    if M.nrows != len(drawn) or M.ncols != len(drawn[0]):
        raise CertificateError("provenance", f"{where}: weight is {M.nrows} x {M.ncols}, its "
                                             f"draw record has shape {len(drawn)} x "
                                             f"{len(drawn[0])}", layer=j)
    for r, (row, drow) in enumerate(zip(M.rows, drawn)):
        for t, (x, y) in enumerate(zip(row, drow)):
            if x * Fraction(y).denominator != Fraction(y).numerator * M.den:
                raise CertificateError("provenance", f"{where}: weight[{r}][{t}] is "
                                                     f"{show(M.entry(r, t))}, the draw record "
                                                     f"gives {show(Fraction(y))}",
                                       layer=j, neuron=r)


def rule_provenance(obj: dict, value: object, kind: str | None, where: str, j: int,
                    rows: int | None, cols: int, prov: Provenance,
                    max_digits: int) -> IntMatrix | Draw:
    """The matrix of a layer weight or skip (``kind`` None for a layer), with its provenance.

    ``{"random": R}`` is regenerated from R (lazily, see :class:`Draw`); an explicit matrix with
    ``"source": R`` must equal the regenerated one entry by entry; ``"source": {"kind": "fixed",
    "why": text}`` declares a matrix that is not a draw. In version 2 a layer weight or a random
    skip needs one of these.
    """
    source = obj.get("source")
    record = value["random"] if isinstance(value, dict) and set(value) == {"random"} else None
    if record is not None and source is not None:
        raise CertificateError("provenance", f"{where}: a weight given by reference carries no "
                                             f"separate source", layer=j)
    fixed = isinstance(source, dict) and source.get("kind") == "fixed"
    if fixed:
        assert isinstance(source, dict)
        if set(source) != {"kind", "why"} or not isinstance(source["why"], str):
            raise CertificateError("provenance", f"{where} source: a fixed declaration is "
                                                 f"{{\"kind\": \"fixed\", \"why\": text}}", layer=j)
        if kind == "random":
            raise CertificateError("provenance", f"{where}: a random skip cannot be declared "
                                                 f"fixed", layer=j)
        prov.fixed.append(f"{where}: {source['why'][:120]}")
        source = None
    if record is None and source is None:
        if prov.version >= 2 and not fixed and kind in (None, "random"):
            raise CertificateError("provenance", f"{where} has neither a draw record nor a "
                                                 f"fixed declaration", layer=j)
        prov.explicit += 1
        return matrix(value, f"{where} weight", rows, cols, max_digits)
    rec = rule_draw_record(record if record is not None else source, where, j, prov)
    integral = rec.kind not in ("rational", "gauss")
    drawn = Draw(record if record is not None else source, rec.rows, rec.cols,  # type: ignore[arg-type]
                 integral)
    prov.regenerated += 1
    if record is not None:
        # the shape is compared before anything is regenerated
        if (rows is not None and rec.rows != rows) or rec.cols != cols:
            raise CertificateError("shape", f"{where}: the draw record has shape {rec.rows} x "
                                            f"{rec.cols}, expected {rows or rec.rows} x {cols}",
                                   layer=j)
        return drawn
    M = matrix(value, f"{where} weight", rows, cols, max_digits)
    rule_same_as_draw(M, drawn.integers() if integral else drawn.fractions(), where, j)
    return M


def picks_of(P: list[list]) -> Picks:
    """The picks of an explicit 0/1 matrix that :func:`rule_skip_kind` has accepted."""
    return Picks(tuple(next((t for t, x in enumerate(row) if x), None) for row in P), len(P[0]))


def compact_picks(value: dict, kind: object, where: str, rows: int, cols: int,
                  j: int) -> Picks:
    """``{"identity": n}`` or ``{"selection": [c_0, ...], "columns": d}`` (version 2 compact
    skips): the declared kind must match the form, and the shape must fit (rule ``shape``)."""
    if set(value) == {"identity"} and kind == "identity":
        n = value["identity"]
        if type(n) is not int or n != rows or n != cols:
            raise CertificateError("shape", f"{where}: identity of size {show(n)}, the skip "
                                            f"maps {cols} to {rows} values", layer=j)
        return Picks(tuple(range(n)), n)
    if set(value) == {"selection", "columns"} and kind == "selection":
        picked, d = value["selection"], value["columns"]
        if type(d) is not int or d != cols:
            raise CertificateError("shape", f"{where}: selection columns {show(d)}, the node "
                                            f"read has width {cols}", layer=j)
        if not isinstance(picked, list) or len(picked) != rows:
            raise CertificateError("shape", f"{where}: selection must list one column (or null) "
                                            f"for each of the {rows} rows", layer=j)
        for r, t in enumerate(picked):
            if t is not None and (type(t) is not int or not 0 <= t < d):
                raise CertificateError("shape", f"{where}: selection[{r}] = {show(t)} is not a "
                                                f"column index below {d} or null", layer=j)
        return Picks(tuple(picked), d)
    raise CertificateError("skip", f"{where}: kind {show(kind)} with weight keys "
                                   f"{show(sorted(map(str, value)))} (compact skips are "
                                   f"{{\"identity\": n}} for kind identity, {{\"selection\": "
                                   f"[...], \"columns\": d}} for kind selection)", layer=j)



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
        P = rule_provenance(s, weight, kind, sw, j, n, dims[frm], prov, max_digits)
        if kind == "random":
            skips.append((frm, P))
            continue
        rows = P.integers() if isinstance(P, Draw) and P.integral else \
            P.fractions() if isinstance(P, Draw) else \
            [[x if P.den == 1 else P.entry(r, c) for c, x in enumerate(row)]
             for r, row in enumerate(P.rows)]
        rule_skip_kind(kind, rows, sw, j)
        skips.append((frm, picks_of(rows)))
    return skips


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
            if act != "identity" or any(k in layer for k in ("weight", "gamma", "beta", "skip")):
                raise CertificateError("format", f"{where}: an avgpool layer has activation "
                                                 f"identity and no weight, gamma, beta or skip",
                                       layer=j)
            prov.pools += 1
            out.append({"kind": kind, "input": src, "V": None, "gamma": None, "beta": None,
                        "act": act, "skips": [], "geom": geom})
            dims.append(geom.C * geom.Ho * geom.Wo)
            continue
        cols = dims[src] if geom is None else geom.patch
        V = rule_provenance(layer, field(layer, "weight", where), None, where, j, None, cols,
                            prov, max_digits)
        n = V.nrows
        gamma = vector(field(layer, "gamma", where), f"{where} gamma", n, max_digits)
        beta = vector(field(layer, "beta", where), f"{where} beta", n, max_digits)
        act = activation(field(layer, "activation", where), where)
        if geom is not None and "skip" in layer:
            raise CertificateError("skip", f"{where}: a conv layer has no skip", layer=j)
        skips = _skips(layer, where, j, n, dims, prov, max_digits)
        out.append({"kind": kind, "input": src, "V": V, "gamma": gamma, "beta": beta,
                    "act": act, "skips": skips, "geom": geom})
        dims.append(n if geom is None else n * geom.Ho * geom.Wo)
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


def rule_segments(layers: list[dict], cps: list[int]) -> None:
    """Layer j with c_{i-1} < j <= c_i reads nodes s with c_{i-1} <= s < j; c_i has no skip."""
    checkpoints = set(cps)
    start = 0
    for j, layer in enumerate(layers, 1):
        for src in [layer["input"]] + [s for s, _ in layer["skips"]]:
            if not start <= src < j:
                raise CertificateError("segment", f"network layer {j} reads node {src}, outside "
                                                  f"its segment [{start}, {j})", layer=j)
        if j in checkpoints:
            if layer["skips"]:
                raise CertificateError("skip", f"checkpoint layer {j} has a skip connection",
                                       layer=j)
            start = j


def last_uses(layers: list[dict], start: int, end: int) -> dict[int, int]:
    """For every node read in segment (start, end], the last layer that reads it."""
    last: dict[int, int] = {}
    for j in range(start + 1, end + 1):
        for src in [layers[j - 1]["input"]] + [s for s, _ in layers[j - 1]["skips"]]:
            last[src] = j
    return last


# ---------------------------------------------------------------- exact integer arithmetic


# stream-key parts of docs/certificate-format.md §4 that a redraw may concern
PAIR_FIRST, PAIR_SECOND, FINAL = 0, 1, 4


def _at_attempt(record: dict, attempt: int) -> dict:
    """The same draw record at another attempt: the last part of its key (and its mask's)."""
    out = dict(record, key=list(record["key"][:-1]) + [attempt])
    mask = record.get("mask")
    if isinstance(mask, dict) and "key" in mask:
        out["mask"] = dict(mask, key=list(mask["key"][:-1]) + [attempt])
    return out


def _redraw_entries(doc: dict, max_digits: int) -> dict[tuple[int, ...], list[int]]:
    raw = doc.get("redraws", [])
    if not isinstance(raw, list):
        raise CertificateError("format", "redraws must be a list")
    kernels = {}
    for t, entry in enumerate(raw):
        where = f"redraws[{t}]"
        if not isinstance(entry, dict) or set(entry) != {"key", "kernel"}:
            raise CertificateError("format", f"{where} is {{\"key\": [...], \"kernel\": "
                                             f"[...]}}")
        key = entry["key"]
        if not isinstance(key, list) or len(key) != 4 or \
                any(type(x) is not int or not 0 <= x < 1 << 64 for x in key):
            raise CertificateError("format", f"{where}: key must be four integers "
                                             f"(target_layer, block, part, attempt), got "
                                             f"{show(key)}")
        kernels[tuple(key)] = vector(entry["kernel"], f"{where} kernel", None, max_digits).nums
    return kernels


def _kernel_holds(where: str, j: int, attempt: int, v: list[int], first: dict,
                  second: dict | None) -> None:
    """``v ≠ 0`` and ``V·v = 0`` (a final matrix) or ``V_out·diag(v)·V_in = 0`` (a Khatri–Rao
    pair: ``K v = vec(V_out diag(v) V_in)``), for the regenerated matrices of ``attempt``."""
    V = regenerate(first, max_entries=MAX_MAP_ENTRIES)
    if second is None:
        rows, m = V, len(V[0])
        out_rows = [[sum(x * y for x, y in zip(row, v))] for row in rows]
    else:
        V_out = regenerate(second, max_entries=MAX_MAP_ENTRIES)
        m = len(V)
        if len(V_out[0]) * len(V[0]) * m > 16 * MAX_MAP_ENTRIES:
            raise CertificateError("limit", f"{where}: checking the singular attempt {attempt} "
                                            f"needs {len(V_out[0]) * len(V[0]) * m} products",
                                   layer=j)
        scaled = [[x * c for x in row] for row, c in zip(V, v)]
        out_rows = [[sum(r[k] * scaled[k][t] for k in range(m)) for t in range(len(V[0]))]
                    for r in V_out]
    if len(v) != m or not any(v):
        raise CertificateError("provenance", f"{where}: the kernel vector of attempt {attempt} "
                                             f"must be nonzero with {m} entries", layer=j)
    if any(x for row in out_rows for x in row):
        raise CertificateError("provenance", f"{where}: the vector given for attempt {attempt} "
                                             f"is not in the kernel of its system: that draw is "
                                             f"not shown singular", layer=j)


def rule_redraws(doc: dict, prov: Provenance, max_digits: int) -> None:
    """A draw at attempt ``a > 0`` counts only if attempts ``0 … a−1`` of the same matrices are
    regenerated and shown singular by a nonzero kernel vector in ``redraws``; so the accepted
    draw is the first nonsingular one of the seed, and attempts cannot be tried until the
    "random" matrices fit the target (rule ``provenance``)."""
    kernels = _redraw_entries(doc, max_digits)
    for key, (record, where, j) in list(prov.records.items()):
        if len(key) != 4 or key[3] == 0:
            continue
        layer, block, part, attempt = key
        if part == PAIR_SECOND and (layer, block, PAIR_FIRST, attempt) in prov.records:
            continue  # checked with the first matrix of its pair
        if part not in (PAIR_FIRST, FINAL):
            raise CertificateError("provenance", f"{where}: stream key {show(list(key))} is "
                                                 f"attempt {attempt} of a matrix that is redrawn "
                                                 f"neither with its pair nor as a final matrix",
                                   layer=j)
        second = None
        if part == PAIR_FIRST:
            other = prov.records.get((layer, block, PAIR_SECOND, attempt))
            if other is None:
                raise CertificateError("provenance", f"{where}: attempt {attempt} of a pair "
                                                     f"without its second matrix", layer=j)
            second = other[0]
        for earlier in range(attempt):
            v = kernels.get((layer, block, part, earlier))
            if v is None:
                raise CertificateError("provenance", f"{where}: attempt {attempt} is used, but "
                                                     f"attempt {earlier} of the same draw is not "
                                                     f"shown singular (no kernel vector in "
                                                     f"redraws)", layer=j)
            _kernel_holds(where, j, earlier, v, _at_attempt(record, earlier),
                          None if second is None else _at_attempt(second, earlier))
        prov.redraws += attempt


def read_certificate(doc: object, max_digits: int) -> tuple[Any, ...]:
    """The reading and structural rules, in order; returns (lower, upper, target, layers,
    checkpoints, provenance)."""
    if not isinstance(doc, dict):
        raise CertificateError("format", "a certificate is a JSON object")
    prov = Provenance(rule_format(doc))
    lo, hi = rule_domain(doc, max_digits)
    target = read_target(doc, len(lo), max_digits)
    layers, cps = read_network(doc, len(lo), max_digits, prov)
    rule_redraws(doc, prov, max_digits)
    rule_checkpoints(cps, len(target), len(layers))
    rule_segments(layers, cps)
    return lo, hi, target, layers, cps, prov
