"""Reading a certificate (docs/certificate-format.md §0, §8, §10): the target and the frozen
layers through their kind's rules (:data:`.kinds.RULES`), the node reads of every segment, and
the rules in order. Standard library only; it never names a kind.

Contract. :func:`read_certificate` applies the reading and structural rules in document order
(``format``, ``number``, ``shape``, ``domain``, ``provenance``, ``skip``), then ``checkpoints``,
``segment`` (the node reads) and, in version 3, the stream keys of positions and the structure of
the redraws (``provenance``), and returns the typed records of :mod:`.records` that both
arithmetics consume: the box and every vector or matrix as integers over one denominator, frozen
weights given by reference as :class:`~.provenance.Draw` (validated now, regenerated only when
the walk reaches their layer, so memory does not grow with depth), 0/1 skips as
:class:`~.topology.Picks`, and convolution geometry as :class:`~.records.Geometry`. It does
no arithmetic on maps; the one walk (:mod:`.walk`) does. The kind-free rules are in
:mod:`.reading`, a kind's in its module of :mod:`.kinds`.
"""

from __future__ import annotations

from typing import Any

from .kinds import RULES
from .kinds.dense import NAME as DENSE
from .numbers import CertificateError, field, index, layer_list, paused_collector, show
from .provenance import Provenance, redraw_units, rule_stream_keys
from .reading import (
    node_reads,
    rule_checkpoints,
    rule_domain,
    rule_format,
    written_size,
)
from .records import FrozenRecord, TargetRecord
from .schema import CERTIFICATE, IMPOSSIBILITY, closed
from .seed import derived_seed
from .topology import rule_residuals, segment_input, target_input, target_skip
from .vocabulary import LAYER_KINDS, MAX_DIGITS_CAP, SEED_RULE_TARGET

__all__ = ["layer_kind", "closed_layer", "rule_schema", "rule_schema_impossibility", "read_target",
           "read_network", "rule_segments", "read_certificate", "document_seed"]


def layer_kind(layer: object, where: str) -> str:
    """A layer's ``kind``, a word of ``LAYER_KINDS`` (absent: dense; rule ``format``)."""
    kind = layer.get("kind", DENSE) if type(layer) is dict else DENSE
    if type(kind) is not str or kind not in RULES:
        raise _no_kind(kind, where)
    return kind


def _no_kind(kind: object, where: str) -> CertificateError:
    return CertificateError("format", f"{where}: \"kind\" {show(kind)} is not one of "
                                      f"{show(list(LAYER_KINDS))}")


def closed_layer(layer: object, where: str, frozen: bool, version: int,
                 j: int | None) -> str:
    """Rule ``format`` for one layer: a JSON object whose keys are its kind's table (Appendix
    A; a layer without ``kind`` is dense, and says so when it has another kind's keys); returns
    the kind."""
    if type(layer) is not dict:
        raise CertificateError("format", f"{where} must be a JSON object, got {show(layer)}",
                               layer=j)
    kind = layer.get("kind", DENSE)
    rules = RULES.get(kind) if type(kind) is str else None
    if rules is None:
        raise _no_kind(kind, where)
    schema = rules.frozen_schema if frozen else rules.target_schema
    try:
        closed(layer, schema, where, version, j)
    except CertificateError:
        if "kind" not in layer and not layer.keys() <= schema.allowed:
            extra = sorted(map(str, layer.keys() - schema.allowed))[0]
            raise CertificateError("format", f"{where}: unknown key {show(extra)} of a layer "
                                             f"without \"kind\", which is dense "
                                             f"({schema.level}: {schema.listing(version)})",
                                   layer=j) from None
        raise
    return kind


def rule_schema(doc: dict, version: int) -> None:
    """Rule ``format``, the closed schema (docs/certificate-format.md, Appendix A), of the
    document's frame: the certificate's own keys and every object its table describes (domain,
    target, network, redraws, provenance, witnesses) before any value is read. Each layer is
    checked against its kind's table when the reader reaches it (:func:`closed_layer`), before
    any of its values is read."""
    closed(doc, CERTIFICATE, "certificate", version)


def rule_schema_impossibility(doc: dict) -> None:
    """Rule ``format``, the closed schema of an impossibility document (§9.1, Appendix A): its
    frame, its witness by kind, its frozen layers, and its target layers by their kinds' tables,
    read as those of a version-3 certificate (``input`` and ``skip`` included)."""
    closed(doc, IMPOSSIBILITY, "impossibility document", 3)
    for i, layer in enumerate(doc["target"]["layers"], 1):
        closed_layer(layer, f"target layer {i}", False, 3, None)


