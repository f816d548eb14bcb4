"""The second document kind: ``exactnorm.impossibility`` (docs/certificate-format.md §9), a proof
that no γ, β of a *given* frozen ReLU network make it equal a target on a box, in a stated class
of tunings. Standard library only; part of the trusted kernel.

Claim checked. The frozen network ``f`` has linear layers ``V_1 … V_L`` (given explicitly,
declared fixed or regenerated from draw records) and computes ``h_j = σ_j(γ_j ⊙ (V_j h_{j−1}) +
β_j)``; the target ``g`` has layers ``σ(W_i a + b_i)``; the box is ``D``. The document claims that
no ``γ, β`` *in the class the witness names* make ``f = g`` on ``D``. Four witnesses:

* ``rank`` (every tuning; ``L = 2``, ``σ_1 = relu``). At an interior point ``x0`` where every
  target ReLU is strictly on one side, ``g`` is affine with Jacobian ``J``. Theorem LB: if
  ``f = g`` on ``D`` then at points near ``x0`` where ``f`` is differentiable, output ``i`` of the
  live set ``I`` has gradient ``γ2_i Σ_k V_2[i,k] u_k V_1[k,:] = J_i`` with ``u = γ1 ⊙ s(x)``
  (``s`` the activation pattern) and ``γ2_i ≠ 0`` (``J_i ≠ 0``); so ``(u; 1/γ2_I)`` is a kernel
  vector of ``A = [K_I | −B_I]`` with ``K_I[(i,j), k] = V_2[i,k] V_1[k,j]`` and
  ``B_I[(i,j), i] = J[i,j]`` (free coordinates ``j`` only) whose last block has no zero. A
  square minor of ``A`` with all of its ``c1 + |I|`` columns and a nonzero determinant modulo a
  prime shows that ``A`` has full column rank: no such vector exists.
* ``fredholm``, scale ``tuned`` (every tuning; same setting): ``y`` with ``yᵀK_I = 0``,
  ``⟨y_a, J_{I_a}⟩ = 0`` for every output but one, ``a*``, where it is not 0. Then ``yᵀA`` is a
  nonzero multiple of the coordinate of ``1/γ2_{I_{a*}}``, which therefore vanishes on every
  kernel vector: impossible. Scale ``fixed`` (the output scale held at 1): ``yᵀK_I = 0`` and
  ``⟨y, vec J_I⟩ ≠ 0`` (the Fredholm alternative for ``K_I u = vec J_I``).
* ``kink`` (every tuning; ``L = 2``, ``σ_1 = relu``, identity output). The kinks of ``f`` lie on
  hyperplanes whose normals are rows of ``V_1`` (restricted to the free coordinates of ``D``;
  only their offsets move with ``β_1``). A target first-layer ReLU ``r`` whose hyperplane passes
  through an interior point ``x*`` where every other target ReLU is strictly on one side, whose
  normal is parallel to no nonzero row of ``V_1``, and across which the one-sided gradients of
  ``g`` differ: near ``x*`` the kinks of ``f`` meet that hyperplane in a set of lower dimension,
  so ``f`` is differentiable at points of it where ``g`` is not.
* ``aligned`` (the segment-aligned class: same widths and activations, and every frozen layer's
  pre-activation equal to the target layer's as an affine map of the previous node on the
  target's interval box — the tunings a certificate with one frozen layer per target layer
  proves; other tunings are not settled): a row ``r`` of layer ``j`` with ``γ V_j[r, F] ≠
  W_j[r, F]`` for every scalar ``γ`` (``F`` the free coordinates of ``B_{j−1}``), shown by a
  nonzero 2×2 minor, or by ``V_j[r, F] = 0 ≠ W_j[r, s]``.

Every number the witness states (the target's pre-activations at the point, the determinant
residue, the one-sided gradients, the minor) is recomputed and compared exactly, so changing any
single entry of a witness is refused. Limits (entries of a regenerated matrix, the work budget in
multiply-adds) are checked before anything is allocated; a bad document is a verdict with a rule
name (``format``, ``number``, ``shape``, ``domain``, ``provenance``, ``limit``, ``witness``),
never an exception. Two arithmetics: the rules are written once here; an arithmetic supplies
``det_mod`` and ``product`` (:class:`.modular.PureLinear`, or python-flint's
:class:`exactnorm.checker_flint.linear.FlintLinear`).

References: Theorem LB and the witnesses are derived in docs/capacity.md ("The witnesses");
R. Burkholz, "Batch normalization is sufficient for universal function
approximation in CNNs", ICLR 2024 (the threshold ``c2·c0 − c2 + 1`` they make sharp).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from .impossibility_reading import Budget, Document, read_document
from .modular import PureLinear, is_prime
from .numbers import CertificateError, IntMatrix, IntVector, Verdict, matrix, show, vector
from .protocol import Linear
from .vocabulary import (
    DEFAULT_MAX_DIGITS,
    IMPOSSIBILITY_MAX_WORK,
    MAX_MAP_ENTRIES,
    OUTPUT_SCALES,
    WITNESS_KINDS,
    WITNESS_PRIME_BITS,
)

__all__ = ["check_impossibility", "CLASSES"]

#: class key → the sentence a valid verdict states (what the impossibility covers)
CLASSES = {
    "every": "for every tuning: any real γ, β, every activation pattern",
    "fixed-output-scale": "for every tuning with the output scale held at 1: any real hidden "
                          "γ, β and output shift, every activation pattern",
    "aligned": "for every tuning in the segment-aligned class (each frozen layer's "
               "pre-activation equal to the target layer's as an affine map of the previous "
               "node on the target's interval box, as an exactnorm certificate with one frozen "
               "layer per target layer proves); other tunings are not settled",
}


# ---------------------------------------------------------------- shared exact steps


def _point(value: object, d: Document, where: str, max_digits: int) -> IntVector:
    """A point of the box's interior: free coordinates strictly inside, pinned ones equal."""
    x = vector(value, where, len(d.lower), max_digits)
    for t, v in enumerate(x.fractions()):
        inside = d.lower[t] < v < d.upper[t] if d.free[t] else v == d.lower[t]
        if not inside:
            raise CertificateError("witness", f"{where}[{t}] = {show(v)} is not in the interior "
                                              f"of the box ({show(d.lower[t])}, "
                                              f"{show(d.upper[t])})")
    return x


