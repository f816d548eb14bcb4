"""Reading an ``exactnorm.impossibility`` document (docs/certificate-format.md §9.1) with the
certificate's reader, and the target's exact local affine piece at a point. Standard library
only; part of the trusted kernel (the witness rules are in :mod:`.impossibility`).

Contract. :func:`read_impossibility` applies the document's frame rules (``format``: the format
word, the version, the top-level keys, the ``domain`` and ``network`` objects and the keys of a
frozen layer, each unknown or missing key named) and reads every other section with the
functions that read a certificate: the box by :func:`.reading.rule_domain`, the target by
:func:`.document.read_target` (every kind, ``input`` and ``skip`` interpreted as in §10), each
frozen weight by :func:`.provenance.rule_provenance` into the one :class:`.provenance.Provenance`
(keys chosen by the writer, as in a version-2 certificate), all sizes and costs counted in the
one :class:`.budget.Budget`. It returns a :class:`Given`; every failure is a
:class:`~.numbers.CertificateError` naming its rule.

:func:`local_piece` builds the target's affine piece near a point, as the graph it is (each
layer reads its ``input`` node and adds its ``skip``): with the walk's counted map steps
(:func:`.walk.compose`, :func:`.walk.materialized`, :func:`.walk.skip_term`,
:func:`.walk.add_maps`) over the arithmetic, node 0's map the identity of ``x``; the
pre-activations ``z_i(x)`` are the maps' exact ranges over the point's box ``[x, x]``
(:func:`values_at`), and a map's coefficients its Jacobian (:func:`matrix_of`).

Correctness argument. Target layer ``i`` computes ``a_i = σ_i(W_i a_p + b_i + S a_q)`` (§10).
Where every ReLU neuron is strictly on one side of 0, each ``σ_i`` is, near the point, the fixed
diagonal ``D_i`` (``1`` where ``z_i(x) > 0``), so near ``x``, ``z_i = Z_i x + c_i`` with ``Z_i =
W_i A_p + S A_q`` and ``a_i = D_i z_i`` (``A_0 = I``), the maps the walk's steps compose exactly;
a chain has ``Z_L = W_L D_{L−1} ⋯ D_1 W_1``. The range of an affine map over the one-point box
``[x, x]`` is its value at ``x``. Setting ``D_1``'s entry ``r`` to 1 or 0 gives the one-sided
pieces across neuron ``r``'s hyperplane.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .budget import STEP, Budget
from .document import layer_kind, read_target, rule_schema_impossibility
from .kinds.dense import NAME as DENSE
from .numbers import (
    CertificateError,
    IntMatrix,
    IntVector,
    activation,
    field,
    layer_list,
    over_one_denominator,
    show,
)
from .provenance import ROLE_WEIGHT, Draw, Provenance, rule_provenance
from .reading import rule_domain, written_size
from .records import TargetRecord
from .vocabulary import IMPOSSIBILITY_FORMAT, IMPOSSIBILITY_VERSIONS, MIN_WORK, WORK_PER_BIT
from .walk import Scaled, add_maps, compose, materialized, skip_term

__all__ = ["DOCUMENT_KEYS", "GIVEN_LAYER_KEYS", "MATRIX_KINDS", "Given", "exact_keys",
           "read_impossibility", "weight_of", "local_piece", "values_at", "matrix_of"]

#: the top-level keys of an impossibility document (§9.1)
DOCUMENT_KEYS = ("format", "version", "domain", "target", "network", "witness", "provenance")
#: the keys a frozen layer of an impossibility document may have (its γ and β are what the
#: claim quantifies over, and it reads the layer before)
GIVEN_LAYER_KEYS = ("kind", "weight", "source", "activation")
#: the layer kinds the witnesses' linear algebra reads: a matrix of the node read, no window
MATRIX_KINDS = (DENSE,)


@dataclass
class Given:
    """An impossibility document as read: the box (``free[t]``: ``lower < upper``), the target's
    records, the frozen matrices (explicit, or a :class:`~.provenance.Draw` regenerated when a
    rule needs it) with their activations, and their provenance."""

    lower: IntVector
    upper: IntVector
    free: list[bool]
    target: list[TargetRecord]
    frozen: list[tuple[Any, str]]
    prov: Provenance


def exact_keys(obj: object, keys: tuple[str, ...] | set[str], where: str, why: str = "") -> dict:
    """Rule ``format``: ``obj`` is an object with exactly ``keys`` (the first missing or
    unknown key named)."""
    if not isinstance(obj, dict):
        raise CertificateError("format", f"{where} must be a JSON object")
    missing = sorted(k for k in keys if k not in obj)
    if missing:
        raise CertificateError("format", f"{where} has no {show(missing[0])}")
    extra = sorted(set(map(str, obj)) - set(keys))
    if extra:
        raise CertificateError("format", f"{where}: unknown key {show(extra[0])}{why}")
    return obj


def read_impossibility(doc: dict, max_digits: int, budget: Budget,
                       default_budget: bool) -> Given:
    """The reading rules of §9.1, in document order; with ``default_budget`` the budget then
    grows with the bits of the numbers the document writes (§7), as a certificate's."""
    if doc.get("format") != IMPOSSIBILITY_FORMAT:
        raise CertificateError("format", f"format must be \"{IMPOSSIBILITY_FORMAT}\"")
    version = doc.get("version")
    if type(version) is not int or version not in IMPOSSIBILITY_VERSIONS:
        raise CertificateError("format", f"\"version\": unsupported impossibility version "
                                         f"{show(version)} "
                                         f"(this checker reads version 1)")
    rule_schema_impossibility(doc)  # every key of every object (Appendix A)
    for key in DOCUMENT_KEYS[:-1]:
        field(doc, key, "impossibility document")
    extra = sorted(set(map(str, doc)) - set(DOCUMENT_KEYS))
    if extra:
        raise CertificateError("format", f"impossibility document: unknown key {show(extra[0])}")
    exact_keys(doc["domain"], ("lower", "upper"), "domain")
    lower, upper = rule_domain(doc, max_digits)
    # the target as a certificate's (version 3: input and skip read as in §10)
    target = read_target(doc, len(lower), max_digits, 3)
    for i, tl in enumerate(target, 1):
        if tl.kind not in MATRIX_KINDS:
            raise CertificateError("format", f"target layer {i}: kind {tl.kind}; the target of "
                                             f"an impossibility document has dense layers")
    network = exact_keys(doc["network"], ("layers",), "network",
                          " (no checkpoints: the claim is about the whole network)")
    prov = Provenance(2, budget=budget)  # keys chosen by the writer, distinct (§4)
    frozen: list[tuple[Any, str]] = []
    width, explicit = len(lower), 0
    for j, layer in enumerate(layer_list(network, "network"), 1):
        where = f"network layer {j}"
        if not isinstance(layer, dict):
            raise CertificateError("format", f"{where} must be a JSON object")
        kind = layer_kind(layer, where)
        if kind not in MATRIX_KINDS:
            raise CertificateError("format", f"{where}: kind {kind}; the frozen layers of an "
                                             f"impossibility document are dense")
        extra = sorted(set(map(str, layer)) - set(GIVEN_LAYER_KEYS))
        if extra:
            raise CertificateError("format", f"{where}: unknown key {show(extra[0])} (a frozen "
                                             f"layer here is {{\"weight\", \"activation\", "
                                             f"\"source\"?, \"kind\"?}}: it reads the layer "
                                             f"before, and its γ and β are what the claim "
                                             f"quantifies over)", layer=j)
        V = rule_provenance(layer, field(layer, "weight", where), None, where, j, ROLE_WEIGHT,
                            None, width, prov, max_digits)
        act = activation(field(layer, "activation", where), where)
        frozen.append((V, act))
        explicit += V.written if isinstance(V, IntMatrix) else 0
        width = V.nrows
    if width != target[-1].width:
        raise CertificateError("shape", f"the frozen network has {width} outputs, the target "
                                        f"{target[-1].width}")
    if default_budget:
        written = written_size(lower, upper, target, [], prov) + explicit
        budget.max_work = max(MIN_WORK, WORK_PER_BIT * written)
    free = [lower.nums[t] * upper.den < upper.nums[t] * lower.den for t in range(len(lower))]
    return Given(lower, upper, free, target, frozen, prov)


