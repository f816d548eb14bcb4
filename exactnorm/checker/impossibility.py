"""The second document kind: ``exactnorm.impossibility`` (docs/certificate-format.md §9), a proof
that no γ, β of a *given* frozen ReLU network make it equal a target on a box, in a stated class
of tunings. Standard library only; rules of the one kernel: the document is read by the
certificate's reader (:mod:`.impossibility_reading`), its frozen matrices have the one
:class:`.provenance.Provenance`, and every size and cost is counted in the one
:class:`.budget.Budget`, in the units of the walk, before the work is done.

Claim checked. The frozen network ``f`` has linear layers ``V_1 … V_L`` (given explicitly,
declared fixed or regenerated from draw records), each reading the layer before, and computes
``h_j = σ_j(γ_j ⊙ (V_j h_{j−1}) + β_j)``; the target ``g`` is read as a certificate's target,
a graph: layer ``i`` computes ``σ_i(W_i a_p + b_i + S a_q)`` (§10); the box is ``D``. The
document claims that no ``γ, β`` *in the class the witness names* make ``f = g`` on ``D``.
Four witnesses:

* ``rank`` (every tuning; ``L = 2``, ``σ_1 = relu``). At an interior point ``x0`` where every
  target ReLU is strictly on one side, ``g`` is affine with Jacobian ``J`` (the output
  pre-activation's, by the chain rule over the graph). Theorem LB: if ``f = g`` on ``D`` then at
  points near ``x0`` where ``f`` is differentiable, output ``i`` of the live set ``I`` has
  gradient ``γ2_i Σ_k V_2[i,k] u_k V_1[k,:] = J_i`` with ``u = γ1 ⊙ s(x)`` (``s`` the
  activation pattern) and ``γ2_i ≠ 0`` (``J_i ≠ 0``); so ``(u; 1/γ2_I)`` is a kernel vector of
  ``A = [K_I | −B_I]`` with ``K_I[(i,j), k] = V_2[i,k] V_1[k,j]`` and ``B_I[(i,j), i] = J[i,j]``
  (free coordinates ``j`` only) whose last block has no zero. A square minor of ``A`` with all
  of its ``c1 + |I|`` columns and a nonzero determinant modulo a prime shows that ``A`` has
  full column rank: no such vector exists.
* ``fredholm``, scale ``tuned`` (every tuning; same setting): ``y`` with ``yᵀK_I = 0``,
  ``⟨y_a, J_{I_a}⟩ = 0`` for every output but one, ``a*``, where it is 1. Then ``yᵀA`` is the
  negated coordinate of ``1/γ2_{I_{a*}}``, which therefore vanishes on every kernel vector:
  impossible. Scale ``fixed`` (the output scale held at 1): ``yᵀK_I = 0`` and ``⟨y, vec J_I⟩ =
  1`` (the Fredholm alternative for ``K_I u = vec J_I``).
* ``kink`` (every tuning; ``L = 2``, ``σ_1 = relu``, identity output). The kinks of ``f`` lie on
  hyperplanes whose normals are rows of ``V_1`` (restricted to the free coordinates of ``D``;
  only their offsets move with ``β_1``). Target layer 1 reads ``x`` (plus, with a skip, a
  selection of ``x``), so its neuron ``r`` has the affine pre-activation ``z_{1,r}``; if its
  hyperplane passes through an interior point ``x*`` where every other target ReLU is strictly
  on one side, its normal is parallel to no nonzero row of ``V_1``, and the one-sided
  gradients of ``g`` across it differ (both computed over the graph): near ``x*`` the kinks of
  ``f`` meet that hyperplane in a set of lower dimension, so ``f`` is differentiable at points
  of it where ``g`` is not.
* ``aligned`` (the segment-aligned class: same widths and activations, a chain target, and
  every frozen layer's pre-activation equal to the target layer's as an affine map of the
  previous node on the target's interval box — the tunings a certificate with one frozen layer
  per target layer proves; other tunings are not settled): a row ``r`` of layer ``j`` with
  ``γ V_j[r, F] ≠ W_j[r, F]`` for every scalar ``γ`` (``F`` the free coordinates of the box
  ``B_{j−1}`` of §0, computed by the walk's box rules), shown by a nonzero 2×2 minor, or by
  ``V_j[r, F] = 0 ≠ W_j[r, s]``.

Every number the witness states (the target's pre-activations at the point, the determinant
residue, the one-sided gradients, the minor) is recomputed and compared exactly, so changing any
single entry of a witness is refused. A bad document is a verdict with a rule name
(``format``, ``number``, ``shape``, ``domain``, ``provenance``, ``skip``, ``limit``,
``witness``), never an exception. Two arithmetics: the rules are written once here; an
arithmetic lends its map operations and ``det_mod`` (:class:`.modular.PureLinear`, or
python-flint's :class:`exactnorm.checker_flint.linear.FlintLinear`), and the costs are counted
from shapes and number sizes only, so both reach the same verdict and message.

References: Theorem LB and the witnesses are derived in docs/capacity.md; R. Burkholz, "Batch
normalization is sufficient for universal function approximation in CNNs", ICLR 2024 (the
threshold ``c2·c0 − c2 + 1`` they make sharp).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .boxes import domain_box
from .budget import STEP, Budget, det_mod_cost, div_cost, mul_cost
from .impossibility_reading import (
    Given,
    exact_keys,
    local_piece,
    matrix_of,
    read_impossibility,
    weight_of,
)
from .kinds import RULES
from .modular import is_prime
from .numbers import (
    CertificateError,
    IntMatrix,
    IntVector,
    Verdict,
    matrix,
    show,
    show_ratio,
    vector,
)
from .verdict import describe_box, provenance_facts, provenance_text
from .vocabulary import (
    DEFAULT_MAX_DIGITS,
    MIN_WORK,
    OUTPUT_SCALES,
    WITNESS_KINDS,
    WITNESS_PRIME_BITS,
)
from .walk import compose

__all__ = ["check_impossibility", "run_impossibility", "CLASSES"]

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

#: units of the primality test of a witness prime: twelve Miller–Rabin rounds of 62 squarings
PRIME_TEST = 12 * 62 * (STEP + 4)


def _top(rows: list[list[int]]) -> int:
    return max((abs(v) for row in rows for v in row), default=0).bit_length()


def _same(a: int, aden: int, b: int, bden: int) -> bool:
    return a * bden == b * aden


# ---------------------------------------------------------------- shared exact steps


def _point(value: object, g: Given, where: str, max_digits: int, budget: Budget) -> IntVector:
    """A point of the box's interior: free coordinates strictly inside, pinned ones equal."""
    x = vector(value, where, len(g.lower), max_digits)
    lo, hi = g.lower, g.upper
    xb = _top([x.nums]) + x.den.bit_length()
    budget.work(len(x) * (4 * STEP + 2 * mul_cost(xb, _top([lo.nums]) + lo.den.bit_length())
                          + 2 * mul_cost(xb, _top([hi.nums]) + hi.den.bit_length())), None, where)
    for t, v in enumerate(x.nums):
        above = v * lo.den > lo.nums[t] * x.den
        below = v * hi.den < hi.nums[t] * x.den
        equal = v * lo.den == lo.nums[t] * x.den
        if not ((above and below) if g.free[t] else equal):
            raise CertificateError("witness", f"{where}[{t}] = {show_ratio(v, x.den)} is not in "
                                              f"the interior of the box "
                                              f"({show_ratio(lo.nums[t], lo.den)}, "
                                              f"{show_ratio(hi.nums[t], hi.den)})")
    return x


