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

:func:`preactivations` and :func:`jacobian` evaluate the target as the graph it is (each layer
reads its ``input`` node and adds its ``skip``) at a point: the pre-activations ``z_i(x)`` and,
for the activation pattern there, the Jacobian of the output's pre-activation (or of the output,
with a neuron of layer 1 set on or off); every product is counted before it is done.

Correctness argument. Target layer ``i`` computes ``a_i = σ_i(W_i a_p + b_i + S a_q)`` (§10),
so ``z_i = W_i a_p + b_i + S a_q`` exactly, over the product of the denominators (numbers are
never rounded, fractions need not be in lowest terms). Where every ReLU neuron is strictly on
one side of 0, each ``σ_i`` is locally the fixed diagonal ``D_i`` (``1`` where ``z > 0``), so by
the chain rule over the graph ``dz_i/dx = W_i·da_p/dx + S·da_q/dx`` and ``da_i/dx =
D_i·dz_i/dx`` with ``da_0/dx = I``; a chain has ``J = W_L D_{L−1} ⋯ D_1 W_1``.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import mul
from typing import Any

from .budget import STEP, Budget, mul_cost
from .document import layer_kind, read_target
from .kinds.dense import NAME as DENSE
from .numbers import (
    CertificateError,
    IntMatrix,
    IntVector,
    activation,
    bits_of,
    field,
    layer_list,
    over_one_denominator,
    show,
)
from .provenance import ROLE_WEIGHT, Draw, Provenance, rule_provenance
from .reading import rule_domain, written_size
from .records import TargetRecord
from .vocabulary import IMPOSSIBILITY_FORMAT, IMPOSSIBILITY_VERSIONS, MIN_WORK, WORK_PER_BIT

__all__ = ["DOCUMENT_KEYS", "GIVEN_LAYER_KEYS", "Given", "read_impossibility", "weight_of",
           "preactivations", "jacobian"]

#: the top-level keys of an impossibility document (§9.1)
DOCUMENT_KEYS = ("format", "version", "domain", "target", "network", "witness", "provenance")
#: the keys a frozen layer of an impossibility document may have (its γ and β are what the
#: claim quantifies over, and it reads the layer before)
GIVEN_LAYER_KEYS = ("kind", "weight", "source", "activation")


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


def _exact_keys(obj: object, keys: tuple[str, ...], where: str, why: str = "") -> dict:
    """Rule ``format``: ``obj`` is an object with exactly ``keys`` (the first missing or
    unknown key named)."""
    if not isinstance(obj, dict):
        raise CertificateError("format", f"{where} must be a JSON object")
    missing = [k for k in keys if k not in obj]
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
        raise CertificateError("format", f"unsupported impossibility version {show(version)} "
                                         f"(this checker reads version 1)")
    for key in DOCUMENT_KEYS[:-1]:
        field(doc, key, "impossibility document")
    extra = sorted(set(map(str, doc)) - set(DOCUMENT_KEYS))
    if extra:
        raise CertificateError("format", f"impossibility document: unknown key {show(extra[0])}")
    _exact_keys(doc["domain"], ("lower", "upper"), "domain")
    lower, upper = rule_domain(doc, max_digits)
    # the target as a certificate's (version 3: input and skip read as in §10)
    target = read_target(doc, len(lower), max_digits, 3)
    for i, tl in enumerate(target, 1):
        if tl.kind != DENSE:
            raise CertificateError("format", f"target layer {i}: kind {tl.kind}; the target of "
                                             f"an impossibility document has dense layers")
    network = _exact_keys(doc["network"], ("layers",), "network",
                          " (no checkpoints: the claim is about the whole network)")
    prov = Provenance(2, budget=budget)  # keys chosen by the writer, distinct (§4)
    frozen: list[tuple[Any, str]] = []
    width, explicit = len(lower), 0
    for j, layer in enumerate(layer_list(network, "network"), 1):
        where = f"network layer {j}"
        if not isinstance(layer, dict):
            raise CertificateError("format", f"{where} must be a JSON object")
        kind = layer_kind(layer, where)
        if kind != DENSE:
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
    budget.regenerate(V.rows * V.cols, V.words, V.masked, None)
    if V.integral:
        return IntMatrix(V.integers(), 1)
    flat, den = over_one_denominator([(x.numerator, x.denominator) for row in V.fractions()
                                      for x in row], "a frozen draw")
    return IntMatrix([flat[r * V.cols:(r + 1) * V.cols] for r in range(V.rows)], den)


def _reads(tl: TargetRecord) -> set[int]:
    """The nodes a target layer reads: its input and its skip's source."""
    return {tl.input} | ({tl.skip[0]} if tl.skip is not None else set())


def _last_reads(target: list[TargetRecord]) -> dict[int, int]:
    """For every node, the last target layer that reads it."""
    return {q: i for i, tl in enumerate(target, 1) for q in _reads(tl)}


def _top(nums: list[int]) -> int:
    return max(map(abs, nums), default=0).bit_length()