def weight_of(V: IntMatrix | Draw, budget: Budget, where: str) -> IntMatrix:
    """A frozen matrix as integers over one denominator: a draw is regenerated, its size and
    cost counted first (§7)."""
    if isinstance(V, IntMatrix):
        return V
    budget.size(V.rows, V.cols, None, V.bits, where=where, what="the regenerated matrix")
    budget.regenerate(V.rows * V.cols, V.words, V.masked, None, where)
    if V.integral:
        return IntMatrix(V.integers(), 1)
    flat, den = over_one_denominator([(x.numerator, x.denominator) for row in V.fractions()
                                      for x in row], "a frozen draw")
    return IntMatrix([flat[r * V.cols:(r + 1) * V.cols] for r in range(V.rows)], den)


def _reads(tl: TargetRecord) -> set[int]:
    """The nodes a target layer reads: its input and its skip's source."""
    return {tl.input} | ({tl.skip[0]} if tl.skip is not None else set())


def _top(nums: list[int]) -> int:
    return max(map(abs, nums), default=0).bit_length()


def values_at(ar: Any, node: Any, point: Any, xbits: int, budget: Budget,
              where: str) -> IntVector:
    """The exact value of a map at the point: its range over the point's box ``[x, x]``
    (:meth:`.protocol.Arithmetic.ranges`), counted first as rule ``stability`` counts ranges."""
    rows, s = ar.nrows(node), len(ar.support(node))
    hnum, _ = ar.height(node)
    budget.size(2 * rows, 1, None, hnum + xbits + s.bit_length() + 1, where=where,
                what="its values at the point")
    budget.product(2 * rows, s, 1, hnum, xbits, None, where)
    mins, _, den, _, _ = ar.ranges(node, point)
    return IntVector([int(v) for v in mins], int(den))


