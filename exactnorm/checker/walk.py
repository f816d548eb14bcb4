"""The one walk of the checker (docs/certificate-format.md §0, §4, §6–§8): segments, stability,
checkpoint identity, the proofs of redraws and of the seed rule, the work budget — written once,
over an arithmetic (:mod:`.arithmetic`). Standard library only.

Claim checked: for every x in the box D, the frozen network f equals the target g.

Correctness argument. Inside a segment every node is an exact affine map ``A a + c`` of the
segment input ``a = h_start`` (for a convolution segment: of the patch ``patch_{y,x}(a)`` at every
output position, with the same ``A, c`` for all positions; rule ``segment`` has already made sure
that only the first layer reads the segment input, whose coordinates are pixels); a ReLU neuron
(channel) that is stable on the box (exact min ≥ 0: the identity; max ≤ 0: the constant 0) keeps
the map affine; at the checkpoint the map must equal the target layer ``(W_i, b_i)`` entry by
entry, hence ``f = g`` on the box by induction over segments. The boxes ``B_i`` are the exact
interval bounds of the target's layers (:mod:`.boxes`). The walk names no kind: the box family
of a segment, the checkpoint rule and the next box are the target layer's kind's
(``RULES[kind]``, :mod:`.kinds`; the argument of each rule is in its module): for a convolution
the kernel equality with the same window gives the same value at every position, borders
included; a fixed map (a pooling) is one frozen layer, equal when its fields are. Reference:
Giannou, Rajput, Papailiopoulos, "The Expressive Power of Tuning Only the Normalization Layers",
COLT 2023, arXiv:2302.07937.

Limits. Before every product, sum, scaling or range the walk bounds the size of what it would
build (:meth:`.budget.Budget.size`) and adds its cost in units to the running count
(:mod:`.budget`), computed from the shapes and from the exact bit sizes of the operands — the
document's numbers and the maps' heights (:meth:`.arithmetic.PureArithmetic.height`), which both
arithmetics return equal — so both reach the same verdict before allocating anything.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .boxes import Box, box_bits, domain_box
from .budget import STEP, Budget, div_cost, gcd_chain, mul_cost, words
from .document import read_certificate
from .kinds import RULES
from .numbers import CertificateError, IntMatrix, IntVector, show_ratio
from .protocol import AnyArithmetic
from .provenance import Draw, verify_redraws
from .reading import last_uses
from .records import FrozenRecord, Geometry, TargetRecord
from .seed import rule_seed
from .topology import Picks
from .verdict import describe_box, facts_of, progress_step, verdict_of
from .vocabulary import (
    DEFAULT_MAX_DIGITS,
    DEFAULT_MAX_WORK,
    MIN_WORK,
    WORK_PER_BIT,
)

__all__ = ["Budget", "Scaled", "run_rules", "verdict_of", "facts_of", "describe_box",
           "next_box", "check_segment", "materialized", "compose", "skip_term", "add_maps"]

class Scaled:
    """A node ``diag(γ)·B + β`` kept unmultiplied: the next layer's product is taken as
    ``(M·diag(γ))·B + M·β``, so a long γ (the 23,000-bit γ of a 2,400-channel convolution) scales
    the few columns of ``M`` instead of every entry of ``B``. Dead rows have γ = β = 0."""

    __slots__ = ("B", "gamma", "beta")

    def __init__(self, B: Any, gamma: IntVector, beta: IntVector) -> None:
        self.B, self.gamma, self.beta = B, gamma, beta


def _num_den(x: IntVector | IntMatrix | Draw) -> tuple[int, int]:
    """Bits of the largest absolute numerator and of the denominator of a document matrix or vector
    (a draw: the bound of its distribution)."""
    if isinstance(x, Draw):
        return x.bits, (1 if x.integral else x.bits)
    rows = x.rows if isinstance(x, IntMatrix) else [x.nums]
    top = max((max(map(abs, row)) for row in rows if row), default=0)
    return top.bit_length(), x.den.bit_length()


def _reduce_cost(rows: int, cols: int, num: int, den: int) -> int:
    """Units of bringing ``rows × (cols + 1)`` numerators of ``num`` bits over a ``den``-bit
    denominator to their least common denominator: a division per entry, and the chain of
    gcds (:func:`.budget.gcd_chain`)."""
    return rows * (cols + 1) * (STEP + div_cost(num, den)) + gcd_chain(den)


def materialized(ar: AnyArithmetic, node: Any, budget: Budget, j: int | None,
                 where: str | None = None) -> Any:
    """diag(γ)·B + β as a map, its size and cost counted first."""
    if not isinstance(node, Scaled):
        return node
    rows, s = ar.nrows(node.B), len(ar.support(node.B))
    hnum, hden = ar.height(node.B)
    (gnum, gden), (bnum, bden) = _num_den(node.gamma), _num_den(node.beta)
    rden = gden + hden + bden
    rnum = max(gnum + hnum + bden, bnum + gden + hden if bnum else 0) + 1
    budget.size(rows, s, j, max(rnum, rden), where=where)
    budget.work(rows * (s + 1) * (STEP + mul_cost(gnum, hnum) + mul_cost(rnum, bden))
                + _reduce_cost(rows, s, rnum, rden), j, where=where)
    return ar.affine(node.gamma, node.B, node.beta)


def compose(ar: AnyArithmetic, M: IntMatrix | Draw, node: Any, width: int, budget: Budget,
            j: int | None, where: str | None = None) -> Any:
    """``M·node`` (M a frozen matrix), every cost counted before it is paid: regenerating a
    draw, the product over the node's support (the segment input: a restriction of M), and the
    reduction of the result to its least common denominator."""
    rows, n = M.nrows, M.ncols
    mnum, mden = _num_den(M)
    if isinstance(M, Draw):
        budget.regenerate(rows * n, M.words, M.masked, j, where=where)
    if node is None:
        budget.size(rows, width, j, max(mnum, mden), where=where)
        budget.work(rows * width * STEP + _reduce_cost(rows, width, mnum, mden), j, where=where)
        Mn, den = ar.weight(M)
        return ar.compose(Mn, den, None, width)
    if isinstance(node, Scaled):
        B, gamma, beta = node.B, node.gamma, node.beta
        s = len(ar.support(B))
        (gnum, gden), (bnum, bden) = _num_den(gamma), _num_den(beta)
        hnum, hden = ar.height(B)
        vnum, vden = mnum + gnum, mden + gden  # M·diag(γ)
        pnum = vnum + hnum + n.bit_length()  # (M·diag(γ))·B
        rden = vden + hden + mden + bden
        rnum = max(pnum + mden + bden, mnum + bnum + n.bit_length() + vden + hden) + 1
        budget.size(rows, n, j, max(vnum, vden), where=where)
        budget.size(rows, s, j, max(rnum, rden), where=where)
        budget.work(rows * n * (2 * STEP + mul_cost(mnum, gnum) + mul_cost(mnum, bnum)), j,
                    where=where)
        budget.product(rows, n, s + 1, vnum, hnum, j, where=where)
        budget.work(rows * (s + 1) * (STEP + mul_cost(pnum, mden + bden))
                    + _reduce_cost(rows, s, rnum, rden), j, where=where)
        Mn, den = ar.weight(M)
        return ar.compose_scaled(Mn, den, B, gamma, beta, width)
    s = len(ar.support(node))
    hnum, hden = ar.height(node)
    rnum, rden = mnum + hnum + n.bit_length() + 1, mden + hden
    budget.size(rows, s, j, max(rnum, rden), where=where)
    budget.product(rows, n, s + 1, mnum, hnum, j, where=where)
    budget.work(_reduce_cost(rows, s, rnum, rden), j, where=where)
    Mn, den = ar.weight(M)
    return ar.compose(Mn, den, node, width)


def _stable(ar: AnyArithmetic, B: Any, gamma: IntVector, beta: IntVector, family: Any, j: int,
            g: Geometry | None, hull: bool = False) -> list[bool]:
    """Which ReLU rows γ_k·(B_k a) + β_k are active (min >= 0: True) or dead (max <= 0: False)
    on every box of the family; anything else is an unstable neuron (for a convolution:
    channel). The extremes of γ_k·t + β_k for t in [min B_k, max B_k] are at the ends, swapped
    when γ_k < 0: found on the small unscaled rows of B."""
    mins, maxs, den, at_min, at_max = ar.ranges(B, family)
    den = int(den)
    D = gamma.den * den * beta.den
    keep = []
    for k, (bmin, bmax) in enumerate(zip(mins, maxs)):
        gk, bk = gamma.nums[k], beta.nums[k] * gamma.den * den
        lo_t, hi_t, p_lo, p_hi = (int(bmin), int(bmax), at_min[k], at_max[k]) if gk >= 0 \
            else (int(bmax), int(bmin), at_max[k], at_min[k])
        mn = gk * lo_t * beta.den + bk
        mx = gk * hi_t * beta.den + bk
        if mn >= 0:
            keep.append(True)
        elif mx <= 0:
            keep.append(False)
        else:
            where = ""
            if hull:
                where = " (on the hull of the patch boxes over every position)"
            elif g is not None:
                pm, px = int(p_lo), int(p_hi)
                where = (f" (min at position ({pm // g.Wo}, {pm % g.Wo}), max at position "
                         f"({px // g.Wo}, {px % g.Wo}))")
            what = "channel" if g is not None else "neuron"
            raise CertificateError("stability", f"network layer {j} {what} {k} is not stable on "
                                                f"the box: min {show_ratio(mn, D)} < 0 < "
                                                f"max {show_ratio(mx, D)}{where}",
                                   layer=j, neuron=k)
    return keep


def _stability(ar: AnyArithmetic, B: Any, gamma: IntVector, beta: IntVector, family: Any,
               fbits: int, qbits: int, budget: Budget, j: int, g: Geometry | None,
               hull: bool = False) -> tuple[IntVector, IntVector]:
    """Rule ``stability`` for a ReLU layer inside a segment, counted first; dead rows get
    γ = β = 0."""
    rows, s, P = ar.nrows(B), len(ar.support(B)), family.positions
    hnum, hden = ar.height(B)
    (gnum, gden), (bnum, bden) = _num_den(gamma), _num_den(beta)
    # the ranges: numerators over hden + qbits (the constant times Q enters once per row)
    pbits = hnum + fbits + s.bit_length() + 1
    rbits = max(pbits, hnum + qbits) + 1
    budget.size(2 * rows, P, j, pbits)
    budget.product(2 * rows, s, P, hnum, fbits, j)
    # per row, twice: the constant, γ_k·t·β.den + β_k·γ.den·den, and the comparisons
    ends = (mul_cost(hnum, qbits) + mul_cost(gnum, rbits) + mul_cost(gnum + rbits, bden)
            + mul_cost(bnum, gden) + mul_cost(bnum + gden, hden + qbits)
            + words(gnum + rbits + bnum + gden + bden))
    budget.work(rows * (2 * P * STEP + 2 * (4 * STEP + ends)), j)
    keep = _stable(ar, B, gamma, beta, family, j, g, hull)
    if not all(keep):
        gamma = IntVector([x if k else 0 for x, k in zip(gamma.nums, keep)], gamma.den)
        beta = IntVector([x if k else 0 for x, k in zip(beta.nums, keep)], beta.den)
    return gamma, beta


def _checkpoint(ar: AnyArithmetic, layer: FrozenRecord, B: Any, gamma: IntVector, beta: IntVector,
                tl: TargetRecord, j: int, i: int, box: Box, budget: Budget) -> None:
    """The checkpoint map diag(γ)·B + β compared with the target layer by its kind's rule
    (:meth:`.kinds.base.Kind.identity`), counted first."""
    rows, s = ar.nrows(B), len(ar.support(B))
    hnum, hden = ar.height(B)
    (gnum, gden), (bnum, bden) = _num_den(gamma), _num_den(beta)
    rden = gden + hden + bden
    anum = gnum + hnum + bden + 1  # the matrix's numerators over rden
    cnum = max(anum, bnum + gden + hden if bnum else 0) + 1  # the constant's
    W, b = tl.W, tl.b
    assert W is not None and b is not None  # an affine kind's record
    budget.size(rows, s, j, max(cnum, rden))
    budget.work(rows * (s + 1) * (STEP + mul_cost(gnum, hnum) + mul_cost(cnum, bden))
                + _reduce_cost(rows, s, cnum, rden), j)
    (tnum, tden), (bbnum, bbden) = _num_den(W), _num_den(b)
    lo, hi, Q = box
    qb = box_bits(box) + Q.bit_length()
    rules = RULES[tl.kind]
    pinned = len(rules.folded(tl, box))
    budget.work(W.nrows * W.ncols * (2 * STEP + mul_cost(anum, tden) + mul_cost(tnum, rden))
                + W.nrows * (pinned + 2) * (4 * STEP + mul_cost(cnum + qb, bbden + tden)
                                            + mul_cost(max(anum, tnum) + qb, rden + bbden)
                                            + mul_cost(bbnum + tden + qb, rden)), j)
    rules.identity(layer, ar.plain(ar.affine(gamma, B, beta)), tl, j, i, box)


def skip_term(ar: AnyArithmetic, P: Any, sub: Any, width: int, budget: Budget, j: int | None,
              where: str | None = None) -> Any:
    """``P·h_s`` of one skip."""
    if isinstance(P, Picks):
        if sub is None:
            cols, num, den = len({t for t in P.rows if t is not None}), 1, 1
        else:
            cols, (num, den) = len(ar.support(sub)), ar.height(sub)
        budget.size(len(P.rows), cols, j, max(num, den), where=where)
        budget.work(len(P.rows) * (cols + 1) * STEP + _reduce_cost(len(P.rows), cols, num, den),
                    j, where=where)
        return ar.compose_picks(P, sub)
    return compose(ar, P, sub, width, budget, j, where)


def add_maps(ar: AnyArithmetic, A: Any, S: Any, budget: Budget, j: int | None,
             where: str | None = None) -> Any:
    """``A + S`` on the union of the supports, counted first: the lcm of the denominators, each
    map scaled to it, the sums, and the reduction."""
    ca, cs = len(ar.support(A)), len(ar.support(S))
    cols = len(set(ar.support(A)) | set(ar.support(S)))
    (anum, aden), (snum, sden) = ar.height(A), ar.height(S)
    rnum, rden = max(anum + sden, snum + aden) + 1, aden + sden
    rows = ar.nrows(A)
    budget.size(rows, cols, j, max(rnum, rden), where=where)
    budget.work(mul_cost(aden, sden) + gcd_chain(max(aden, sden))
                + rows * (ca + 1) * (STEP + mul_cost(anum, sden))
                + rows * (cs + 1) * (STEP + mul_cost(snum, aden))
                + rows * (cols + 1) * STEP + _reduce_cost(rows, cols, rnum, rden), j, where=where)
    return ar.add(A, S)


def _hull(ar: AnyArithmetic, fam_lo: list[list[int]], fam_hi: list[list[int]], Q: int, bits: int,
          budget: Budget, j: int) -> Any:
    """The hull of a family of patch boxes (numerators of at most ``bits`` bits): per patch
    coordinate the least lower and the greatest upper bound over every position (one box
    containing each position's), counted first."""
    positions = len(fam_lo[0]) if fam_lo else 1
    budget.size(2 * len(fam_lo), 1, j, bits, what="the hull")
    budget.work(2 * len(fam_lo) * positions * STEP, j)
    return ar.box([[min(row)] for row in fam_lo], [[max(row)] for row in fam_hi], Q)


def next_box(tl: TargetRecord, box: Box, budget: Budget, i: int,
             skip: tuple[Any, Box] | None = None) -> Box:
    """B_i from B_p (``box``, p the node target layer i reads) by its kind's rule
    (:meth:`.kinds.base.Kind.next_box`), with its skip ``(picks, B_q)`` if any."""
    return RULES[tl.kind].next_box(tl, box, budget, i, skip)


def check_segment(ar: AnyArithmetic, layers: list[FrozenRecord], start: int, end: int,
                  tl: TargetRecord, i: int, box: Box, budget: Budget,
                  step: Callable[[int], None] | None = None, seg_in: int | None = None) -> None:
    """Nodes start+1..end as affine maps of a = h_{seg_in} (or of its patches; ``seg_in`` the
    segment input, ``start`` unless the target layer reads an earlier node, and ``box`` its
    box): stability inside, the checkpoint rule at the end (without the checkpoint's residual,
    :func:`.topology.rule_residuals`). A node's map is dropped after its last reader."""
    seg_in = start if seg_in is None else seg_in
    rules = RULES[tl.kind]
    opened = rules.family(layers, start, tl, i, box, budget)
    if opened is None:  # a fixed map: one layer, whose identity is its fields'
        if step is not None:
            step(end)
        rules.identity(layers[end - 1], None, tl, end, i, box)
        return
    fam_lo, fam_hi, width, seg = opened
    fbits, qbits = box_bits(box), box[2].bit_length()
    family = ar.box(fam_lo, fam_hi, box[2])
    hull = None  # the hull of the patch boxes, built for the first layer that asks for it
    maps: dict[int, Any] = {seg_in: None}
    last = last_uses(layers, start, end)
    for j in range(start + 1, end + 1):
        if step is not None:
            step(j)
        layer = layers[j - 1]
        V, gamma, beta = layer.V, layer.gamma, layer.beta
        assert V is not None and gamma is not None and beta is not None  # a tuned layer
        node = maps[layer.input]
        if isinstance(node, Scaled) and V.nrows * V.ncols > ar.nrows(node.B) * max(
                1, len(ar.support(node.B))):
            # scaling the node is cheaper than scaling the columns of this layer's matrix
            node = maps[layer.input] = materialized(ar, node, budget, j)
        B = compose(ar, V, node, width, budget, j)
        if j < end and layer.act == "relu":
            if layer.hull and hull is None:
                hull = _hull(ar, fam_lo, fam_hi, box[2], fbits, budget, j)
            gamma, beta = _stability(ar, B, gamma, beta, hull if layer.hull else family,
                                     fbits, qbits, budget, j, seg, layer.hull)
        if j == end:
            _checkpoint(ar, layer, B, gamma, beta, tl, j, i, box, budget)
            return
        A: Any = Scaled(B, gamma, beta)
        if layer.skips:
            A = materialized(ar, A, budget, j)
        for src, P in layer.skips:
            sub = maps[src] = materialized(ar, maps[src], budget, j)
            A = add_maps(ar, A, skip_term(ar, P, sub, width, budget, j), budget, j)
        if j in last:
            maps[j] = A
        for src in {layer.input} | {s for s, _ in layer.skips}:
            if last[src] == j:
                del maps[src]


# ---------------------------------------------------------------- the rules in order


def run_rules(ar: AnyArithmetic, doc: object, max_digits: int = DEFAULT_MAX_DIGITS,
              progress: Callable[[int, int], None] | None = None,
              max_work: int | None = DEFAULT_MAX_WORK) -> dict[str, Any]:
    """Every rule in order, with the arithmetic ``ar``; returns the facts proven when all hold."""
    budget = Budget(MIN_WORK if max_work is None else max_work)
    lower, upper, target, layers, cps, prov = read_certificate(doc, max_digits, budget)
    if max_work is None:  # the default budget grows with the numbers the certificate writes
        budget.max_work = max(MIN_WORK, WORK_PER_BIT * prov.written)
    rule_seed(prov, lower, upper, target, budget)
    verify_redraws(ar, prov, budget)
    boxes = {0: domain_box(lower, upper, budget)}  # of the target nodes a later layer reads
    last = {}
    for i, tl in enumerate(target, 1):
        for q in [tl.input] + ([tl.skip[0]] if tl.skip is not None else []):
            last[q] = i
    step = progress_step(progress, len(layers))
    for i, (start, end, tl) in enumerate(zip([0] + cps, cps, target), 1):
        p, skip = tl.input, tl.skip
        check_segment(ar, layers, start, end, tl, i, boxes[p], budget, step,
                      0 if p == 0 else cps[p - 1])
        if i in last:
            boxes[i] = next_box(tl, boxes[p], budget, i,
                                None if skip is None else (skip[2], boxes[skip[0]]))
        for q in [p] + ([skip[0]] if skip is not None else []):
            if last.get(q) == i:
                boxes.pop(q, None)
    if progress is not None:
        progress(len(layers), len(layers))
    facts = facts_of(doc, lower, upper, target, len(layers), prov)  # type: ignore[arg-type]
    facts["work"] = budget.spent
    facts["work_budget"] = budget.max_work
    return facts
