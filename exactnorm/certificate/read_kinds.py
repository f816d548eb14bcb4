"""The package's exact reading of a certificate of every kind and version
(docs/certificate-format.md): both networks (:func:`read_networks`), the target alone
(:func:`read_target`), and an exact cross-check of a construction (:func:`exact_agreement`).

One reader. The document is parsed and validated once, by the checker's reader
(:func:`exactnorm.checker.document.read_certificate`: every reading and structural rule, in the
checker's order, no arithmetic on maps), which returns the declared, typed records of
:mod:`exactnorm.checker.records`; each layer's record is then turned into the exact model layer
by its kind's codec (``target_from_record``, ``frozen_from_record`` in
:mod:`exactnorm.certificate.kinds`), and the topology (a target layer's ``input`` and ``skip``, a
checkpoint's ``residual``) by this kind-free frame. Nothing here parses JSON: a malformed
document is refused with the checker's rule and message, as an :class:`~exactnorm.errors.
InputError` (exit 2). Weights given by reference are drawn by the fast generator from records the
reference generator validated (:mod:`exactnorm.certificate.kinds.records`).

>>> from flint import fmpq, fmpq_mat
>>> from exactnorm.certificate.write import certificate_document
>>> from exactnorm.constructions.plan import construct
>>> from exactnorm.model.kinds import ConvGeometry, ConvTargetLayer
>>> from exactnorm.model.network import TargetNetwork
>>> g = ConvGeometry((1, 3, 3), (2, 2))
>>> t = TargetNetwork((ConvTargetLayer(g, fmpq_mat([[1, -1, 2, 0]]), (fmpq(1),), "relu"),),
...                   (fmpq(0),) * 9, (fmpq(1),) * 9)
>>> exact_agreement(certificate_document(construct(t, seed=0)), points=2, seed=0)
2
"""

from __future__ import annotations

import random
from typing import Any

from flint import fmpq

from exactnorm.certificate.kinds import CODECS
from exactnorm.certificate.kinds.records import flint_numbers, route_skip
from exactnorm.checker import document as checker_document
from exactnorm.checker.numbers import CertificateError, check_max_digits
from exactnorm.checker.provenance import Provenance
from exactnorm.checker.reading import rule_domain, rule_format
from exactnorm.checker.records import TargetRecord
from exactnorm.errors import InputError, InvariantError, LimitExceededError
from exactnorm.exact.rationals import DEFAULT_MAX_DIGITS
from exactnorm.model.network import FrozenNetwork, TargetNetwork, Wiring

__all__ = ["exact_agreement", "needs_kind_reader", "read_target", "read_networks"]


def _refused(exc: CertificateError) -> InputError:
    """The checker's refusal of a document as the package's input error (exit 2)."""
    rule = getattr(exc, "rule", "format")
    error = LimitExceededError if "above the limit" in str(exc) else InputError
    return error(f"certificate is malformed (rule {rule}): {exc}"[:400])


def _target(lower: Any, upper: Any, records: list[TargetRecord]) -> TargetNetwork:
    """The target network of its records: each layer by its kind's codec, the topology here."""
    layers = tuple(CODECS[rec.kind].target_from_record(rec) for rec in records)
    wiring = tuple(Wiring(rec.input, route_skip(rec.skip)) for rec in records)
    chain = all(w == Wiring(i) for i, w in enumerate(wiring))
    return TargetNetwork(layers, flint_numbers(lower), flint_numbers(upper),
                         wiring=None if chain else wiring)


def read_target(doc: Any, *, max_digits: int = DEFAULT_MAX_DIGITS) -> TargetNetwork:
    """The target of a certificate of any kinds and versions: the checker's rules of its
    ``format``, ``domain`` and ``target`` sections (no frozen matrix is read)."""
    try:
        max_digits = check_max_digits(max_digits)
        if not isinstance(doc, dict):
            raise CertificateError("format", "a certificate is a JSON object")
        version = rule_format(doc)
        lo, hi = rule_domain(doc, max_digits)
        records = checker_document.read_target(doc, len(lo), max_digits, version)
    except CertificateError as exc:
        raise _refused(exc) from None
    return _target(lo, hi, records)