def matrix_of(ar: Any, node: Any, width: int, budget: Budget, where: str) -> IntMatrix:
    """A map's coefficients as a ``rows × width`` integer matrix over its denominator (the
    constant dropped), counted first."""
    rows = ar.nrows(node)
    budget.size(rows, width, None, sum(ar.height(node)), where=where, what="a Jacobian")
    budget.work(rows * width * STEP, None, where)
    cols, coef, _, den = ar.plain(node)
    out = [[0] * width for _ in range(rows)]
    for r, row in enumerate(coef):
        for t, v in zip(cols, row):
            out[r][t] = v
    return IntMatrix(out, den)


def local_piece(ar: Any, g: Given, x: IntVector, budget: Budget,
                flip: tuple[int, bool] | None = None) -> tuple[list[IntVector], Any, Any]:
    """The target's affine piece near ``x`` (module docstring): the pre-activations
    ``z_1(x) … z_L(x)`` and, as maps of ``x`` in the arithmetic ``ar``, the output's
    pre-activation ``Z_L`` and the output ``A_L``, for the activation pattern at ``x`` (``flip
    = (r, on)`` sets neuron ``r`` of layer 1). Every map is built by the walk's counted steps
    (:func:`.walk.compose`, …): node 0 is ``x`` itself, a layer's pre-activation is ``W·A_p``
    plus ``b`` plus its skip, a ReLU layer keeps the rows its pattern keeps."""
    c0 = len(g.lower)
    point = ar.box([[n] for n in x.nums], [[n] for n in x.nums], x.den)
    xbits = max(_top(x.nums), x.den.bit_length())
    last = {q: i for i, tl in enumerate(g.target, 1) for q in _reads(tl)}
    nodes: dict[int, Any] = {0: None}
    values: list[IntVector] = []
    Z: Any = None
    for i, tl in enumerate(g.target, 1):
        W, b = tl.W, tl.b
        assert W is not None and b is not None  # dense records
        where = f"target layer {i} at the witness's point"
        Z = compose(ar, W, nodes[tl.input], c0, budget, None, where)
        Z = materialized(ar, Scaled(Z, IntVector([1] * len(b), 1), b), budget, None, where)
        if tl.skip is not None:
            q, _, picks = tl.skip
            Z = add_maps(ar, Z, skip_term(ar, picks, nodes[q], c0, budget, None, where), budget,
                         None, where)
        z = values_at(ar, Z, point, xbits, budget, where)
        values.append(z)
        A = Z
        if tl.act == "relu":
            keep = [int(v > 0) for v in z.nums]
            if i == 1 and flip is not None:
                keep[flip[0]] = int(flip[1])
            A = materialized(ar, Scaled(Z, IntVector(keep, 1), IntVector([0] * len(keep), 1)),
                             budget, None, where)
        nodes[i] = A
        for q in _reads(tl):
            if last[q] == i:
                del nodes[q]
    return values, Z, nodes[len(g.target)]
