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
``a``-bit and a ``b``-bit integer ``words(a)·words(b)``, one stream word of a regenerated matrix
and one entry each 1.

>>> words(0), words(64), words(65), mul_cost(4, 20_000)
(1, 1, 2, 313)
"""

from __future__ import annotations

from .numbers import CertificateError
from .vocabulary import MAX_MAP_BITS, MAX_MAP_ENTRIES

__all__ = ["Budget", "words", "mul_cost"]


def words(bits: int) -> int:
    """64-bit words of a ``bits``-bit integer (at least 1)."""
    return max(1, -(-bits // 64))


def mul_cost(a: int, b: int) -> int:
    """Units of one product of an ``a``-bit and a ``b``-bit integer."""
    return words(a) * words(b)


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
        self.work(rows * inner * max(cols, 1) * (1 + mul_cost(abits, bbits)), j, where)

    def regenerate(self, entries: int, words_per_entry: int, masked: bool,
                   j: int | None) -> None:
        """Regenerating a drawn matrix: its stream words (and its mask's) and its entries."""
        self.work(entries * (words_per_entry + (1 if masked else 0) + 1), j)

    @staticmethod
    def draw_bits(rec: object) -> int:
        """A bound of the bit length of a drawn entry's numerator and denominator."""
        kind, param = rec.kind, rec.param  # type: ignore[attr-defined]
        if kind == "set":
            return max(abs(v).bit_length() for v in rec.values)  # type: ignore[attr-defined]
        if kind == "bits":
            return param + 2
        if kind == "gauss":
            return param + 4
        return param.bit_length() + 1
