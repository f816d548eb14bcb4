"""The checker's limits on what a check may build and do (rule ``limit``,
docs/certificate-format.md §7). Standard library only.

Contract. Before the walk builds a structure (an affine map, a box, a family of patch boxes, a
regenerated matrix) it calls :meth:`Budget.size` with the number of entries and a bound of their
bit length; before it computes, it calls :meth:`Budget.work` (or :meth:`Budget.product`,
:meth:`Budget.regenerate`) with the cost of the computation in *units*, and the running total
must stay within the work budget. The walk computes these numbers from the document and from
the exact sizes of the maps it holds (:meth:`.arithmetic.PureArithmetic.height`, the same in
both arithmetics), never from what an arithmetic does inside, so both arithmetics refuse at the
same place with the same message, before allocating or computing anything.

Units. A unit is one 64-bit word operation: multiplying an ``a``-bit by a ``b``-bit integer
costs ``words(a)·words(b)`` units with ``words(n) = max(1, ⌈n/64⌉)`` (schoolbook, an upper bound
of CPython's and GMP's multiplication), a multiply-add ``1 + words(a)·words(b)``, a gcd of an
``a``-bit and a ``b``-bit integer ``words(a)·words(b)``, a division ``words(b)·(words(a) −
words(b) + 1)``, one stream word of a regenerated matrix
and one entry each 1. On top of the word costs, every Python-level step on a number (a
multiply-add, a copy, a comparison) costs :data:`STEP` units, so that a unit is roughly the
same time whatever the size of the numbers.

>>> words(0), words(64), words(65), mul_cost(4, 20_000), mul_cost(0, 10**6), gcd_chain(640)
(1, 1, 2, 313, 1, 400)
>>> mul_cost(64 * 1024, 64 * 1024)  # 1024 words each: 3^10, not 1024^2
118098
"""

from __future__ import annotations

from .numbers import CertificateError
from .vocabulary import MAX_MAP_BITS, MAX_MAP_ENTRIES

__all__ = ["Budget", "STEP", "words", "mul_cost", "div_cost", "gcd_cost", "gcd_chain",
           "slot_bits", "det_mod_cost"]


#: units of one Python-level step on a number, besides the word cost of its operands
STEP = 64


