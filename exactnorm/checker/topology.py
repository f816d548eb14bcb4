"""The topology of residual networks (docs/certificate-format.md §10): which node a target layer
reads, the skip it adds before its activation, the residual a checkpoint carries, and 0/1 skip
matrices kept as picks. Standard library only; it imports nothing but :mod:`.numbers`.

Contract. :func:`target_input` and :func:`target_skip` read a target layer's ``input`` and
``skip``; :func:`frozen_residual` reads a frozen layer's ``residual``; :func:`conv_skips` reads
the post-activation skips of a convolution layer (identity only); :func:`rule_residuals` (rule
``skip``) demands that the checkpoint of every target layer with a skip carries exactly that skip
from the checkpoint of its source, and that no other layer carries one. They return plain data:
a skip as ``(source, kind, Picks)``.

Correctness argument (the residual rule). Suppose the frozen node ``c_q`` equals the target node
``a_q`` on the box for every ``q < i`` (induction over target layers; ``c_0 = 0`` is the input).
The checkpoint rule of the walk makes the checkpoint's pre-activation *without* its residual equal
``W_i a_p + b_i`` on the box. The residual adds ``S h_{c_q}``; this rule makes its ``S`` the
target skip's matrix (the same picks, the same column count) and its source ``c_q``, so it adds
``S a_q``: the pre-activations are equal, and so are the outputs under the same activation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field as dc_field

from .numbers import CertificateError, field, index, show
from .records import FrozenRecord, TargetRecord

__all__ = ["Picks", "compact_picks", "target_input", "target_skip", "frozen_residual",
           "conv_skips", "rule_residuals", "segment_input", "ROUTE_KINDS"]

#: the kinds of a target skip and of a checkpoint's residual (0/1 matrices, never drawn)
ROUTE_KINDS = ("identity", "selection")


@dataclass(frozen=True)
class Picks:
    """A 0/1 skip matrix with at most one 1 per row (kinds identity and selection), kept as the
    column each row copies (None: a zero row) instead of rows x cols numbers; an identity's rows
    are ``range(n)``, which takes no memory whatever ``n`` its document names."""

    rows: Sequence[int | None]
    cols: int
    #: the declared kind (``identity`` or ``selection``), kept for the package's reader; the
    #: rules read the picks, never this word
    kind: str = dc_field(default="selection", compare=False)

    def is_identity(self, n: int) -> bool:
        """Whether this is the identity of ``n`` values (a range is compared in constant
        time)."""
        if isinstance(self.rows, range):
            return self.rows == range(n) and self.cols == n
        return len(self.rows) == n and self.cols == n and all(
            t == r for r, t in enumerate(self.rows))


def compact_picks(value: dict, route: object, where: str, rows: int, cols: int,
                  j: int | None) -> Picks:
    """``{"identity": n}`` or ``{"selection": [c_0, ...], "columns": d}`` (version 2 compact
    skips): the declared kind (``route``) must match the form, and the shape must fit (rule
    ``shape``)."""
    if isinstance(value, dict) and set(value) == {"identity"} and route == "identity":
        n = value["identity"]
        if type(n) is not int or n != rows or n != cols:
            raise CertificateError("shape", f"{where}: identity of size {show(n)}, the skip "
                                            f"maps {cols} to {rows} values", layer=j)
        return Picks(range(n), n, "identity")
    if isinstance(value, dict) and set(value) == {"selection", "columns"} and \
            route == "selection":
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
        return Picks(tuple(picked), d, "selection")
    keys = sorted(map(str, value)) if isinstance(value, dict) else value
    raise CertificateError("skip", f"{where}: kind {show(route)} with weight {show(keys)} "
                                   f"(compact skips are {{\"identity\": n}} for kind identity, "
                                   f"{{\"selection\": [...], \"columns\": d}} for kind "
                                   f"selection)", layer=j)


def _version3(layer: dict, keys: tuple[str, ...], where: str, version: int,
              j: int | None) -> None:
    if version < 3 and any(k in layer for k in keys):
        raise CertificateError("format", f"{where}: {' and '.join(keys)} need version 3",
                               layer=j)


def target_input(layer: dict, where: str, i: int, kind: str, version: int) -> int:
    """The node target layer ``i`` reads: ``input`` (``0 ≤ p < i``), absent ``i − 1``; a layer
    without a weight (a pooling layer) reads the layer before and has no skip (rule
    ``format``). A layer that is no object reads the layer before: its kind's reading refuses
    it (rule ``format``)."""
    if not isinstance(layer, dict):
        return i - 1
    if version < 3:
        _version3(layer, ("input", "skip"), where, version, None)
    if "weight" not in layer and ("input" in layer or "skip" in layer):
        raise CertificateError("format", f"{where}: a {kind} layer reads the layer before and "
                                         f"has no skip")
    if "input" not in layer:
        return i - 1
    p = index(layer["input"], f"{where} input")
    if not 0 <= p < i:
        raise CertificateError("format", f"{where} reads node {show(p)}, not an earlier node "
                                         f"(0 to {i - 1})")
    return p


def _route(value: object, where: str, limit: int, rows: int, dims: list[int],
           j: int | None, bad_source: str) -> tuple[int, str, Picks]:
    """``{"from", "kind", "weight"}`` of a target skip or a residual: ``from`` below ``limit``,
    kind identity or selection, a compact weight of ``rows`` rows and as many columns as the
    width of the node read."""
    if not isinstance(value, dict) or set(value) != {"from", "kind", "weight"}:
        raise CertificateError("format", f"{where} is {{\"from\", \"kind\", \"weight\"}}",
                               layer=j)
    q = index(value["from"], f"{where} from")
    if not 0 <= q < limit:
        raise CertificateError(bad_source, f"{where} reads node {show(q)}, not an earlier node",
                               layer=j)
    route = value["kind"]
    if route not in ROUTE_KINDS:
        raise CertificateError("skip", f"{where}: kind {show(route)} is not one of "
                                       f"{show(list(ROUTE_KINDS))}", layer=j)
    return q, route, compact_picks(value["weight"], route, where, rows, dims[q], j)


def target_skip(layer: dict, where: str, i: int, width: int,
                dims: list[int]) -> tuple[int, str, Picks] | None:
    """Target layer ``i``'s skip (added before its activation), ``width`` its output width,
    ``dims`` the widths of nodes ``0 … i − 1``."""
    if "skip" not in layer:
        return None
    return _route(layer["skip"], f"{where} skip", i, width, dims, None, "format")


def frozen_residual(layer: dict, where: str, j: int, width: int, dims: list[int],
                    version: int) -> tuple[int, str, Picks] | None:
    """Frozen layer ``j``'s ``residual`` (added before its activation; a checkpoint's only,
    :func:`rule_residuals`), ``width`` its full output width."""
    if "residual" not in layer:
        return None
    _version3(layer, ("residual",), where, version, j)
    return _route(layer["residual"], f"{where} residual", j, width, dims, j, "segment")


def conv_skips(layer: dict, where: str, j: int, channels: int, width: int,
               dims: list[int]) -> list[tuple[int, Picks]]:
    """The post-activation skips of a convolution layer: a non-empty list of identity skips
    ``{"from": s, "kind": "identity", "weight": {"identity": n}}``, ``n`` the layer's full width
    ``c·Ho·Wo`` (rule ``skip``, ``shape``). Which nodes they may read is rule ``segment``. Kept as
    the identity on the ``channels``: inside a convolution segment a node's map is one row per
    channel, the same at every position of one grid."""
    skips = layer.get("skip")
    if skips is None:
        return []
    if not isinstance(skips, list) or not skips:
        raise CertificateError("skip", f"{where}: a conv layer has no skip {show(skips)} (its "
                                       f"skip, if any, is a non-empty list of identity skips)",
                               layer=j)
    out = []
    for t, s in enumerate(skips):
        sw = f"{where} skip {t}"
        src = index(field(s, "from", sw), f"{sw} from")
        if not 0 <= src < j:
            raise CertificateError("segment", f"{sw} reads node {show(src)}, not an earlier "
                                              f"node", layer=j)
        if set(s) != {"from", "kind", "weight"} or s["kind"] != "identity":
            raise CertificateError("skip", f"{sw}: a conv layer's skip is {{\"from\", \"kind\": "
                                           f"\"identity\", \"weight\": {{\"identity\": n}}}}, "
                                           f"got kind {show(s.get('kind'))}", layer=j)
        compact_picks(s["weight"], "identity", sw, width, dims[src], j)
        out.append((src, Picks(range(channels), channels, "identity")))
    return out


def segment_input(cps: list[int], tl: TargetRecord, i: int) -> int:
    """The segment input of target layer ``i``: the checkpoint of the node it reads
    (``c_0 = 0``)."""
    p = tl.input
    return 0 if p == 0 else cps[p - 1]


def _differs(mine: Picks, theirs: Picks) -> str | None:
    if mine == theirs:  # two ranges compare in constant time
        return None
    if mine.cols != theirs.cols:
        return f"reads a node of width {mine.cols}, the target's skip one of width {theirs.cols}"
    if len(mine.rows) != len(theirs.rows):
        return f"has {len(mine.rows)} rows, the target's skip {len(theirs.rows)}"
    for r, (a, b) in enumerate(zip(mine.rows, theirs.rows)):
        if a != b:
            return f"row {r} picks column {show(a)}, the target's skip column {show(b)}"
    return None


def rule_residuals(layers: list[FrozenRecord], cps: list[int],
                   target: list[TargetRecord]) -> None:
    """Rule ``skip`` (docs/certificate-format.md §10): only a checkpoint carries a
    ``residual``, and the checkpoint ``c_i`` of target layer ``i`` carries one exactly when the
    target layer has a skip, with the same kind and picks, from the checkpoint ``c_q`` of the
    skip's source ``q``. The first difference is named."""
    at = {c: i for i, c in enumerate(cps, 1)}
    for j, layer in enumerate(layers, 1):
        if layer.residual is not None and j not in at:
            raise CertificateError("skip", f"network layer {j} carries a residual, but it is not "
                                           f"a checkpoint: only a checkpoint layer does", layer=j)
    for i, (c, tl) in enumerate(zip(cps, target), 1):
        R, S = layers[c - 1].residual, tl.skip
        if S is None and R is None:
            continue
        if S is None:
            raise CertificateError("skip", f"checkpoint layer {c} carries a residual, target "
                                           f"layer {i} has no skip", layer=c)
        q, route, P = S
        source = 0 if q == 0 else cps[q - 1]
        if R is None:
            raise CertificateError("skip", f"checkpoint layer {c} carries no residual, target "
                                           f"layer {i} has a {route} skip from node {q} (the "
                                           f"residual from node {source})", layer=c)
        frm, residual_route, RP = R
        if frm != source:
            raise CertificateError("skip", f"checkpoint layer {c}: residual from node {frm}, "
                                           f"target layer {i}'s skip is from its node {q}, whose "
                                           f"checkpoint is node {source}", layer=c)
        if residual_route != route:
            raise CertificateError("skip", f"checkpoint layer {c}: residual of kind "
                                           f"{residual_route}, target layer {i}'s skip has kind "
                                           f"{route}", layer=c)
        diff = _differs(RP, P)
        if diff is not None:
            raise CertificateError("skip", f"checkpoint layer {c}: the residual's weight {diff} "
                                           f"(target layer {i})", layer=c)

