"""The seed derived from a target and its box (seed rules ``target.v2`` and ``target``,
docs/generator.md §8). Standard library only.

Contract. :func:`derived_seed` maps the *values* of a certificate's domain and target (as read
by the checker: :class:`~.numbers.IntVector` and :class:`~.numbers.IntMatrix` over one
denominator, layer kinds and windows) to a 64-bit seed: the first eight bytes, little-endian, of
SHAKE-256 of a canonical text. Rule ``target.v2`` (what ``certify`` declares) hashes the
*canonical form of the target on the box* (:func:`canonical_target`): coordinates constant on the
box folded into the bias, ReLU neurons dead on the box zeroed, the hidden neurons of dense layers
in a canonical positive scale and order, duplicates merged; rule ``target`` (version 1, still
checked) hashes the target as written (:func:`canonical_lines`). A certificate declaring either
draws every frozen matrix from that seed, so the random network is a function of the target,
the box and the positions the format fixes: it was not chosen after seeing the target.

Correctness argument. The text depends on values only: every number is written in lowest terms
(numerator and denominator in lowercase hexadecimal, the sign on the numerator), so ``"1/2"``,
``"0.5"``, ``"2/4"`` and ``{"den": 4, "num": [2]}`` give the same bytes. Fields are separated by
characters no number contains (`` ``, ``,``, ``;``, newline), so different texts come from
different canonical targets; SHAKE-256 (FIPS 202) is the same on every machine. The canonical
target computes the same function as the target on the box (each step below preserves it), and
it is unchanged by the edits docs/generator.md §8 lists (each step removes one of them), so those
edits cannot be tried to choose among seeds.

>>> from exactnorm.checker.numbers import IntMatrix, IntVector
>>> from exactnorm.checker.records import TargetRecord
>>> layer = TargetRecord("dense", IntMatrix([[1, -2]], 4), IntVector([3], 1), "identity", 1)
>>> list(canonical_lines(IntVector([0, 0], 1), IntVector([1, 1], 1), [layer]))[:4]
[b'exactnorm.seed.v1\\n', b'lower 0,0\\n', b'upper 1,1\\n', b'layer 1 dense identity\\n']
>>> target_seed(IntVector([0, 0], 1), IntVector([1, 1], 1), [layer]) < 2**64
True
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterator
from typing import Any

from .boxes import Box, domain_box
from .budget import STEP, Budget, div_cost, gcd_cost, mul_cost, words
from .kinds import RULES
from .numbers import CertificateError, IntMatrix, IntVector
from .records import TargetRecord
from .vocabulary import (
    MAX_WORK_CAP,
    SEED_RULE_CHOSEN,
    SEED_RULE_TARGET,
    SEED_RULE_TARGET_V1,
    SEED_RULES,
)

__all__ = ["SEED_RULES", "SEED_RULE_TARGET", "SEED_RULE_TARGET_V1", "SEED_RULE_CHOSEN",
           "SEED_TEXT_VERSION", "SEED_TEXT_V2", "canonical_lines", "canonical_target",
           "target_seed", "target_seed_v2", "derived_seed", "hashing_cost", "rule_seed",
           "fully_connected"]

SEED_TEXT_VERSION = b"exactnorm.seed.v1"
SEED_TEXT_V2 = b"exactnorm.seed.v2"

#: one original neuron of a canonical coordinate: (index in its layer, c numerator, c
#: denominator): the original neuron's value is c times the canonical one
Member = tuple[int, int, int]


def _number(num: int, den: int) -> str:
    """``num/den`` in lowest terms, hexadecimal: ``-1f/20``, ``0``, ``a``."""
    g = math.gcd(num, den)
    p, q = num // g, den // g
    text = ("-" if p < 0 else "") + format(abs(p), "x")
    return text if q == 1 else f"{text}/{q:x}"


def _vector(v: IntVector) -> str:
    return ",".join(_number(n, v.den) for n in v.nums)


def _matrix(M: IntMatrix) -> str:
    return ";".join(",".join(_number(n, M.den) for n in row) for row in M.rows)


def _window(g: Any) -> str:
    return (f"{g.C},{g.H},{g.W} {g.kh},{g.kw} {g.sh},{g.sw} {g.ph},{g.pw} {g.dh},{g.dw}")


def _topology(tl: TargetRecord, i: int) -> Iterator[bytes]:
    """A residual layer's lines: ``input p`` when it reads a node other than ``i − 1``, and
    ``skip q identity n`` or ``skip q selection d c_0,c_1,…`` for a skip (``d`` the columns,
    ``c_r`` the column row ``r`` copies, ``_`` for a zero row). A chain has none, so its text is
    unchanged."""
    p = tl.input
    if p != i - 1:
        yield f"input {p}\n".encode("ascii")
    skip = tl.skip
    if skip is not None and skip[1] == "identity":
        yield f"skip {skip[0]} identity {skip[2].cols}\n".encode("ascii")
    elif skip is not None:
        q, kind, picks = skip
        rows = ",".join("_" if t is None else str(t) for t in picks.rows)
        yield f"skip {q} {kind} {picks.cols} {rows}\n".encode("ascii")


def canonical_lines(lower: IntVector, upper: IntVector, target: list[TargetRecord],
                    header: bytes = SEED_TEXT_VERSION) -> Iterator[bytes]:
    """The canonical text of a box and a target, line by line (ASCII, each ending in ``\n``):
    ``header`` (``exactnorm.seed.v1``, or ``exactnorm.seed.v2`` for a canonical target);
    ``lower`` and ``upper`` with the box's numbers; then for target layer ``i`` a line ``layer i
    KIND ACTIVATION`` (a convolution or pooling adds its window ``C,H,W kh,kw sh,sw ph,pw
    dh,dw``, a global pooling its ``C,H,W``), a residual layer's ``input`` and ``skip`` lines
    (:func:`_topology`) and, except for a pooling layer, ``weight`` (rows separated by ``;``)
    and ``bias``."""
    yield header + b"\n"
    yield f"lower {_vector(lower)}\n".encode("ascii")
    yield f"upper {_vector(upper)}\n".encode("ascii")
    for i, tl in enumerate(target, 1):
        head = f"layer {i} {tl.kind} {tl.act}"
        if tl.geom is not None:
            head += " " + _window(tl.geom)
        elif tl.shape is not None:  # a global pooling: its input shape C,H,W
            head += " " + ",".join(map(str, tl.shape))
        yield f"{head}\n".encode("ascii")
        yield from _topology(tl, i)
        if tl.W is not None and tl.b is not None:
            yield f"weight {_matrix(tl.W)}\n".encode("ascii")
            yield f"bias {_vector(tl.b)}\n".encode("ascii")


def hashing_cost(lower: IntVector, upper: IntVector, target: list[TargetRecord],
                 cost: Callable[[int, int], int]) -> int:
    """An upper bound of the work of hashing the canonical text in the units of the work budget:
    one greatest common divisor per number, ``cost(bits of the numerator, bits of the
    denominator)``, and one unit per number for the text and the hash."""
    total = 0
    vectors = [lower, upper] + [tl.b for tl in target if tl.b is not None]
    for v in vectors:
        d = v.den.bit_length()
        total += sum(cost(abs(n).bit_length(), d) + 1 for n in v.nums)
    for tl in target:
        skip = tl.skip
        total += 2 * len(skip[2].rows) if skip is not None and skip[1] != "identity" else 1
        W = tl.W
        if W is not None:
            d = W.den.bit_length()
            bits = max((abs(n).bit_length() for row in W.rows for n in row), default=0)
            total += W.nrows * W.ncols * (cost(bits, d) + 1)
    return total


def number_cost(num_bits: int, den_bits: int) -> int:
    """Units of writing one number of the canonical text: a step, the gcd that puts it in lowest
    terms and the two divisions by it (§7)."""
    return STEP + gcd_cost(num_bits, den_bits) + 2 * div_cost(max(num_bits, den_bits), den_bits)


def _hash(lines: Iterator[bytes]) -> int:
    h = hashlib.shake_256()
    for line in lines:
        h.update(line)
    return int.from_bytes(h.digest(8), "little")


def target_seed(lower: IntVector, upper: IntVector, target: list[TargetRecord]) -> int:
    """The seed of rule ``target`` (version 1): the first 8 bytes of SHAKE-256 of the canonical
    text of the target as written, read as a little-endian unsigned integer."""
    return _hash(canonical_lines(lower, upper, target))


# ---------------------------------------------------------------- the canonical target (v2)


def fully_connected(tl: TargetRecord) -> bool:
    """A layer whose weight is a matrix over the coordinates of the node it reads (an affine
    layer without a window): its neurons are coordinates a reader's columns can follow through a
    scale and a permutation, and its columns meet the reader's coordinates one to one."""
    return tl.W is not None and tl.b is not None and tl.geom is None


