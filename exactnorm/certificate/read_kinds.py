"""The package's one exact reader of documents: a certificate of every kind and version
(docs/certificate-format.md) — both networks (:func:`read_networks`), the frozen network alone
(:func:`read_frozen`), the target alone (:func:`read_target`) — a *target file* (the same
``domain`` and ``target`` sections, any layer kinds, :func:`read_target`), and an exact
cross-check of a construction (:func:`exact_agreement`).

One reader. The document is parsed and validated once, by the checker's reader
(:func:`exactnorm.checker.document.read_certificate`: every reading and structural rule, in the
checker's order, no arithmetic on maps), which returns the declared, typed records of
:mod:`exactnorm.checker.records`; each layer's record is then turned into the exact model layer
by its kind's codec (``target_from_record``, ``frozen_from_record`` in
:mod:`exactnorm.certificate.kinds`), and the topology (a target layer's ``input`` and ``skip``, a
checkpoint's ``residual``) by this kind-free frame. Nothing here parses JSON: a malformed
document is refused with the checker's rule and message, as an :class:`~exactnorm.errors.
InputError` (exit 2). Weights given by reference are drawn by the fast generator from records the
reference generator validated (:mod:`exactnorm.certificate.kinds.records`). A target file has no
``format``: its sections are read with the rules of the newest version, its optional low-rank
``factors`` (docs/constructions.md) are set aside for the construction that reads them, a layer
without ``activation`` takes the default of target files (relu, the last layer identity), and a
file without a ``domain`` takes the caller's :class:`~exactnorm.model.box.Box`.

>>> from flint import fmpq, fmpq_mat
>>> from exactnorm.certificate.write import certificate_document
>>> from exactnorm.constructions.plan import construct
>>> from exactnorm.model.layers import TargetLayer
>>> from exactnorm.model.network import TargetNetwork
>>> from exactnorm.model.operators import Conv, ConvGeometry
>>> g = ConvGeometry((1, 3, 3), (2, 2))
>>> t = TargetNetwork((TargetLayer(Conv(g, fmpq_mat([[1, -1, 2, 0]])), (fmpq(1),), "relu"),),
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
from exactnorm.checker.vocabulary import VERSIONS
from exactnorm.errors import InputError, InvariantError, LimitExceededError, ShapeError
from exactnorm.exact.rationals import DEFAULT_MAX_DIGITS, format_number
from exactnorm.model.box import Box
from exactnorm.model.network import FrozenNetwork, TargetNetwork, Wiring

__all__ = ["TARGET_FILE_KEYS", "exact_agreement", "read_target", "read_frozen",
           "read_networks"]

#: the top-level keys of a target file: its two sections and the optional low-rank factors
TARGET_FILE_KEYS = ("domain", "target", "factors")


def _refused(exc: CertificateError, what: str = "certificate") -> InputError:
    """The checker's refusal of a document as the package's input error (exit 2)."""
    rule = getattr(exc, "rule", "format")
    error = LimitExceededError if "above the limit" in str(exc) else InputError
    return error(f"{what} is malformed (rule {rule}): {exc}"[:400])


def _target(lower: Any, upper: Any, records: list[TargetRecord]) -> TargetNetwork:
    """The target network of its records: each layer by its kind's codec, the topology here."""
    layers = tuple(CODECS[rec.kind].target_from_record(rec) for rec in records)
    wiring = tuple(Wiring(rec.input, route_skip(rec.skip)) for rec in records)
    chain = all(w == Wiring(i) for i, w in enumerate(wiring))
    return TargetNetwork(layers, flint_numbers(lower), flint_numbers(upper),
                         wiring=None if chain else wiring)


def _declared_input_size(layer: Any) -> int:
    """The input size a first target layer declares: its ``input_shape`` (C·H·W, a windowed or
    pooling layer), else the columns of its ``weight`` (plain rows or ``{"den", "num"}``); 1
    when it declares neither (the checker's rules then name what is wrong)."""
    if not isinstance(layer, dict):
        return 1
    shape = layer.get("input_shape")
    if isinstance(shape, list) and shape and all(type(v) is int and v > 0 for v in shape):
        size = 1
        for v in shape:
            size *= v
        return size
    weight = layer.get("weight")
    rows = weight.get("num") if isinstance(weight, dict) else weight
    if isinstance(rows, list) and rows and isinstance(rows[0], list) and rows[0]:
        return len(rows[0])
    return 1


def _file_layer(layer: Any, last: bool) -> Any:
    """A target file's layer as a certificate holds it: its ``factors`` set aside, and without
    an ``activation`` the default of target files (relu, the last layer identity)."""
    if not isinstance(layer, dict):
        return layer
    out = {k: v for k, v in layer.items() if k != "factors"}
    out.setdefault("activation", "identity" if last else "relu")
    return out