def _values(value: object, g: Given, mine: list[IntVector], where: str, max_digits: int,
            budget: Budget) -> None:
    """The target's pre-activations at the point, layer by layer (``mine``, recomputed exactly
    over the graph), compared with the listed ones."""
    if not isinstance(value, list) or len(value) != len(g.target):
        raise CertificateError("shape", f"{where} must list the pre-activations of each of the "
                                        f"{len(g.target)} target layers")
    for i, z in enumerate(mine, 1):
        given = vector(value[i - 1], f"{where}[{i - 1}]", len(z), max_digits)
        budget.work(len(z) * (STEP + mul_cost(_top([z.nums]), given.den.bit_length())
                              + mul_cost(_top([given.nums]), z.den.bit_length())), None, where)
        for r, (a, b) in enumerate(zip(z.nums, given.nums)):
            if not _same(a, z.den, b, given.den):
                raise CertificateError("witness", f"{where}[{i - 1}][{r}] is "
                                                  f"{show_ratio(b, given.den)}, the target's "
                                                  f"pre-activation there is "
                                                  f"{show_ratio(a, z.den)}")


def _strict(values: list[IntVector], g: Given, skip: tuple[int, int] | None,
            where: str) -> None:
    """Every target ReLU neuron (except ``skip``) strictly on one side at the point."""
    for i, (z, tl) in enumerate(zip(values, g.target), 1):
        if tl.act != "relu":
            continue
        for r, v in enumerate(z.nums):
            if (i, r) != skip and v == 0:
                raise CertificateError("witness", f"{where}: target layer {i} neuron {r} is at "
                                                  f"its kink there (pre-activation 0)")