def preactivations(g: Given, x: IntVector, budget: Budget) -> list[IntVector]:
    """``z_1(x), …, z_L(x)``, each over the product of the denominators it meets (not reduced),
    every product counted first."""
    nodes: dict[int, tuple[list[int], int]] = {0: (x.nums, x.den)}
    last = _last_reads(g.target)
    out = []
    for i, tl in enumerate(g.target, 1):
        W, b = tl.W, tl.b
        assert W is not None and b is not None  # dense records
        a, den = nodes[tl.input]
        abits, wbits, bbits = _top(a), _top([v for row in W.rows for v in row]), bits_of(b)
        where = f"the target's pre-activations at the point, layer {i}"
        budget.product(W.nrows, W.ncols, 1, wbits, abits, None, where)
        budget.work(W.nrows * (2 * STEP + mul_cost(wbits + abits + W.ncols.bit_length(), bbits)
                               + mul_cost(bbits, W.den.bit_length() + den.bit_length())), None,
                    where)
        scale = W.den * den
        z = [sum(map(mul, row, a)) * b.den + bn * scale for row, bn in zip(W.rows, b.nums)]
        zden = scale * b.den
        if tl.skip is not None:
            q, _, picks = tl.skip
            s, sden = nodes[q]
            budget.work(len(z) * (2 * STEP + mul_cost(_top(z), sden.bit_length())
                                  + mul_cost(_top(s), zden.bit_length())), None, where)
            z = [v * sden + (0 if t is None else s[t] * zden) for v, t in zip(z, picks.rows)]
            zden *= sden
        out.append(IntVector(z, zden))
        nodes[i] = (z if tl.act == "identity" else [max(v, 0) for v in z], zden)
        for q in _reads(tl):
            if last[q] == i:
                del nodes[q]
    return out


def _rows_of(A: IntMatrix | None, picks: Any, width: int) -> IntMatrix:
    """``S·A`` for a 0/1 skip (row ``r`` copies row ``picks.rows[r]`` of ``A``, or is 0);
    ``A = None`` is the identity of the input (rows are unit vectors)."""
    if A is None:
        return IntMatrix([[int(c == t) for c in range(width)] if t is not None else [0] * width
                          for t in picks.rows], 1)
    zero = [0] * A.ncols
    return IntMatrix([zero if t is None else A.rows[t] for t in picks.rows], A.den)


def jacobian(ops: Any, g: Given, values: list[IntVector], budget: Budget, where: str,
             output: bool = False, flip: tuple[int, bool] | None = None) -> IntMatrix:
    """The Jacobian of the output's pre-activation ``z_L`` (``output``: of the output ``a_L``)
    for the activation pattern at the point whose pre-activations are ``values``; ``flip =
    (r, on)`` sets neuron ``r`` of layer 1 on or off. ``ops.product`` multiplies integer
    matrices (:class:`.protocol.Linear`); sizes and products are counted first."""
    c0 = len(g.lower)
    nodes: dict[int, IntMatrix | None] = {0: None}
    last = _last_reads(g.target)
    L = len(g.target)
    for i, tl in enumerate(g.target, 1):
        W = tl.W
        assert W is not None
        A = nodes[tl.input]
        wbits = _top([v for row in W.rows for v in row])
        abits = 0 if A is None else _top([v for row in A.rows for v in row])
        zbits = wbits + abits + W.ncols.bit_length() + 1
        budget.size(W.nrows, c0, None, max(zbits, W.den.bit_length() + (
            0 if A is None else A.den.bit_length())), where=where, what="a Jacobian")
        if A is None:
            budget.work(W.nrows * c0 * STEP, None, where)
            Z = IntMatrix([list(row) for row in W.rows], W.den)
        else:
            budget.product(W.nrows, W.ncols, c0, wbits, abits, None, where)
            Z = IntMatrix(ops.product(W.rows, A.rows), W.den * A.den)
        if tl.skip is not None:
            q, _, picks = tl.skip
            Aq = nodes[q]
            sbits = 1 if Aq is None else _top([v for row in Aq.rows for v in row])
            sden = 1 if Aq is None else Aq.den
            budget.size(W.nrows, c0, None, max(zbits, sbits) + sden.bit_length()
                        + Z.den.bit_length() + 1, where=where, what="a Jacobian")
            budget.work(W.nrows * c0 * (2 * STEP + mul_cost(zbits, sden.bit_length())
                                        + mul_cost(sbits, Z.den.bit_length())), None, where)
            S = _rows_of(Aq, picks, c0)
            Z = IntMatrix([[u * S.den + v * Z.den for u, v in zip(zr, sr)]
                           for zr, sr in zip(Z.rows, S.rows)], Z.den * S.den)
        if i == L and not output:
            return Z
        if tl.act == "relu":
            keep = [v > 0 for v in values[i - 1].nums]
            if i == 1 and flip is not None:
                keep[flip[0]] = flip[1]
            zero = [0] * c0
            Z = IntMatrix([row if k else zero for row, k in zip(Z.rows, keep)], Z.den)
        nodes[i] = Z
        for q in _reads(tl):
            if last[q] == i:
                del nodes[q]
    out = nodes[L]
    assert out is not None
    return out