def read_networks(doc: Any, *, max_digits: int = DEFAULT_MAX_DIGITS
                  ) -> tuple[TargetNetwork, FrozenNetwork]:
    """Both networks of a certificate of any kinds and versions: read and validated by the
    checker's reader (its reading and structural rules, not its arithmetic), built from its
    records. Whether the proof holds is the checker's verdict, not this reader's."""
    try:
        lo, hi, targets, layers, cps, prov = checker_document.read_certificate(
            doc, check_max_digits(max_digits))
    except CertificateError as exc:
        raise _refused(exc) from None
    target = _target(lo, hi, targets)
    source = _sources(doc, prov)
    frozen = tuple(CODECS[rec.kind].frozen_from_record(rec, j, source)
                   for j, rec in enumerate(layers, 1))
    residuals = tuple((j, skip) for j, skip in
                      ((j, route_skip(rec.residual)) for j, rec in enumerate(layers, 1))
                      if skip is not None)
    return target, FrozenNetwork(len(lo), frozen, tuple(cps), residuals=residuals)


def _sources(doc: dict[str, Any], prov: Provenance) -> Any:
    """``source(j, role)``: the draw record of frozen layer ``j``'s matrix of that role (as the
    checker registered it), or the fixed declaration the checker accepted for it (the checker
    keeps only its summary, so it is taken from the validated document)."""
    drawn = {(d.layer, d.role): d.draw.record for d in prov.draws}

    def source(j: int, role: int) -> dict[str, Any] | None:
        if (j, role) in drawn:
            return drawn[j, role]
        entry = doc["network"]["layers"][j - 1]
        if role >= 2:
            entry = entry["skip"][(role - 2) // 2]
        declared = entry.get("source")
        return declared if isinstance(declared, dict) else None

    return source


def exact_agreement(doc: dict[str, Any], *, points: int = 4, seed: int = 0) -> int:
    """Evaluate both networks of a convolutional certificate exactly at ``points`` random
    rational points of the box (its corners ``lower``, ``upper`` first) and at every checkpoint;
    returns the number of points compared.

    A dense cross-check of a construction, not the checker: it can find a wrong certificate, it
    cannot prove one right on the whole box.

    Raises
    ------
    InvariantError
        At the first point where a checkpoint differs from its target layer's value.
    """
    target, net = read_networks(doc)
    rng = random.Random(seed)
    pts = [list(target.lower), list(target.upper)][:points]
    while len(pts) < points:
        pts.append([lo + (hi - lo) * fmpq(rng.randrange(0, 17), 16)
                    for lo, hi in zip(target.lower, target.upper)])
    if len(net.checkpoints) != target.depth:
        raise InvariantError(f"{len(net.checkpoints)} checkpoints for {target.depth} target "
                             f"layers")
    for x in pts:
        values = net.evaluate_checkpoints(x)
        nodes = target.evaluate_nodes(x)  # the target's graph: a layer may read any node
        for i, (cp, value) in enumerate(zip(net.checkpoints, values), 1):
            if value != nodes[i]:
                raise InvariantError(f"checkpoint {cp} differs from target layer {i} at a point "
                                     f"of the box")
    return len(pts)


def needs_kind_reader(doc: Any) -> bool:
    """Whether a certificate or target document has a layer with a ``kind`` field, or a
    residual network's topology (a target layer's ``input`` or ``skip``, a checkpoint's
    ``residual``) — what the dense-only readers (:func:`~exactnorm.certificate.read.
    network_from_dict`, the float reader, the JSON export) do not read; such documents are read
    by :func:`read_networks` (and :func:`read_target`)."""
    if not isinstance(doc, dict):
        return False
    sections = [doc.get("target", {}), doc.get("network", {})]
    # a frozen layer's "input" is always written; a target layer's only off a chain
    fields = (("kind", "input", "skip"), ("kind", "residual"))
    return any(isinstance(s, dict) and isinstance(s.get("layers"), list)
               and any(isinstance(L, dict) and any(f in L for f in names) for L in s["layers"])
               for s, names in zip(sections, fields))