def _target_file(doc: dict[str, Any], box: Box | None) -> dict[str, Any]:
    """A target file as the sections the checker's reader reads (module docstring)."""
    extra = sorted(set(map(str, doc)) - set(TARGET_FILE_KEYS))
    if extra:
        raise CertificateError("format", f"unknown top-level key {extra[0]!r} (a target file "
                                         f"has {', '.join(TARGET_FILE_KEYS)})")
    target = doc.get("target")
    if isinstance(target, dict) and isinstance(target.get("layers"), list):
        layers = target["layers"]
        target = {**target, "layers": [_file_layer(layer, i == len(layers))
                                       for i, layer in enumerate(layers, 1)]}
    sections = {"target": target} if "target" in doc else {}
    layers = target.get("layers") if isinstance(target, dict) else None
    first = layers[0] if isinstance(layers, list) and layers else None
    if "domain" in doc:
        if box is not None:
            raise InputError("the target file has its own 'domain' and box was given too; "
                             "remove one", parameter="box")
        sections["domain"] = domain = doc["domain"]
        lower = domain.get("lower") if isinstance(domain, dict) else None
        declared = _declared_input_size(first)
        if isinstance(lower, list) and lower and first is not None and declared != len(lower) \
                and (not isinstance(first, dict) or "input" not in first):
            # in the words of the file's box, not of a layer's row
            raise ShapeError(f"the box has {len(lower)} coordinates but the network input has "
                             f"{declared}")
    elif box is not None:
        lower, upper = box.fractions(_declared_input_size(first))
        sections["domain"] = {"lower": [format_number(x) for x in lower],
                              "upper": [format_number(x) for x in upper]}
    else:
        raise InputError("the target file has no 'domain'; give one in the file, or box LO:HI "
                         "(or box_file, box_from_data)",
                         parameter=("box", "box_file", "box_from_data"))
    return sections


def _width_limit(g: TargetNetwork, max_width: int) -> TargetNetwork:
    for i, layer in enumerate(g.layers, 1):
        if max(layer.width, layer.input_size) > max_width:
            raise LimitExceededError(f"target layer {i} ({layer.kind}) maps {layer.input_size} "
                                     f"to {layer.width} values, above the width limit "
                                     f"{max_width} (raise it with --max-width)",
                                     parameter="max_width")
    return g


def read_target(doc: Any, *, box: Box | None = None, max_digits: int = DEFAULT_MAX_DIGITS,
                max_width: int | None = None) -> TargetNetwork:
    """The target of a certificate of any kinds and versions (the checker's rules of its
    ``format``, ``domain`` and ``target`` sections; no frozen matrix is read), or of a target
    file: a document without ``format`` holding ``domain`` (or, without it, ``box``),
    ``target`` and optionally ``factors`` (module docstring). ``max_width`` refuses wider
    layers."""
    what = "certificate" if isinstance(doc, dict) and "format" in doc else "target file"
    try:
        max_digits = check_max_digits(max_digits)
        if not isinstance(doc, dict):
            raise CertificateError("format", "a certificate or a target file is a JSON object")
        if what == "certificate":
            if box is not None:
                raise InputError("a certificate has its own domain and box was given too; "
                                 "remove one", parameter="box")
            version = rule_format(doc)
        else:
            doc, version = _target_file(doc, box), max(VERSIONS)
            if "target" not in doc:
                raise CertificateError("format", "a target file has a 'target' section")
        lo, hi = rule_domain(doc, max_digits)
        records = checker_document.read_target(doc, len(lo), max_digits, version)
    except CertificateError as exc:
        raise _refused(exc, what) from None
    g = _target(lo, hi, records)
    return g if max_width is None else _width_limit(g, max_width)


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
    return _target(lo, hi, targets), _frozen(doc, len(lo), layers, cps, prov)


def _frozen(doc: dict[str, Any], d0: int, layers: list[Any], cps: list[int],
            prov: Provenance) -> FrozenNetwork:
    """The frozen network of its records: each layer by its kind's codec, residuals here."""
    source = _sources(doc, prov)
    frozen = tuple(CODECS[rec.kind].frozen_from_record(rec, j, source)
                   for j, rec in enumerate(layers, 1))
    residuals = tuple((j, skip) for j, skip in
                      ((j, route_skip(rec.residual)) for j, rec in enumerate(layers, 1))
                      if skip is not None)
    return FrozenNetwork(d0, frozen, tuple(cps), residuals=residuals)


def read_frozen(doc: Any, *, max_digits: int = DEFAULT_MAX_DIGITS) -> FrozenNetwork:
    """The frozen network of a certificate (:func:`read_networks`), or of a document that holds
    only its ``domain`` and ``network`` sections (an export's view of one): the checker's
    reading rules of those sections, in the version the document states (the newest without
    one); the rules that relate the network to a target (checkpoints, segments) need the
    target, and are applied only when it is there."""
    if isinstance(doc, dict) and "target" in doc:
        return read_networks(doc, max_digits=max_digits)[1]
    try:
        max_digits = check_max_digits(max_digits)
        if not isinstance(doc, dict):
            raise CertificateError("format", "a network document is a JSON object")
        version = doc.get("version", max(VERSIONS))
        if type(version) is not int or version not in VERSIONS:
            raise CertificateError("format", f"unsupported version {version!r}")
        prov = Provenance(version)
        lo, _ = rule_domain(doc, max_digits)
        layers, cps = checker_document.read_network(doc, len(lo), max_digits, prov)
    except CertificateError as exc:
        raise _refused(exc, "network document") from None
    return _frozen(doc, len(lo), layers, cps, prov)


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