def _outputs(value: object, g: Given, J: IntMatrix, values: list[IntVector], nonzero: bool,
             where: str) -> list[int]:
    """The outputs ``I`` of Theorem LB: strictly increasing, each with ``J_i ≠ 0`` on the free
    coordinates (``nonzero``), and active at the point when an output activation is ReLU."""
    if not isinstance(value, list) or not value:
        raise CertificateError("shape", f"{where} must be a non-empty list of output indices")
    n_out = J.nrows
    relu_out = g.target[-1].act == "relu" or g.frozen[-1][1] == "relu"
    prev = -1
    for k, i in enumerate(value):
        if type(i) is not int or not prev < i < n_out:
            raise CertificateError("witness", f"{where}[{k}] = {show(i)}: output indices are "
                                              f"strictly increasing below {n_out}")
        prev = i
        if nonzero and not any(J.rows[i][t] for t in range(J.ncols) if g.free[t]):
            raise CertificateError("witness", f"{where}[{k}]: the target's output {i} does not "
                                              f"depend on the free coordinates at the point")
        if relu_out and not values[-1].nums[i] > 0:
            raise CertificateError("witness", f"{where}[{k}]: output {i} is not active at the "
                                              f"point (pre-activation "
                                              f"{show_ratio(values[-1].nums[i], values[-1].den)})"
                                              f", but an output activation is ReLU")
    return list(value)


def _one_hidden_layer(g: Given, kind: str, identity_output: bool = False) -> None:
    if len(g.frozen) != 2 or g.frozen[0][1] != "relu":
        raise CertificateError("witness", f"a {kind} witness is about a frozen network with one "
                                          f"hidden ReLU layer (two linear layers, the first "
                                          f"followed by relu)")
    if identity_output and g.frozen[1][1] != "identity":
        raise CertificateError("witness", f"a {kind} witness needs the frozen output activation "
                                          f"identity (a ReLU output has kinks off the rows of "
                                          f"V_1)")


def _local(w: dict, g: Given, ar: Any, budget: Budget, max_digits: int,
           nonzero: bool) -> tuple[list[int], IntMatrix]:
    """Point, values and outputs of a rank or Fredholm witness: the outputs ``I`` and the
    target's Jacobian ``J`` at the point."""
    x = _point(w["point"], g, "witness.point", max_digits, budget)
    values, Z, _ = local_piece(ar, g, x, budget)
    _values(w["values"], g, values, "witness.values", max_digits, budget)
    _strict(values, g, None, "witness.point")
    J = matrix_of(ar, Z, len(g.lower), budget, "witness: the target's Jacobian")
    return _outputs(w["outputs"], g, J, values, nonzero, "witness.outputs"), J


# ---------------------------------------------------------------- the witnesses