def _values(value: object, d: Document, x: IntVector, where: str, max_digits: int,
            budget: Budget) -> list[list[Fraction]]:
    """The target's pre-activations at ``x``, layer by layer: recomputed exactly and compared
    with the listed ones."""
    listed = value
    if not isinstance(listed, list) or len(listed) != len(d.target):
        raise CertificateError("shape", f"{where} must list the pre-activations of each of the "
                                        f"{len(d.target)} target layers")
    out: list[list[Fraction]] = []
    nums, den = list(x.nums), x.den
    for i, (W, b, act) in enumerate(d.target, 1):
        budget.charge(W.nrows * W.ncols, f"{where} layer {i}")
        scale = W.den * den
        z = [Fraction(sum(w * a for w, a in zip(row, nums)) * b.den + bn * scale, scale * b.den)
             for row, bn in zip(W.rows, b.nums)]
        given = vector(listed[i - 1], f"{where}[{i - 1}]", W.nrows, max_digits)
        for r, (mine, theirs) in enumerate(zip(z, given.fractions())):
            if mine != theirs:
                raise CertificateError("witness", f"{where}[{i - 1}][{r}] is {show(theirs)}, the "
                                                  f"target's pre-activation there is "
                                                  f"{show(mine)}")
        out.append(z)
        a = [v if act == "identity" or v > 0 else Fraction(0) for v in z]
        den = math.lcm(*(v.denominator for v in a))
        nums = [v.numerator * (den // v.denominator) for v in a]
    return out


def _strict(values: list[list[Fraction]], d: Document, skip: tuple[int, int] | None,
            where: str) -> None:
    """Every target ReLU neuron (except ``skip``) strictly on one side at the point."""
    for i, (z, (_, _, act)) in enumerate(zip(values, d.target), 1):
        if act != "relu":
            continue
        for r, v in enumerate(z):
            if (i, r) != skip and v == 0:
                raise CertificateError("witness", f"{where}: target layer {i} neuron {r} is at "
                                                  f"its kink there (pre-activation 0)")


def _gradient(ops: Any, d: Document, values: list[list[Fraction]], budget: Budget,
              flip: tuple[int, bool] | None, final: bool, where: str) -> IntMatrix:
    """``W_L D_{L−1} ⋯ D_1 W_1`` (``final``: with the output activation's pattern ``D_L`` too)
    for the activation pattern at the point; ``flip = (r, on)`` sets first-layer neuron ``r``."""
    W1 = d.target[0][0]
    M, den = [list(row) for row in W1.rows], W1.den
    for i in range(1, len(d.target) + (1 if final else 0)):
        z, act = values[i - 1], d.target[i - 1][2]
        if act == "relu":
            keep = [v > 0 for v in z]
            if i == 1 and flip is not None:
                keep[flip[0]] = flip[1]
            M = [row if k else [0] * len(row) for row, k in zip(M, keep)]
        if i == len(d.target):
            break
        W = d.target[i][0]
        budget.charge(W.nrows * W.ncols * len(d.lower), f"{where} (layer {i + 1})")
        M, den = ops.product(W.rows, M), den * W.den
    return IntMatrix(M, den)


def _outputs(value: object, d: Document, J: IntMatrix, values: list[list[Fraction]],
             nonzero: bool, where: str) -> list[int]:
    """The outputs ``I`` of Theorem LB: strictly increasing, each with ``J_i ≠ 0`` on the free
    coordinates (``nonzero``), and active at the point when an output activation is ReLU."""
    if not isinstance(value, list) or not value:
        raise CertificateError("shape", f"{where} must be a non-empty list of output indices")
    n_out = J.nrows
    relu_out = d.target[-1][2] == "relu" or d.frozen[-1][1] == "relu"
    prev = -1
    for k, i in enumerate(value):
        if type(i) is not int or not prev < i < n_out:
            raise CertificateError("witness", f"{where}[{k}] = {show(i)}: output indices are "
                                              f"strictly increasing below {n_out}")
        prev = i
        if nonzero and not any(J.rows[i][t] for t in range(J.ncols) if d.free[t]):
            raise CertificateError("witness", f"{where}[{k}]: the target's output {i} does not "
                                              f"depend on the free coordinates at the point")
        if relu_out and not values[-1][i] > 0:
            raise CertificateError("witness", f"{where}[{k}]: output {i} is not active at the "
                                              f"point (pre-activation {show(values[-1][i])}), "
                                              f"but an output activation is ReLU")
    return list(value)


def _exact_keys(w: dict, keys: set[str], kind: str) -> None:
    if set(w) != keys:
        missing = sorted(keys - set(w))
        what = f"has no {show(missing[0])}" if missing else \
            f"has the unknown key {show(sorted(set(w) - keys, key=str)[0])}"
        raise CertificateError("format", f"witness of kind {kind} {what}")


def _one_hidden_layer(d: Document, kind: str, identity_output: bool = False) -> None:
    if len(d.frozen) != 2 or d.frozen[0][1] != "relu":
        raise CertificateError("witness", f"a {kind} witness is about a frozen network with one "
                                          f"hidden ReLU layer (two linear layers, the first "
                                          f"followed by relu)")
    if identity_output and d.frozen[1][1] != "identity":
        raise CertificateError("witness", f"a {kind} witness needs the frozen output activation "
                                          f"identity (a ReLU output has kinks off the rows of "
                                          f"V_1)")


def _local(w: dict, d: Document, ops: Any, budget: Budget, max_digits: int,
           nonzero: bool) -> tuple[list[int], IntMatrix]:
    """Point, values and outputs of a rank or Fredholm witness: the outputs ``I`` and the
    target's Jacobian ``J`` at the point."""
    x = _point(w["point"], d, "witness.point", max_digits)
    values = _values(w["values"], d, x, "witness.values", max_digits, budget)
    _strict(values, d, None, "witness.point")
    J = _gradient(ops, d, values, budget, None, False, "witness: the target's Jacobian")
    return _outputs(w["outputs"], d, J, values, nonzero, "witness.outputs"), J


# ---------------------------------------------------------------- the witnesses


def _prime_to(M: IntMatrix, p: int, what: str) -> IntMatrix:
    """``M`` over a denominator prime to ``p``: the factors ``p`` shared by the denominator and
    every numerator are divided out (numbers need not be in lowest terms, §1.1); a ``p`` left in
    the denominator divides the lowest-terms denominator of an entry (rule ``witness``)."""
    rows, den = M.rows, M.den
    while den % p == 0 and all(x % p == 0 for row in rows for x in row):
        rows, den = [[x // p for x in row] for row in rows], den // p
    if den % p == 0:
        raise CertificateError("witness", f"witness.prime {p} divides the denominator of an "
                                          f"entry of {what}")
    return IntMatrix(rows, den)


def _rule_rank(w: dict, d: Document, ops: Any, budget: Budget, max_digits: int) -> str:
    _exact_keys(w, {"kind", "point", "values", "outputs", "prime", "rows", "determinant"},
                "rank")
    _one_hidden_layer(d, "rank")
    I, J = _local(w, d, ops, budget, max_digits, True)
    (V1, _), (V2, _) = d.frozen
    c0, c1 = V1.ncols, V1.nrows
    n = c1 + len(I)
    p = w["prime"]
    if type(p) is not int or not 3 <= p < 1 << WITNESS_PRIME_BITS or not is_prime(p):
        raise CertificateError("witness", f"witness.prime {show(p)} is not a prime from 3 below "
                                          f"2^62")
    V1, V2, J = (_prime_to(M, p, what) for M, what in ((V1, "V_1"), (V2, "V_2"),
                                                          (J, "the Jacobian")))
    rows = w["rows"]
    if not isinstance(rows, list) or len(rows) != n:
        raise CertificateError("witness", f"witness.rows must list {n} rows of [K | -B] (its "
                                          f"c1 + |I| = {c1} + {len(I)} columns), got "
                                          f"{len(rows) if isinstance(rows, list) else show(rows)}")
    prev = -1
    for k, row in enumerate(rows):
        if type(row) is not int or not prev < row < len(I) * c0:
            raise CertificateError("witness", f"witness.rows[{k}] = {show(row)}: rows are "
                                              f"strictly increasing below |I|·c0 = "
                                              f"{len(I) * c0}")
        if not d.free[row % c0]:
            raise CertificateError("witness", f"witness.rows[{k}] = {row} is the row of pinned "
                                              f"coordinate {row % c0} (lower = upper)")
        prev = row
    delta = w["determinant"]
    if type(delta) is not int or not 1 <= delta < p:
        raise CertificateError("witness", f"witness.determinant {show(delta)} is not a nonzero "
                                          f"residue below the prime")
    if n * n > MAX_MAP_ENTRIES:
        raise CertificateError("limit", f"witness: a {n} x {n} minor has more than "
                                        f"{MAX_MAP_ENTRIES} entries, this checker's limit")
    budget.charge(n * c1 + n * n * n, "witness: the minor of [K | -B]")
    inv1, inv2, invj = (pow(v % p, p - 2, p) for v in (V1.den, V2.den, J.den))
    scale = inv1 * inv2 % p
    minor = []
    for row in rows:
        a, j = divmod(row, c0)
        i = I[a]
        v2 = V2.rows[i]
        entries = [v2[k] * V1.rows[k][j] * scale % p for k in range(c1)]
        entries += [(-J.rows[i][j] * invj) % p if b == a else 0 for b in range(len(I))]
        minor.append(entries)
    det = int(ops.det_mod(minor, p))
    if det != delta:
        raise CertificateError("witness", f"witness.determinant is {delta}, the determinant of "
                                          f"the listed rows of [K | -B] is {det} modulo {p}")
    return (f"witness rank: [K | -B] for {len(I)} output(s) at the point has full column rank "
            f"{n} (the {n} x {n} minor of the listed rows is {det} modulo the prime {p})")


def _rule_fredholm(w: dict, d: Document, ops: Any, budget: Budget,
                   max_digits: int) -> tuple[str, str]:
    scale = w.get("scale")
    if scale not in OUTPUT_SCALES:
        raise CertificateError("format", f"witness.scale {show(scale)} is not one of "
                                         f"{show(list(OUTPUT_SCALES))}")
    keys = {"kind", "scale", "point", "values", "outputs", "y"}
    _exact_keys(w, keys | ({"output"} if scale == "tuned" else set()), "fredholm")
    _one_hidden_layer(d, "fredholm")
    I, J = _local(w, d, ops, budget, max_digits, scale == "tuned")
    (V1, _), (V2, _) = d.frozen
    c0, c1 = V1.ncols, V1.nrows
    y = vector(w["y"], "witness.y", len(I) * c0, max_digits)
    if not any(y.nums):
        raise CertificateError("witness", "witness.y is zero")
    for k, yk in enumerate(y.nums):
        if yk and not d.free[k % c0]:
            raise CertificateError("witness", f"witness.y[{k}] is not 0 at pinned coordinate "
                                              f"{k % c0} (lower = upper)")
    Y = [y.nums[a * c0:(a + 1) * c0] for a in range(len(I))]
    budget.charge(len(I) * c0 * c1 + len(I) * c1, "witness: yᵀK")
    P = ops.product(Y, [list(col) for col in zip(*V1.rows)])  # Y·V_1ᵀ: |I| × c1
    for k in range(c1):
        total = sum(V2.rows[i][k] * P[a][k] for a, i in enumerate(I))
        if total:
            raise CertificateError("witness", f"witness.y is not orthogonal to column {k} of K "
                                              f"(yᵀK has a nonzero entry there)")
    inner = [Fraction(sum(yv * jv for yv, jv in zip(Y[a], J.rows[i])), y.den * J.den)
             for a, i in enumerate(I)]
    if scale == "fixed":
        if sum(inner) != 1:
            raise CertificateError("witness", f"⟨y, vec J⟩ is {show(sum(inner))}; the witness "
                                              f"is normalized to 1 (nonzero: y separates the "
                                              f"target from the reachable Jacobians)")
        return "fixed-output-scale", (f"witness fredholm (output scale held at 1): yᵀK = 0 and "
                                      f"⟨y, vec J⟩ = 1 for {len(I)} output(s)")
    star = w["output"]
    if type(star) is not int or not 0 <= star < len(I):
        raise CertificateError("witness", f"witness.output {show(star)} is not an index into "
                                          f"witness.outputs")
    for a, v in enumerate(inner):
        if v != (1 if a == star else 0):
            raise CertificateError("witness", f"⟨y_{a}, J_{I[a]}⟩ is {show(v)}, the tuned-scale "
                                              f"Fredholm witness needs 1 at witness.output = "
                                              f"{star} and 0 elsewhere")
    return "every", (f"witness fredholm (output scale tuned): yᵀK = 0 and ⟨y, J⟩ vanishes on "
                     f"every output but {I[star]}, so 1/γ_out[{I[star]}] = 0 on every solution")


def _rule_kink(w: dict, d: Document, ops: Any, budget: Budget, max_digits: int) -> str:
    _exact_keys(w, {"kind", "neuron", "point", "values", "gradients"}, "kink")
    _one_hidden_layer(d, "kink", identity_output=True)
    if len(d.target) < 2 or d.target[0][2] != "relu":
        raise CertificateError("witness", "a kink witness needs a target whose first layer is a "
                                          "hidden ReLU layer")
    W1 = d.target[0][0]
    r = w["neuron"]
    if type(r) is not int or not 0 <= r < W1.nrows:
        raise CertificateError("witness", f"witness.neuron {show(r)} is not a neuron of target "
                                          f"layer 1")
    x = _point(w["point"], d, "witness.point", max_digits)
    values = _values(w["values"], d, x, "witness.values", max_digits, budget)
    if values[0][r] != 0:
        raise CertificateError("witness", f"the point is not on the kink of target neuron {r} "
                                          f"(pre-activation {show(values[0][r])})")
    _strict(values, d, (1, r), "witness.point")
    free = [t for t in range(len(d.lower)) if d.free[t]]
    normal = [W1.rows[r][t] for t in free]
    pivot = next((k for k, v in enumerate(normal) if v), None)
    if pivot is None:
        raise CertificateError("witness", f"target neuron {r} does not depend on the free "
                                          f"coordinates")
    V1 = d.frozen[0][0]
    budget.charge(V1.nrows * len(free), "witness: the rows of V_1")
    for k, row in enumerate(V1.rows):
        v = [row[t] for t in free]
        if any(v) and all(v[s] * normal[pivot] == v[pivot] * normal[s] for s in range(len(free))):
            raise CertificateError("witness", f"row {k} of V_1 is parallel to the normal of "
                                              f"target neuron {r}: the frozen network may have a "
                                              f"kink on that hyperplane")
    grads = w["gradients"]
    if not isinstance(grads, dict) or set(grads) != {"plus", "minus"}:
        raise CertificateError("format", "witness.gradients is {\"plus\": G+, \"minus\": G-}")
    found = {}
    for side, on in (("plus", True), ("minus", False)):
        G = _gradient(ops, d, values, budget, (r, on), True, f"witness.gradients.{side}")
        listed = matrix(grads[side], f"witness.gradients.{side}", G.nrows, G.ncols, max_digits)
        for i in range(G.nrows):
            for t in range(G.ncols):
                if G.rows[i][t] * listed.den != listed.rows[i][t] * G.den:
                    raise CertificateError("witness", f"witness.gradients.{side}[{i}][{t}] is "
                                                      f"{show(listed.entry(i, t))}, the "
                                                      f"target's gradient there is "
                                                      f"{show(G.entry(i, t))}")
        found[side] = G
    plus, minus = found["plus"], found["minus"]
    if all(plus.rows[i][t] * minus.den == minus.rows[i][t] * plus.den
           for i in range(plus.nrows) for t in free):
        raise CertificateError("witness", f"the target's one-sided gradients across the kink of "
                                          f"neuron {r} are equal: the target may be "
                                          f"differentiable there")
    return (f"witness kink: target neuron {r}'s hyperplane crosses the box at the given point, "
            f"where the target's one-sided gradients differ, and is parallel to none of the "
            f"{V1.nrows} rows of V_1")


def _target_boxes(d: Document, upto: int, budget: Budget) -> list[list[tuple[Fraction,
                                                                              Fraction]]]:
    """The target's exact interval boxes ``B_0 … B_upto`` (docs/certificate-format.md §0)."""
    boxes = [list(zip(d.lower, d.upper))]
    for i in range(upto):
        W, b, act = d.target[i]
        budget.charge(W.nrows * W.ncols, f"the interval box of target layer {i + 1}")
        out = []
        for row, bn in zip(W.rows, b.nums):
            lo = hi = Fraction(bn, b.den)
            for wv, (l, h) in zip(row, boxes[-1]):
                if wv > 0:
                    lo, hi = lo + Fraction(wv, W.den) * l, hi + Fraction(wv, W.den) * h
                elif wv < 0:
                    lo, hi = lo + Fraction(wv, W.den) * h, hi + Fraction(wv, W.den) * l
            if act == "relu":
                lo, hi = max(lo, Fraction(0)), max(hi, Fraction(0))
            out.append((lo, hi))
        boxes.append(out)
    return boxes


def _rule_aligned(w: dict, d: Document, budget: Budget, max_digits: int) -> str:
    keys = set(w)
    _exact_keys(w, {"kind", "layer", "neuron", "columns"} | ({"minor"} if "minor" in keys
                                                              else {"value"}), "aligned")
    if len(d.frozen) != len(d.target) or any(
            V.nrows != W.nrows or fa != ta
            for (V, fa), (W, _, ta) in zip(d.frozen, d.target)):
        raise CertificateError("witness", "an aligned witness is about a frozen network of the "
                                          "target's widths and activations")
    j, r, cols = w["layer"], w["neuron"], w["columns"]
    if type(j) is not int or not 1 <= j <= len(d.target):
        raise CertificateError("witness", f"witness.layer {show(j)} is not a layer 1 … "
                                          f"{len(d.target)}")
    W, V = d.target[j - 1][0], d.frozen[j - 1][0]
    if type(r) is not int or not 0 <= r < W.nrows:
        raise CertificateError("witness", f"witness.neuron {show(r)} is not a neuron of layer "
                                          f"{j}")
    box = _target_boxes(d, j - 1, budget)[-1]
    free = [t for t, (lo, hi) in enumerate(box) if lo < hi]
    two = "minor" in keys
    if not isinstance(cols, list) or len(cols) != (2 if two else 1) or \
            any(type(t) is not int or t not in free for t in cols) or \
            (two and not cols[0] < cols[1]):
        raise CertificateError("witness", f"witness.columns {show(cols)}: "
                                          f"{'two increasing' if two else 'one'} free "
                                          f"coordinate(s) of the box B_{j - 1} (lower < upper)")
    Wr, Vr = W.rows[r], V.rows[r]
    if two:
        s, t = cols
        listed = vector([w["minor"]], "witness.minor", 1, max_digits)[0]
        minor = Fraction(Wr[s] * Vr[t] - Wr[t] * Vr[s], W.den * V.den)
        if minor == 0 or minor != listed:
            raise CertificateError("witness", f"witness.minor is {show(listed)}; W[{r}][{s}]·"
                                              f"V[{r}][{t}] − W[{r}][{t}]·V[{r}][{s}] is "
                                              f"{show(minor)}" + (" (it must be nonzero)"
                                                                  if minor == 0 else ""))
        return (f"witness aligned: row {r} of layer {j} is not a multiple of the frozen row (the "
                f"2 x 2 minor at columns {s}, {t} is {show(minor)})")
    (s,) = cols
    listed = vector([w["value"]], "witness.value", 1, max_digits)[0]
    value = Fraction(Wr[s], W.den)
    if value == 0 or value != listed or any(Vr[t] for t in free):
        raise CertificateError("witness", f"witness.value is {show(listed)}, W[{r}][{s}] is "
                                          f"{show(value)}; the single-column form needs it "
                                          f"nonzero and the frozen row {r} zero on every free "
                                          f"coordinate")
    return (f"witness aligned: the frozen row {r} of layer {j} vanishes on the free coordinates, "
            f"the target's has W[{r}][{s}] = {show(value)}")


# ---------------------------------------------------------------- verdict


def _box_text(d: Document) -> str:
    if len(set(d.lower)) == 1 and len(set(d.upper)) == 1:
        return f"[{show(d.lower[0])},{show(d.upper[0])}]^{len(d.lower)}"
    return f"a box of dimension {len(d.lower)}"


def _run(ops: Any, doc: object, max_digits: int, max_work: int) -> tuple[str, dict[str, Any]]:
    if not isinstance(doc, dict):
        raise CertificateError("format", "a document is a JSON object")
    d = read_document(doc, max_digits)
    w = doc["witness"]
    if not isinstance(w, dict) or w.get("kind") not in WITNESS_KINDS:
        shown = w.get("kind") if isinstance(w, dict) else w
        raise CertificateError("format", f"witness.kind {show(shown)} is not one of "
                                         f"{show(list(WITNESS_KINDS))}")
    budget = Budget(max_work)
    witness = w["kind"]
    if witness == "rank":
        cls, said = "every", _rule_rank(w, d, ops, budget, max_digits)
    elif witness == "fredholm":
        cls, said = _rule_fredholm(w, d, ops, budget, max_digits)
    elif witness == "kink":
        cls, said = "every", _rule_kink(w, d, ops, budget, max_digits)
    else:
        cls, said = "aligned", _rule_aligned(w, d, budget, max_digits)
    frozen_widths = [len(d.lower)] + [V.nrows for V, _ in d.frozen]
    target_widths = [len(d.lower)] + [W.nrows for W, _, _ in d.target]
    p = d.prov
    facts = {"claim": "UNREACHABLE", "class": cls, "class_text": CLASSES[cls], "witness": witness,
             "box": _box_text(d), "dimension": len(d.lower), "frozen_widths": frozen_widths,
             "target_widths": target_widths, "regenerated": p.regenerated,
             "explicit": p.explicit, "fixed": p.fixed[:20], "fixed_count": len(p.fixed),
             "seed": min(p.seeds) if p.seeds else None,
             "distributions": sorted(p.distributions)}
    given = f"{p.regenerated} frozen matrices regenerated from seed {facts['seed']}" \
        if p.regenerated else "no frozen matrix regenerated from a seed"
    given += f", {p.explicit} given explicitly"
    if p.fixed:
        given += f"; {len(p.fixed)} declared fixed (first: {p.fixed[0]})"
    message = (f"no γ, β make the frozen network {'-'.join(map(str, frozen_widths))} equal the "
               f"target {'-'.join(map(str, target_widths))} on {facts['box']}, "
               f"{CLASSES[cls]}; {said}; {given}")
    return message, facts


def check_impossibility(ops: Linear | None, doc: object, *, max_digits: int = DEFAULT_MAX_DIGITS,
                        progress: Callable[[int, int], None] | None = None,
                        max_work: int | None = None) -> Verdict:
    """Check an ``exactnorm.impossibility`` document with the operations ``ops`` (``None``: the
    standard-library :class:`~.modular.PureLinear`); never raises for bad content. ``max_work``
    counts multiply-adds (``None``: ``IMPOSSIBILITY_MAX_WORK``)."""
    ops = PureLinear() if ops is None else ops
    max_work = IMPOSSIBILITY_MAX_WORK if max_work is None else max_work
    if progress is not None:
        progress(0, 1)
    try:
        message, facts = _run(ops, doc, max_digits, max_work)
    except CertificateError as exc:
        return Verdict(False, exc.rule, str(exc), exc.layer, exc.neuron)
    except RecursionError:
        return Verdict(False, "format", "document is nested too deeply")
    if progress is not None:
        progress(1, 1)
    return Verdict(True, "valid", message, facts=facts)
