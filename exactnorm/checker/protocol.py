"""The arithmetic protocol: every exact operation the one walk asks of an arithmetic, typed and
with its contract (standard library only).

Contract. The walk (:mod:`.walk`), the redraw proofs (:func:`.provenance.verify_redraws`) and
the impossibility rules (:mod:`.impossibility`, through :attr:`Arithmetic.linear`) never touch
numbers themselves: they call the operations of an :class:`Arithmetic`. Two implementations
exist, :class:`.arithmetic.PureArithmetic` (Python integers and lists, the reference) and
``exactnorm.checker_flint.FlintArithmetic`` (python-flint ``fmpz_mat``); each declares that it
satisfies the protocol in a form mypy checks. The protocol is generic in the four things an
arithmetic chooses for itself: its *map* type ``MapT``, its integer matrix ``MatT``, its integer
``IntT`` (a denominator) and its *box family* ``FamT``. The walk treats them as opaque and reads
numbers only through :meth:`Arithmetic.ranges` (``int()`` of what it returns),
:meth:`Arithmetic.height` and :meth:`Arithmetic.plain`.

The ground domain is ℚ, represented exactly over ℤ: a *map* is an affine map
``node = (A·a[cols] + c)/den`` of the segment input ``a`` (for a convolution segment: of a
patch of ``a``), with an integer matrix ``A``, an integer column ``c`` and one denominator
``den > 0``. Every map an operation returns is **reduced**: written over its *least* common
denominator (the lcm of the denominators of its entries in lowest terms, equivalently ``gcd(den,
entries of A, entries of c) = 1``), so :meth:`~Arithmetic.ranges`, :meth:`~Arithmetic.height`
and :meth:`~Arithmetic.plain` give the same integers in every arithmetic, not only the same
values. A map's *support* is a set of input columns containing every column with a nonzero
coefficient; it is structural (the union of the supports of what was added), except that a map
whose matrix is zero has the empty support. The walk bounds sizes with it before any product
(rule ``limit``), so both arithmetics must return the same support. ``None`` stands for the
segment input itself (the identity, never written as a matrix).

Correctness argument. An implementation is correct when, for every input in the stated domain,
its result equals (as exact rationals, and in the integers named "the same in every
arithmetic") what the formula in the operation's docstring gives over ℚ; then the walk, which
only composes these operations and compares their integer results, reaches the same verdict and
message with either implementation. tests/checker/test_checker_kernel.py checks each operation
of both
against an independent :class:`fractions.Fraction` computation of the formula, on
Hypothesis-generated exact inputs, and fails when a member of this protocol has no row in its
table.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, Protocol, SupportsInt, TypeVar

from .numbers import IntMatrix, IntVector
from .provenance import Draw
from .reading import Picks

__all__ = ["Arithmetic", "AnyArithmetic", "Family", "Linear", "Plain", "Ranges"]

#: ``(cols, rows, consts, den)``: ``node = (rows·a[cols] + consts)/den`` in Python integers
Plain = tuple[list[int], list[list[int]], list[int], int]
#: ``(mins, maxs, den, at_min, at_max)`` of :meth:`Arithmetic.ranges`
Ranges = tuple[Sequence[SupportsInt], Sequence[SupportsInt], SupportsInt, Sequence[int],
               Sequence[int]]


class Family(Protocol):
    """A box family: bounds ``lo[t][p]/Q ≤ a_t ≤ hi[t][p]/Q`` for coordinates ``t`` and
    positions ``p`` (a dense segment has one position; a convolution segment one per output
    pixel)."""

    @property
    def positions(self) -> int:
        """The number of positions ``P`` (``len(lo[0])``, or 1 when there is no coordinate)."""
        ...


MapT = TypeVar("MapT")
MatT = TypeVar("MatT")
IntT = TypeVar("IntT")
FamT = TypeVar("FamT", bound=Family)


class Linear(Protocol):
    """The one operation of the impossibility rules that is no map operation: a determinant
    modulo a prime (docs/certificate-format.md §9). Both arithmetics return the same Python
    integer."""

    @property
    def name(self) -> str:
        """``"pure"`` or ``"flint"``."""
        ...

    def det_mod(self, rows: list[list[int]], p: int) -> int:
        """``det(rows) mod p`` in ``0 … p−1`` for a square ``n × n`` matrix of residues
        ``0 ≤ x < p`` and a prime ``p < 2^62`` (checked by the rules before the call); the
        empty matrix (``n = 0``) has determinant ``1 mod p``. ``rows`` is not modified."""
        ...


class Arithmetic(Protocol[MapT, MatT, IntT, FamT]):
    """The exact operations of the checker's walk (module docstring: maps, reduction,
    support)."""

    @property
    def name(self) -> str:
        """``"pure"`` or ``"flint"`` (what the command line reports)."""
        ...

    @property
    def linear(self) -> Linear:
        """The impossibility rules' modular determinant in the same arithmetic."""
        ...

    def weight(self, V: IntMatrix | Draw) -> tuple[MatT, IntT]:
        """A frozen matrix as ``(M, den)`` with ``V = M/den`` (``M`` integer, ``den > 0``).
        An explicit matrix is returned as written (``M = V.rows``, ``den = V.den``, not
        reduced); a draw is regenerated (docs/generator.md) and put over one denominator by
        :func:`.numbers.over_one_denominator` (``den = 1`` for an integer distribution). The same
        integers in every arithmetic, and the same exception and message where one is raised:
        a draw above ``MAX_MAP_ENTRIES`` entries (:class:`.regenerate.RecordError`, before
        anything is allocated), a rational draw over too many denominators
        (:class:`.numbers.CertificateError`, rule ``limit``)."""
        ...

    def nrows(self, node: MapT) -> int:
        """The number of rows of a map (its output width)."""
        ...

    def support(self, node: MapT | None) -> Collection[int]:
        """The support of a map (module docstring), as a collection of distinct column indices
        (its order is not part of the contract); ``None`` (the segment input) has none."""
        ...

    def height(self, node: MapT) -> tuple[int, int]:
        """``(bits of max |numerator|, bits of den)`` of the map over its least common
        denominator (numerators of ``A`` and ``c``; 0 bits when all are zero): a property of
        its values, what the walk's work budget is computed from."""
        ...

    def compose(self, M: MatT, den: IntT, node: MapT | None, width: int) -> MapT:
        """``(M/den)·node``, reduced. ``M`` (``m × k``, ``k ≥ 1``) is an integer matrix of
        :meth:`weight` and ``den > 0``; ``node`` has ``k`` rows. For ``node = None`` (the
        segment input, ``k = width``) the result is ``M/den`` with constant 0, on the support
        of the columns of ``M`` with a nonzero entry. Otherwise its support is ``node``'s (empty
        if the product is zero)."""
        ...

    def compose_picks(self, P: Picks, node: MapT | None) -> MapT:
        """``P·node`` for a 0/1 skip: row ``r`` of the result is row ``P.rows[r]`` of ``node``,
        or zero where ``P.rows[r]`` is None (rows copied, never multiplied), reduced. For
        ``node = None`` row ``r`` is the coordinate ``a[P.rows[r]]`` and the support the picked
        columns; otherwise ``node``'s support (empty if the result is zero)."""
        ...

    def affine(self, gamma: IntVector, node: MapT, beta: IntVector) -> MapT:
        """``diag(γ)·node + β`` (``len(γ) = len(β) = nrows(node)``), reduced; support
        ``node``'s (empty if ``diag(γ)·A`` is zero)."""
        ...

    def ranges(self, node: MapT, box: FamT) -> Ranges:
        """Per row ``k`` of ``node``: ``mins[k]`` is the exact minimum over the positions ``p``
        of the minimum of ``(A_k·a + c_k)/den`` over the box of position ``p`` (each
        coordinate ``t`` in the support ranges over ``[lo[t][p]/Q, hi[t][p]/Q]``, ``lo ≤ hi``),
        ``maxs[k]`` the maximum of the maxima; both as integer numerators over the returned
        denominator, which is ``den·Q`` with ``den`` the map's least common denominator (the
        same integers in every arithmetic). ``at_min[k]``, ``at_max[k]``: the first position
        attaining them. Integers may be any type ``int()`` converts exactly."""
        ...

    def compose_scaled(self, M: MatT, den: IntT, B: MapT, gamma: IntVector, beta: IntVector,
                       width: int) -> MapT:
        """``(M/den)·(diag(γ)·B + β)``, reduced, with ``γ`` applied to the columns of ``M``
        (the walk keeps a layer's output unscaled until it is read); support ``B``'s (empty if
        the matrix of the result is zero)."""
        ...

    def reduced(self, node: MapT) -> MapT:
        """The same map over its least common denominator, with the empty support when its
        matrix is zero (every other operation already returns reduced maps)."""
        ...

    def add(self, m1: MapT, m2: MapT) -> MapT:
        """``m1 + m2`` (equal row counts), reduced, on the union of the supports (empty if the
        sum's matrix is zero)."""
        ...

    def plain(self, node: MapT) -> Plain:
        """The map as ``(cols, rows, consts, den)`` in Python integers: ``den`` its least common
        denominator, ``cols`` strictly increasing, containing every column with a nonzero
        coefficient and contained in the support (zero columns of the support may be left
        out), ``rows[r][k]`` the numerator of the coefficient of ``a[cols[k]]``, ``consts`` the
        constant's numerators — the checkpoint rule's view of a map."""
        ...

    def box(self, lo: list[list[int]], hi: list[list[int]], Q: int) -> FamT:
        """The box family ``lo[t][p]/Q ≤ a_t ≤ hi[t][p]/Q`` (``Q > 0``, every ``lo[t]`` and
        ``hi[t]`` of one length ``P ≥ 1``), with :attr:`Family.positions` ``= P``."""
        ...

    def vanishes(self, A: Draw, B: Draw | None, v: list[int]) -> bool:
        """Whether ``V_A·v = 0`` (``B`` None, ``len(v) = cols(V_A)``) or ``V_B·diag(v)·V_A =
        0`` (``len(v) = cols(V_B) = rows(V_A)``) for the regenerated matrices (a redraw's proof
        of singularity; the matrices' denominators do not matter)."""
        ...


#: an arithmetic whose own types the caller treats as opaque (the walk's view)
AnyArithmetic = Arithmetic[Any, Any, Any, Any]