def _residues(M: IntMatrix, p: int, what: str, budget: Budget) -> list[list[int]]:
    """The entries of ``M`` modulo ``p``: ``x/den ↦ (x/p^e)·(den/p^e)^{−1} mod p`` with ``p^e``
    the power of ``p`` in ``den`` (numbers need not be in lowest terms, §1.1); an entry not
    divisible by ``p^e`` has ``p`` in its lowest-terms denominator (rule ``witness``)."""
    pbits, dbits = p.bit_length(), M.den.bit_length()
    budget.work((dbits // (pbits - 1) + 1) * (STEP + div_cost(dbits, pbits)), None,
                f"witness: {what} modulo the prime")
    den, e = M.den, 0
    while den % p == 0:
        den, e = den // p, e + 1
    pe = p ** e
    xbits = _top(M.rows)
    budget.work(M.nrows * M.ncols * (2 * STEP + div_cost(xbits, pe.bit_length())
                                     + div_cost(xbits, pbits) + 2), None,
                f"witness: {what} modulo the prime")
    inv = pow(den % p, p - 2, p)
    out = []
    for row in M.rows:
        if e and any(x % pe for x in row):
            raise CertificateError("witness", f"witness.prime {p} divides the denominator of an "
                                              f"entry of {what}")
        out.append([x // pe % p * inv % p for x in row])
    return out


def _rule_rank(w: dict, g: Given, ar: Any, budget: Budget, max_digits: int) -> str:
    exact_keys(w, {"kind", "point", "values", "outputs", "prime", "rows", "determinant"},
               "witness of kind rank")
    _one_hidden_layer(g, "rank")
    I, J = _local(w, g, ar, budget, max_digits, True)
    (V1d, _), (V2d, _) = g.frozen
    c0, c1 = V1d.ncols, V1d.nrows
    n = c1 + len(I)
    p = w["prime"]
    if type(p) is int and 3 <= p < 1 << WITNESS_PRIME_BITS:
        budget.work(PRIME_TEST, None, "witness.prime")
    if type(p) is not int or not 3 <= p < 1 << WITNESS_PRIME_BITS or not is_prime(p):
        raise CertificateError("witness", f"witness.prime {show(p)} is not a prime from 3 below "
                                          f"2^62")
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
        if not g.free[row % c0]:
            raise CertificateError("witness", f"witness.rows[{k}] = {row} is the row of pinned "
                                              f"coordinate {row % c0} (lower = upper)")
        prev = row
    delta = w["determinant"]
    if type(delta) is not int or not 1 <= delta < p:
        raise CertificateError("witness", f"witness.determinant {show(delta)} is not a nonzero "
                                          f"residue below the prime")
    # the minor and its determinant are counted before any matrix is regenerated
    budget.size(n, n, None, p.bit_length(), where="witness.rows",
                what=f"the {n} x {n} minor of [K | -B]")
    budget.work(n * (c1 + len(I)) * (2 * STEP + 4) + det_mod_cost(n, p.bit_length()), None,
                f"witness: the {n} x {n} minor of [K | -B] and its determinant modulo the prime")
    V1 = _residues(weight_of(V1d, budget, "network layer 1"), p, "V_1", budget)
    V2 = _residues(weight_of(V2d, budget, "network layer 2"), p, "V_2", budget)
    RJ = _residues(J, p, "the Jacobian", budget)
    minor = []
    for row in rows:
        a, j = divmod(row, c0)
        i = I[a]
        v2 = V2[i]
        entries = [v2[k] * V1[k][j] % p for k in range(c1)]
        entries += [(p - RJ[i][j]) % p if b == a else 0 for b in range(len(I))]
        minor.append(entries)
    det = int(ar.linear.det_mod(minor, p))
    if det != delta:
        raise CertificateError("witness", f"witness.determinant is {delta}, the determinant of "
                                          f"the listed rows of [K | -B] is {det} modulo {p}")
    return (f"witness rank: [K | -B] for {len(I)} output(s) at the point has full column rank "
            f"{n} (the {n} x {n} minor of the listed rows is {det} modulo the prime {p})")


def _rule_fredholm(w: dict, g: Given, ar: Any, budget: Budget,
                   max_digits: int) -> tuple[str, str]:
    scale = w.get("scale")
    if scale not in OUTPUT_SCALES:
        raise CertificateError("format", f"witness.scale {show(scale)} is not one of "
                                         f"{show(list(OUTPUT_SCALES))}")
    keys = {"kind", "scale", "point", "values", "outputs", "y"}
    exact_keys(w, keys | ({"output"} if scale == "tuned" else set()), "witness of kind fredholm")
    _one_hidden_layer(g, "fredholm")
    I, J = _local(w, g, ar, budget, max_digits, scale == "tuned")
    (V1d, _), (V2d, _) = g.frozen
    c0, c1 = V1d.ncols, V1d.nrows
    y = vector(w["y"], "witness.y", len(I) * c0, max_digits)
    if not any(y.nums):
        raise CertificateError("witness", "witness.y is zero")
    for k, yk in enumerate(y.nums):
        if yk and not g.free[k % c0]:
            raise CertificateError("witness", f"witness.y[{k}] is not 0 at pinned coordinate "
                                              f"{k % c0} (lower = upper)")
    Y = [y.nums[a * c0:(a + 1) * c0] for a in range(len(I))]
    where = "witness: yᵀK and ⟨y, J⟩"
    # V_1·Yᵀ (c1 × |I|) by the walk's counted steps: Yᵀ as a map of |I| columns, then V_1
    YT = compose(ar, IntMatrix([list(col) for col in zip(*Y)], y.den), None, len(I), budget,
                 None, where)
    P = matrix_of(ar, compose(ar, V1d, YT, len(I), budget, None, where), len(I), budget, where)
    V2 = weight_of(V2d, budget, "network layer 2")
    budget.work(c1 * len(I) * (STEP + mul_cost(_top(V2.rows), _top(P.rows))), None, where)
    budget.product(len(I), c0, 1, _top(Y), _top(J.rows), None, where)
    for k in range(c1):
        if sum(V2.rows[i][k] * P.rows[k][a] for a, i in enumerate(I)):
            raise CertificateError("witness", f"witness.y is not orthogonal to column {k} of K "
                                              f"(yᵀK has a nonzero entry there)")
    # ⟨y_a, J_{I_a}⟩ as numerators over y.den·J.den
    inner = [sum(u * v for u, v in zip(Y[a], J.rows[i])) for a, i in enumerate(I)]
    den = y.den * J.den
    if scale == "fixed":
        if sum(inner) != den:
            raise CertificateError("witness", f"⟨y, vec J⟩ is {show_ratio(sum(inner), den)}; "
                                              f"the witness is normalized to 1 (nonzero: y "
                                              f"separates the target from the reachable "
                                              f"Jacobians)")
        return "fixed-output-scale", (f"witness fredholm (output scale held at 1): yᵀK = 0 and "
                                      f"⟨y, vec J⟩ = 1 for {len(I)} output(s)")
    star = w["output"]
    if type(star) is not int or not 0 <= star < len(I):
        raise CertificateError("witness", f"witness.output {show(star)} is not an index into "
                                          f"witness.outputs")
    for a, v in enumerate(inner):
        if v != (den if a == star else 0):
            raise CertificateError("witness", f"⟨y_{a}, J_{I[a]}⟩ is {show_ratio(v, den)}, the "
                                              f"tuned-scale Fredholm witness needs 1 at "
                                              f"witness.output = {star} and 0 elsewhere")
    return "every", (f"witness fredholm (output scale tuned): yᵀK = 0 and ⟨y, J⟩ vanishes on "
                     f"every output but {I[star]}, so 1/γ_out[{I[star]}] = 0 on every solution")


def _first_layer_row(g: Given, r: int) -> tuple[list[int], int]:
    """The normal of target neuron ``r`` of layer 1 (which reads ``x``): its weight row plus
    the unit vector its skip from ``x`` adds, over the weight's denominator."""
    tl = g.target[0]
    assert tl.W is not None
    row = list(tl.W.rows[r])
    if tl.skip is not None:
        t = tl.skip[2].rows[r]
        if t is not None:
            row[t] += tl.W.den
    return row, tl.W.den


def _rule_kink(w: dict, g: Given, ar: Any, budget: Budget, max_digits: int) -> str:
    exact_keys(w, {"kind", "neuron", "point", "values", "gradients"}, "witness of kind kink")
    _one_hidden_layer(g, "kink", identity_output=True)
    if len(g.target) < 2 or g.target[0].act != "relu":
        raise CertificateError("witness", "a kink witness needs a target whose first layer is a "
                                          "hidden ReLU layer")
    r = w["neuron"]
    if type(r) is not int or not 0 <= r < g.target[0].width:
        raise CertificateError("witness", f"witness.neuron {show(r)} is not a neuron of target "
                                          f"layer 1")
    x = _point(w["point"], g, "witness.point", max_digits, budget)
    values, _, _ = local_piece(ar, g, x, budget)
    _values(w["values"], g, values, "witness.values", max_digits, budget)
    if values[0].nums[r] != 0:
        raise CertificateError("witness", f"the point is not on the kink of target neuron {r} "
                                          f"(pre-activation "
                                          f"{show_ratio(values[0].nums[r], values[0].den)})")
    _strict(values, g, (1, r), "witness.point")
    free = [t for t in range(len(g.lower)) if g.free[t]]
    row, _ = _first_layer_row(g, r)
    normal = [row[t] for t in free]
    pivot = next((k for k, v in enumerate(normal) if v), None)
    if pivot is None:
        raise CertificateError("witness", f"target neuron {r} does not depend on the free "
                                          f"coordinates")
    V1 = weight_of(g.frozen[0][0], budget, "network layer 1")
    budget.work(V1.nrows * len(free) * (2 * STEP + 2 * mul_cost(_top(V1.rows), _top([row]))),
                None, "witness: the rows of V_1")
    for k, vrow in enumerate(V1.rows):
        v = [vrow[t] for t in free]
        if any(v) and all(v[s] * normal[pivot] == v[pivot] * normal[s] for s in range(len(free))):
            raise CertificateError("witness", f"row {k} of V_1 is parallel to the normal of "
                                              f"target neuron {r}: the frozen network may have a "
                                              f"kink on that hyperplane")
    grads = w["gradients"]
    if not isinstance(grads, dict) or set(grads) != {"plus", "minus"}:
        raise CertificateError("format", "witness.gradients is {\"plus\": G+, \"minus\": G-}")
    found = {}
    for side, on in (("plus", True), ("minus", False)):
        where = f"witness.gradients.{side}"
        G = matrix_of(ar, local_piece(ar, g, x, budget, (r, on))[2], len(g.lower), budget,
                      where)
        listed = matrix(grads[side], where, G.nrows, G.ncols, max_digits)
        budget.work(G.nrows * G.ncols * (STEP + mul_cost(_top(G.rows), listed.den.bit_length())
                                         + mul_cost(_top(listed.rows), G.den.bit_length())),
                    None, where)
        for i in range(G.nrows):
            for t in range(G.ncols):
                if not _same(G.rows[i][t], G.den, listed.rows[i][t], listed.den):
                    raise CertificateError("witness", f"{where}[{i}][{t}] is "
                                                      f"{show_ratio(listed.rows[i][t], listed.den)}"
                                                      f", the target's gradient there is "
                                                      f"{show_ratio(G.rows[i][t], G.den)}")
        found[side] = G
    plus, minus = found["plus"], found["minus"]
    if all(_same(plus.rows[i][t], plus.den, minus.rows[i][t], minus.den)
           for i in range(plus.nrows) for t in free):
        raise CertificateError("witness", f"the target's one-sided gradients across the kink of "
                                          f"neuron {r} are equal: the target may be "
                                          f"differentiable there")
    return (f"witness kink: target neuron {r}'s hyperplane crosses the box at the given point, "
            f"where the target's one-sided gradients differ, and is parallel to none of the "
            f"{V1.nrows} rows of V_1")


def _rule_aligned(w: dict, g: Given, budget: Budget, max_digits: int) -> str:
    keys = set(w)
    exact_keys(w, {"kind", "layer", "neuron", "columns", "minor" if "minor" in keys else "value"},
               "witness of kind aligned")
    if len(g.frozen) != len(g.target) or any(
            V.nrows != tl.width or fa != tl.act for (V, fa), tl in zip(g.frozen, g.target)):
        raise CertificateError("witness", "an aligned witness is about a frozen network of the "
                                          "target's widths and activations")
    for i, tl in enumerate(g.target, 1):
        if tl.input != i - 1 or tl.skip is not None:
            raise CertificateError("witness", f"an aligned witness compares frozen layer j with "
                                              f"target layer j as maps of node j - 1; target "
                                              f"layer {i} reads node {tl.input}"
                                              + (" and has a skip" if tl.skip else ""))
    j, r, cols = w["layer"], w["neuron"], w["columns"]
    if type(j) is not int or not 1 <= j <= len(g.target):
        raise CertificateError("witness", f"witness.layer {show(j)} is not a layer 1 … "
                                          f"{len(g.target)}")
    tl = g.target[j - 1]
    W = tl.W
    assert W is not None
    if type(r) is not int or not 0 <= r < W.nrows:
        raise CertificateError("witness", f"witness.neuron {show(r)} is not a neuron of layer "
                                          f"{j}")
    box = domain_box(g.lower, g.upper, budget)  # B_{j−1}, by the walk's box rules (§0)
    for i in range(1, j):
        box = RULES[g.target[i - 1].kind].next_box(g.target[i - 1], box, budget, i, None)
    lo, hi, _ = box
    free = [t for t in range(len(lo)) if lo[t] < hi[t]]
    two = "minor" in keys
    if not isinstance(cols, list) or len(cols) != (2 if two else 1) or \
            any(type(t) is not int or not 0 <= t < len(lo) or lo[t] == hi[t] for t in cols) or \
            (two and not cols[0] < cols[1]):
        raise CertificateError("witness", f"witness.columns {show(cols)}: "
                                          f"{'two increasing' if two else 'one'} free "
                                          f"coordinate(s) of the box B_{j - 1} (lower < upper)")
    V = weight_of(g.frozen[j - 1][0], budget, f"network layer {j}")
    Wr, Vr = W.rows[r], V.rows[r]
    if two:
        s, t = cols
        listed = vector([w["minor"]], "witness.minor", 1, max_digits)
        num, den = Wr[s] * Vr[t] - Wr[t] * Vr[s], W.den * V.den
        if num == 0 or not _same(num, den, listed.nums[0], listed.den):
            raise CertificateError("witness", f"witness.minor is "
                                              f"{show_ratio(listed.nums[0], listed.den)}; "
                                              f"W[{r}][{s}]·V[{r}][{t}] − W[{r}][{t}]·V[{r}][{s}] "
                                              f"is {show_ratio(num, den)}"
                                              + (" (it must be nonzero)" if num == 0 else ""))
        return (f"witness aligned: row {r} of layer {j} is not a multiple of the frozen row (the "
                f"2 x 2 minor at columns {s}, {t} is {show_ratio(num, den)})")
    (s,) = cols
    listed = vector([w["value"]], "witness.value", 1, max_digits)
    if Wr[s] == 0 or not _same(Wr[s], W.den, listed.nums[0], listed.den) or \
            any(Vr[t] for t in free):
        raise CertificateError("witness", f"witness.value is "
                                          f"{show_ratio(listed.nums[0], listed.den)}, W[{r}][{s}] "
                                          f"is {show_ratio(Wr[s], W.den)}; the single-column "
                                          f"form needs it nonzero and the frozen row {r} zero on "
                                          f"every free coordinate")
    return (f"witness aligned: the frozen row {r} of layer {j} vanishes on the free coordinates, "
            f"the target's has W[{r}][{s}] = {show_ratio(Wr[s], W.den)}")


# ---------------------------------------------------------------- the rules in order


def run_impossibility(ar: Any, doc: object, max_digits: int = DEFAULT_MAX_DIGITS,
                      max_work: int | None = None) -> tuple[str, dict[str, Any]]:
    """Every rule of §9 in order, with the arithmetic ``ar`` (its ``linear`` operations); returns
    the message and the facts proven when all hold, else raises
    :class:`~.numbers.CertificateError`. ``max_work`` in units (``None``: the default budget
    of §7, grown with the bits the document writes)."""
    if not isinstance(doc, dict):
        raise CertificateError("format", "a document is a JSON object")
    budget = Budget(MIN_WORK if max_work is None else max_work)
    g = read_impossibility(doc, max_digits, budget, max_work is None)
    w = doc["witness"]
    if not isinstance(w, dict) or w.get("kind") not in WITNESS_KINDS:
        shown = w.get("kind") if isinstance(w, dict) else w
        raise CertificateError("format", f"witness.kind {show(shown)} is not one of "
                                         f"{show(list(WITNESS_KINDS))}")
    witness = w["kind"]
    if witness == "rank":
        cls, said = "every", _rule_rank(w, g, ar, budget, max_digits)
    elif witness == "fredholm":
        cls, said = _rule_fredholm(w, g, ar, budget, max_digits)
    elif witness == "kink":
        cls, said = "every", _rule_kink(w, g, ar, budget, max_digits)
    else:
        cls, said = "aligned", _rule_aligned(w, g, budget, max_digits)
    frozen_widths = [len(g.lower)] + [V.nrows for V, _ in g.frozen]
    target_widths = [len(g.lower)] + [tl.width for tl in g.target]
    p = g.prov
    box = describe_box(g.lower, g.upper)
    facts = {"claim": "UNREACHABLE", "class": cls, "class_text": CLASSES[cls], "witness": witness,
             "box": box, "dimension": len(g.lower), "frozen_widths": frozen_widths,
             "target_widths": target_widths, "regenerated": p.regenerated,
             "constant_draws": p.constant, "explicit": p.explicit, "fixed": p.fixed[:20],
             "fixed_count": len(p.fixed), "seed": min(p.seeds) if p.seeds else None,
             "distributions": sorted(p.distributions), "work": budget.spent,
             "work_budget": budget.max_work}
    # the frozen matrices as every document kind states them (seed rule, min-entropy, what is
    # not random); an impossibility holds for these matrices however they were chosen, so their
    # entropy says only whether they stand for a random network of their shape
    drawn = provenance_facts(p)
    facts.update(drawn)
    given = (f"{provenance_text(drawn)}; the impossibility holds for these matrices however they "
             f"were chosen" if drawn["drawn"] else f"{provenance_text(drawn)}; the impossibility "
                                                     f"is about these matrices as given")
    message = (f"no γ, β make the frozen network {'-'.join(map(str, frozen_widths))} equal the "
               f"target {'-'.join(map(str, target_widths))} on {box}, {CLASSES[cls]}; {said}; "
               f"{given}")
    return message, facts


def check_impossibility(ar: Any, doc: object, *, max_digits: int = DEFAULT_MAX_DIGITS,
                        progress: Callable[[int, int], None] | None = None,
                        max_work: int | None = None) -> Verdict:
    """Check an ``exactnorm.impossibility`` document with the arithmetic ``ar``; never raises
    for bad content."""
    if progress is not None:
        progress(0, 1)
    try:
        message, facts = run_impossibility(ar, doc, max_digits, max_work)
    except CertificateError as exc:
        return Verdict(False, exc.rule, str(exc), exc.layer, exc.neuron)
    except RecursionError:
        return Verdict(False, "format", "document is nested too deeply")
    if progress is not None:
        progress(1, 1)
    return Verdict(True, "valid", message, facts=facts)