def read_target(doc: dict, d0: int, max_digits: int, version: int = 3) -> list[TargetRecord]:
    """Target layers as :class:`~.records.TargetRecord`: W is d_i x d_p (dense, ``p`` the node
    read) or c_out x C·kh·kw (conv); a fixed map (a pooling) has neither W nor b. ``skip`` is
    None or ``(q, kind, Picks)`` (:mod:`.topology`)."""
    out: list[TargetRecord] = []
    dims = [d0]
    for i, layer in enumerate(layer_list(doc["target"], "target"), 1):
        where = f"target layer {i}"
        kind = closed_layer(layer, where, False, version, None)
        p = target_input(layer, where, i, kind, version) \
            if "input" in layer or "skip" in layer else i - 1
        rec = RULES[kind].read_target(layer, where, dims[p], max_digits)
        # the kind's record with the node it reads and its skip, its nine fields in order (a
        # NamedTuple's _replace costs three times this: it counts in a chain of 10^5 layers)
        rec = tuple.__new__(TargetRecord, rec[:7] + (p, target_skip(layer, where, i, rec.width,
                                                                    dims)
                                                     if "skip" in layer else None))
        out.append(rec)
        dims.append(rec.width)
    return out


def read_network(doc: dict, d0: int, max_digits: int,
                 prov: Provenance) -> tuple[list[FrozenRecord], list[int]]:
    """Frozen layers as :class:`~.records.FrozenRecord` and the checkpoint list. A pooling
    layer has V, gamma and beta None."""
    dims, out = [d0], []
    for j, layer in enumerate(layer_list(doc["network"], "network"), 1):
        where = f"network layer {j}"
        kind = closed_layer(layer, where, True, prov.version, j)
        src = layer["input"]  # an integer (its table)
        if not 0 <= src < j:
            raise CertificateError("segment", f"{where} reads node {show(src)}, not an earlier "
                                              f"node", layer=j)
        rec, width = RULES[kind].read_frozen(layer, where, j, src, dims, prov, max_digits)
        out.append(rec)
        dims.append(width)
    cps = field(doc["network"], "checkpoints", "network")
    if not isinstance(cps, list):
        raise CertificateError("checkpoints", "checkpoints must be a list")
    if all(type(c) is int for c in cps):  # the common case, without a call per checkpoint
        return out, list(cps)
    return out, [index(c, "checkpoint") for c in cps]


def rule_segments(layers: list[FrozenRecord], cps: list[int],
                  target: list[TargetRecord]) -> None:
    """Rule ``segment``, node reads (docs/certificate-format.md §0, §8, §10), before any
    arithmetic.

    Segment i is layers ``c_{i-1} < j <= c_i``; its input is ``s_i``, the checkpoint of the node
    target layer i reads (``c_{i-1}`` for a chain). Layer j reads (input and skips) only ``s_i``
    or nodes ``c_{i-1} < s < j``, and the checkpoint layer has no skip (rule ``skip``). Which
    layers may open and continue the segment is the rule of target layer i's kind
    (:meth:`.kinds.base.Kind.segment`): a dense segment holds dense layers; in a convolution
    segment the first layer is a conv reading ``s_i``, a later conv reading ``s_i`` has the
    target's window, every other layer is a pointwise conv on the first layer's output grid, and
    no skip reads ``s_i``; a pooling segment is one pooling layer of its kind reading ``s_i``.
    """
    start = 0
    for i, (end, tl) in enumerate(zip(cps, target), 1):
        rules = RULES[tl.kind]
        seg_in = segment_input(cps, tl, i)
        for j in range(start + 1, end + 1):
            layer = layers[j - 1]
            for src in node_reads(layer) if layer.skips else (layer.input,):
                if src != seg_in and not start < src < j:
                    inside = f"[{start}, {j})" if seg_in == start else \
                        f"(its input node {seg_in}" + (f" and nodes {start + 1} to {j - 1})"
                                                       if j > start + 1 else ")")
                    raise CertificateError("segment", f"network layer {j} reads node {src}, "
                                                      f"outside its segment {inside}", layer=j)
            rules.segment(layers, j, start, end, seg_in, tl, i)
        if layers[end - 1].skips:
            raise CertificateError("skip", f"checkpoint layer {end} has a skip connection",
                                   layer=end)
        start = end


def read_certificate(doc: object, max_digits: int, budget: Any = None) -> tuple[Any, ...]:
    """The reading and structural rules, in order; returns (lower, upper, target, layers,
    checkpoints, provenance). ``budget`` counts the few draws the reader regenerates."""
    if not isinstance(doc, dict):
        raise CertificateError("format", "a certificate is a JSON object")
    with paused_collector():
        return _read(doc, max_digits, budget)


def _read(doc: dict, max_digits: int, budget: Any) -> tuple[Any, ...]:
    version = rule_format(doc)
    rule_schema(doc, version)
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


def document_seed(doc: dict, max_digits: int = MAX_DIGITS_CAP,
                  rule: str = SEED_RULE_TARGET) -> int:
    """The seed that seed rule ``rule`` (default ``target.v2``, what a writer draws from with
    ``--seed target``; ``target`` is the first rule) derives from a document's ``domain`` and
    ``target`` sections, read as the checker reads them (docs/generator.md §8)."""
    lo, hi = rule_domain(doc, max_digits)
    return derived_seed(rule, lo, hi, read_target(doc, len(lo), max_digits))