def _top(rows: list[list[int]]) -> int:
    return max((abs(x).bit_length() for row in rows for x in row), default=0)


def _compensated(W: IntMatrix, groups: list[list[Member]] | None, budget: Budget,
                 i: int) -> IntMatrix:
    """``W`` read on the canonical coordinates of the node it reads: column ``u`` is
    ``Σ W[:, s]·c_s`` over the members ``(s, c_s)`` of coordinate ``u`` (none: a zero
    column)."""
    if groups is None:
        return W
    L = 1
    for group in groups:
        for _, _, cd in group:
            if cd != 1:  # the lcm step, counted before it is taken
                lb, db = L.bit_length(), cd.bit_length()
                budget.work(STEP + 2 * mul_cost(lb, db) + div_cost(lb + db, db), None,
                            f"target layer {i}")
                L = L * cd // math.gcd(L, cd)
    cbits = max((cn.bit_length() for g in groups for _, cn, _ in g), default=0)
    lbits = L.bit_length()
    bits = _top(W.rows) + cbits + lbits + W.ncols.bit_length()
    budget.size(W.nrows, len(groups), None, max(bits, W.den.bit_length() + lbits),
                where=f"target layer {i}", what="its canonical form")
    budget.work(W.nrows * W.ncols * (STEP + mul_cost(_top(W.rows), cbits + lbits))
                + len(groups) * (STEP + mul_cost(cbits, lbits)), None, f"target layer {i}")
    scaled = [[(s, cn * (L // cd)) for s, cn, cd in group] for group in groups]
    rows = [[sum(row[s] * f for s, f in group) for group in scaled] for row in W.rows]
    return IntMatrix(rows, W.den * L)


def _folded(W: IntMatrix, b: IntVector, box: Box, budget: Budget,
            i: int) -> tuple[IntMatrix, IntVector]:
    """Coordinates constant on the box (``lower = upper``: a pinned input, a dead neuron, …)
    folded into the bias, their columns set to 0."""
    lo, hi, Q = box
    const = [u for u in range(len(lo)) if lo[u] == hi[u]]
    if not const:
        return W, b
    where = f"target layer {i}"
    qb = Q.bit_length()
    # a gcd with Q and an lcm step per constant coordinate (each q divides Q: so does their lcm)
    budget.work(len(const) * (STEP + div_cost(qb, qb) + 4 * words(qb) ** 2 + 2 * mul_cost(qb, qb)),
                None, where)
    values = []
    qv = 1
    for u in const:
        g = math.gcd(lo[u], Q)
        values.append((u, lo[u] // g, Q // g))
        qv = qv * (Q // g) // math.gcd(qv, Q // g)
    vbits = max(a.bit_length() for _, a, _ in values) + qv.bit_length()
    wbits = _top(W.rows)
    bbits = max(b.den.bit_length() + W.den.bit_length() + qv.bit_length(),
                _top([b.nums]) + W.den.bit_length() + qv.bit_length(),
                wbits + vbits + b.den.bit_length() + len(const).bit_length()) + 1
    budget.size(1, W.nrows, None, bbits, where=where, what="its folded bias")
    budget.work(W.nrows * (len(const) + 2) * (STEP + mul_cost(wbits, vbits)
                                              + mul_cost(bbits, bbits)), None, where)
    scale = [(u, a * (qv // q)) for u, a, q in values]
    nums = [bn * W.den * qv + b.den * sum(row[u] * a for u, a in scale)
            for row, bn in zip(W.rows, b.nums)]
    zero = set(const)
    rows = [[0 if u in zero else x for u, x in enumerate(row)] for row in W.rows]
    return IntMatrix(rows, W.den), IntVector(nums, b.den * W.den * qv)


def _dead(rec: TargetRecord, box: Box) -> list[bool]:
    """The ReLU neurons dead on the box: the upper end of their interval is 0 after the clamp."""
    if rec.act != "relu":
        return [False] * rec.width
    return [x == 0 for x in box[1]]


def _zeroed(rec: TargetRecord, dead: list[bool]) -> TargetRecord:
    """The dead neurons' rows and biases set to 0 (a dead ReLU neuron is 0 on the box)."""
    assert rec.W is not None and rec.b is not None
    if not any(dead):
        return rec
    zero = [0] * rec.W.ncols
    W = IntMatrix([zero if d else row for row, d in zip(rec.W.rows, dead)], rec.W.den)
    b = IntVector([0 if d else x for x, d in zip(rec.b.nums, dead)], rec.b.den)
    return rec._replace(W=W, b=b)


def _normalized(rec: TargetRecord, box_in: Box, budget: Budget,
                i: int) -> tuple[TargetRecord, list[list[Member]], Box]:
    """A hidden dense layer in its canonical positive scale and order.

    Each row ``(w, b)`` is divided by its content ``c > 0`` (the positive rational that makes it
    a primitive integer vector: coprime integers), the reader compensating with ``c``; the dead
    ReLU rows become 0; the rows are sorted lexicographically (as tuples of integers, the bias
    last); equal rows are merged: the first of a run keeps the members of all, the others become
    zero rows with no member (their outputs equal the first's, so the readers' columns add up).
    Returns the canonical layer, the members of each canonical coordinate and its box."""
    W, b = rec.W, rec.b
    assert W is not None and b is not None
    where = f"target layer {i}"
    n, D = W.nrows, W.den * b.den
    bits = max(_top(W.rows) + b.den.bit_length(), _top([b.nums]) + W.den.bit_length())
    budget.size(n, W.ncols + 1, None, bits, where=where, what="its canonical form")
    budget.work(n * (W.ncols + 1) * (3 * STEP + mul_cost(bits, bits) + 2 * div_cost(bits, bits))
                + n * (n.bit_length() + 1) * (W.ncols + 1) * (STEP + words(bits)), None, where)
    keys, scales = [], []
    for row, bn in zip(W.rows, b.nums):
        ints = [x * b.den for x in row] + [bn * W.den]
        g = 0
        for x in ints:
            g = math.gcd(g, x)
        if g == 0:
            keys.append(tuple(ints))
            scales.append((1, 1))
            continue
        keys.append(tuple(x // g for x in ints))
        h = math.gcd(g, D)
        scales.append((g // h, D // h))
    prim = rec._replace(W=IntMatrix([list(k[:-1]) for k in keys], 1),
                        b=IntVector([k[-1] for k in keys], 1))
    lo, hi, Q = RULES[rec.kind].next_box(prim, box_in, budget, i, None)
    zero = (0,) * (W.ncols + 1)
    for r, dead in enumerate(_dead(prim, (lo, hi, Q))):
        if dead:
            keys[r] = zero
    runs: dict[tuple[int, ...], list[int]] = {}
    for r in range(n):
        runs.setdefault(keys[r], []).append(r)
    merged = [(key, [(r, *scales[r]) for r in members], members[0])
              for key, members in runs.items() if key != zero]
    merged += [(zero, [], -1)] * (n - len(merged))
    merged.sort(key=lambda item: item[0])
    canon = rec._replace(W=IntMatrix([list(k[:-1]) for k, _, _ in merged], 1),
                         b=IntVector([k[-1] for k, _, _ in merged], 1))
    box = ([0 if r < 0 else lo[r] for _, _, r in merged],
           [0 if r < 0 else hi[r] for _, _, r in merged], Q)
    return canon, [group for _, group, _ in merged], box


def canonical_target(lower: IntVector, upper: IntVector, target: list[TargetRecord],
                     budget: Budget) -> list[TargetRecord]:
    """The canonical form of a target on its box (docs/generator.md §8), layer by layer, with
    the exact interval boxes of the canonical nodes (:mod:`.boxes`, the walk's rules):

    1. a dense layer reads the node it reads in that node's canonical coordinates
       (:func:`_compensated`), then folds the coordinates constant on its box into its bias
       (:func:`_folded`);
    2. a hidden dense node — not the output, no skip of its own, read only as the ``input`` of
       dense layers — is normalized (:func:`_normalized`: dead ReLU rows zeroed, positive scale,
       order, duplicates merged);
    3. any other dense layer without a skip has its dead ReLU rows zeroed; convolution and
       pooling layers, and the rows of a layer with a skip, stay as written.

    Every step keeps the function on the box: a constant coordinate contributes a constant; a
    dead ReLU neuron is 0 on the box (its interval is sound); ``relu(c·z) = c·relu(z)`` and
    ``c·z`` for ``c > 0``; a permutation or a merge of equal neurons is compensated in every
    reader."""
    last = {p: 0 for p in range(len(target) + 1)}
    readers: dict[int, list[tuple[int, str]]] = {p: [] for p in range(len(target) + 1)}
    for i, tl in enumerate(target, 1):
        readers[tl.input].append((i, "input"))
        last[tl.input] = i
        if tl.skip is not None:
            readers[tl.skip[0]].append((i, "skip"))
            last[tl.skip[0]] = i

    def normal(i: int, tl: TargetRecord) -> bool:
        return i < len(target) and fully_connected(tl) and tl.skip is None and all(
            how == "input" and fully_connected(target[r - 1]) for r, how in readers[i])

    boxes = {0: domain_box(lower, upper, budget)}
    groups: dict[int, list[list[Member]]] = {}
    out = []
    for i, tl in enumerate(target, 1):
        p = tl.input
        skip = None if tl.skip is None else (tl.skip[2], boxes[tl.skip[0]])
        if not fully_connected(tl):
            out.append(tl)
            if last[i]:
                boxes[i] = RULES[tl.kind].next_box(tl, boxes[p], budget, i, skip)
        else:
            assert tl.W is not None and tl.b is not None  # a dense record
            W, b = _folded(_compensated(tl.W, groups.get(p), budget, i), tl.b, boxes[p],
                           budget, i)
            rec = tl._replace(W=W, b=b)
            if normal(i, tl):
                rec, groups[i], boxes[i] = _normalized(rec, boxes[p], budget, i)
            elif tl.skip is None and (tl.act == "relu" or last[i]):
                box = RULES[tl.kind].next_box(rec, boxes[p], budget, i, None)
                rec = _zeroed(rec, _dead(rec, box))
                boxes[i] = box
            elif last[i]:
                boxes[i] = RULES[tl.kind].next_box(rec, boxes[p], budget, i, skip)
            out.append(rec)
        for q in [p] + ([tl.skip[0]] if tl.skip is not None else []):
            if last[q] == i:
                boxes.pop(q, None)
                groups.pop(q, None)
    return out


def target_seed_v2(lower: IntVector, upper: IntVector, target: list[TargetRecord],
                   budget: Budget) -> int:
    """The seed of rule ``target.v2``: SHAKE-256 of the text of the canonical target (header
    ``exactnorm.seed.v2``), its computation and hashing counted in ``budget``."""
    canon = canonical_target(lower, upper, target, budget)
    budget.work(hashing_cost(lower, upper, canon, number_cost), None, "seed_rule")
    return _hash(canonical_lines(lower, upper, canon, SEED_TEXT_V2))


def derived_seed(rule: str, lower: IntVector, upper: IntVector, target: list[TargetRecord],
                 budget: Budget | None = None) -> int:
    """The seed rule ``rule`` (``target.v2`` or ``target``) derives from a box and a target,
    counted in ``budget`` (None: a budget of :data:`~.vocabulary.MAX_WORK_CAP` units)."""
    budget = Budget(MAX_WORK_CAP) if budget is None else budget
    if rule == SEED_RULE_TARGET:
        return target_seed_v2(lower, upper, target, budget)
    if rule != SEED_RULE_TARGET_V1:
        raise ValueError(f"no seed is derived by rule {rule!r}")
    budget.work(hashing_cost(lower, upper, target, number_cost), None, "seed_rule")
    return target_seed(lower, upper, target)


def rule_seed(prov: Any, lower: IntVector, upper: IntVector, target: list[TargetRecord],
              budget: Budget) -> None:
    """Rule ``provenance``, seed rule ``target.v2`` (version 3): every record's seed is the seed
    the declared rule derives from the target and the box (:func:`derived_seed`), counted first.
    The retired first rule ``target`` is refused for a document with draws (its seed moves with
    function-preserving edits of the target)."""
    if prov.seed_rule not in (SEED_RULE_TARGET, SEED_RULE_TARGET_V1) or not prov.seeds:
        return
    if prov.seed_rule == SEED_RULE_TARGET_V1:
        # the first rule hashes the target's weights as written: an edit that keeps the target's
        # function on the box (a weight on a coordinate the box pins, its bias compensated) moves
        # the seed, so a writer could grind draws while the document says "derived, verified"
        raise CertificateError("provenance", "seed_rule target (the target's weights as written) "
                                             "is retired: edits of the target that keep its "
                                             "function on the box change that seed, so the "
                                             "draws could have been chosen; re-certify (seed "
                                             "rule target.v2, the canonical target) or declare "
                                             "no seed_rule (the seed is then the writer's)")
    derived = derived_seed(prov.seed_rule, lower, upper, target, budget)
    seed = min(prov.seeds)
    if seed != derived:
        raise CertificateError("provenance", f"seed_rule {prov.seed_rule}: the frozen matrices "
                                             f"are drawn from seed {seed}, the seed derived from "
                                             f"the target and box is {derived}")