def words(bits: int) -> int:
    """64-bit words of a ``bits``-bit integer (at least 1)."""
    return max(1, -(-bits // 64))


def mul_cost(a: int, b: int) -> int:
    """Units of one product of an ``a``-bit and a ``b``-bit integer: 1 when one of them is 0;
    ``words(a)·words(b)`` (schoolbook) while the shorter has at most 32 words; beyond,
    Karatsuba's ``(wa/wb + 1)·3^⌈log2 wb⌉`` for ``wa ≥ wb`` (CPython and GMP multiply at least
    that fast)."""
    if a == 0 or b == 0:
        return 1
    wa, wb = words(a), words(b)
    if wa < wb:
        wa, wb = wb, wa
    if wb <= 32:
        return wa * wb
    return (wa // wb + 1) * 3 ** (wb - 1).bit_length()


def div_cost(a: int, b: int) -> int:
    """Units of dividing an ``a``-bit by a ``b``-bit integer (or of one Euclid step):
    ``words(b)·(words(a) − words(b) + 1)`` (schoolbook long division)."""
    wa, wb = words(a), words(b)
    return wb * (max(wa - wb, 0) + 1)


def gcd_cost(a: int, b: int) -> int:
    """Units of the greatest common divisor of an ``a``-bit and a ``b``-bit integer (Lehmer's
    algorithm, CPython's and GMP's: ``O(words(a)·words(b))`` word operations)."""
    return words(a) * words(b)


def gcd_chain(bits: int) -> int:
    """Units of the greatest common divisors that bring a map to its least common denominator
    beyond one division per entry: Euclid's algorithm on ``(g, r)`` costs about
    ``words(g)·(words(g) − words(gcd))`` word operations, so the costs of the successive
    changes of the running gcd ``g`` telescope to ``O(words(den)²)``; counted as
    ``4·words(bits)²``."""
    return 4 * words(bits) ** 2


def slot_bits(n: int, pbits: int) -> int:
    """Bits of one slot of a packed row of the modular determinant (:mod:`.modular`): a
    residue below a ``pbits``-bit prime ``p`` that gains at most ``n − 1`` products
    ``f·(p − v) < p²`` never reaches ``n·p² < 2^(2·pbits + bits(n))``; rounded up to whole
    bytes, one bit to spare."""
    return 8 * -(-(2 * pbits + n.bit_length() + 1) // 8)


def det_mod_cost(n: int, pbits: int) -> int:
    """Units of the determinant of an ``n × n`` matrix of residues modulo a ``pbits``-bit prime
    by packed elimination (:meth:`.modular.PureLinear.det_mod`): packing the rows, then for
    each column, ``m`` rows of ``m`` slots left, the pivot search and the pivot row's
    reduction (a step per slot) and ``m`` row updates (a product by one word, a sum and a
    shift of a row of ``m`` slots: three passes over its words)."""
    s = slot_bits(n, pbits)
    total = n * n * (STEP + 1)
    for m in range(1, n + 1):
        total += m * (3 * STEP + 2) + (m + 1) * 3 * words(m * s)
    return total


class Budget:
    """The size limits and the running count of work units of one check (rule ``limit``)."""

    def __init__(self, max_work: int) -> None:
        self.max_work, self.spent = max_work, 0

    def size(self, rows: int, cols: int, j: int | None, bits: int = 0,
             where: str | None = None, what: str = "its affine map") -> None:
        """Refuse a structure of ``rows × cols`` numbers of up to ``bits`` bits above
        :data:`MAX_MAP_ENTRIES` entries or :data:`MAX_MAP_BITS` bits, before it is built."""
        place = where or f"network layer {j}"
        entries = rows * cols
        if entries > MAX_MAP_ENTRIES:
            raise CertificateError("limit", f"{place}: {what} would have {rows} x {cols} "
                                            f"entries, above this checker's limit "
                                            f"{MAX_MAP_ENTRIES}", layer=j)
        if entries * max(bits, 64) > MAX_MAP_BITS:
            raise CertificateError("limit", f"{place}: {what} would hold {rows} x {cols} numbers "
                                            f"of up to {bits:,} bits, above this checker's limit "
                                            f"of {MAX_MAP_BITS:,} bits", layer=j)

    def work(self, amount: int, j: int | None, where: str | None = None) -> None:
        """Add ``amount`` units; refuse when the total passes the budget."""
        self.spent += amount
        if self.spent > self.max_work:
            place = where or f"network layer {j}"
            raise CertificateError("limit", f"{place}: checking needs more than "
                                            f"{self.max_work:,} units of work (64-bit word "
                                            f"operations), this check's work budget (raise it "
                                            f"with --max-work)", layer=j)

    def product(self, rows: int, inner: int, cols: int, abits: int, bbits: int,
                j: int | None, where: str | None = None) -> None:
        """A matrix product: ``rows·inner·cols`` multiply-adds of ``abits``- by
        ``bbits``-bit numbers."""
        self.work(rows * inner * max(cols, 1) * (STEP + mul_cost(abits, bbits)), j, where)

    def regenerate(self, entries: int, words_per_entry: int, masked: bool,
                   j: int | None, where: str | None = None) -> None:
        """Regenerating a drawn matrix: its stream words (and its mask's) and its entries."""
        self.work(entries * (words_per_entry + (1 if masked else 0) + STEP), j, where)

    @staticmethod
    def draw_bits(rec: object) -> int:
        """A bound of the bit length of a drawn entry's numerator and denominator."""
        law, param = rec.law, rec.param  # type: ignore[attr-defined]
        if law == "set":
            return max(abs(v).bit_length() for v in rec.values)  # type: ignore[attr-defined]
        if law == "bits":
            return param + 2
        if law == "gauss":
            return param + 4
        return param.bit_length() + 1
