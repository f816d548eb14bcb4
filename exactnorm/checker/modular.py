"""Exact linear algebra of the impossibility checker (docs/certificate-format.md §9), standard
library only: primality of a witness prime and a determinant modulo a prime.

Contract. :func:`is_prime` is deterministic for every ``n < 3.3·10^24`` (Miller–Rabin with the
first twelve primes as bases; the witness primes are below ``2^62``). :class:`PureLinear` is the
reference implementation of the one operation the impossibility rules ask of an arithmetic
besides its map operations: ``det_mod(rows, p)``, the determinant of a square matrix of residues
``0 ≤ x < p`` modulo the prime ``p``. :class:`exactnorm.checker_flint.linear.FlintLinear`
computes it with python-flint (``nmod_mat.det``); both return the same integer, so the rules
reach the same verdict and message with either. Its cost is :func:`.budget.det_mod_cost`,
counted before it runs.

Correctness argument. Gaussian elimination over the field ``Z/pZ`` (``p`` prime, checked before
any arithmetic) computes the determinant as the product of the pivots times the sign of the row
swaps; reduction modulo ``p`` is a ring homomorphism from the rationals whose denominators are
prime to ``p``, so a nonzero determinant modulo ``p`` proves a nonzero rational determinant.

Packed rows. :meth:`PureLinear.det_mod` keeps each row as one Python integer whose slot ``t``
(``s`` bits, :func:`.budget.slot_bits`) holds a non-negative integer congruent to the row's
entry ``t`` modulo ``p``, so that one row operation is one product and one sum of integers (run
in C) instead of ``n`` steps of the interpreter. The pivot row's slots are reduced below ``p``
first; a row update adds ``f·(p − v)`` slot by slot (``≡ −f·v``), which is non-negative, so no
slot borrows from the next; a row takes part in at most ``n − 1`` updates while its slots stay
below ``p + (n−1)·p² < 2^s``, so no slot carries into the next either. Hence every slot is its
entry's exact integer, congruent to the value of plain elimination, and slot 0 (the current
column) is read with a mask; after a column is eliminated every row is shifted by one slot.
Reference: any linear-algebra text (e.g. von zur Gathen and Gerhard, *Modern Computer Algebra*,
§5.5 for modular determinants).

>>> is_prime(2**61 - 1), is_prime(2**61 + 1)
(True, False)
>>> PureLinear().det_mod([[1, 2], [3, 4]], 7)
5
"""

from __future__ import annotations

from .budget import slot_bits

__all__ = ["is_prime", "PureLinear"]

_BASES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)


def is_prime(n: int) -> bool:
    """Deterministic primality for ``n < 3.3·10^24`` (Miller–Rabin with the first twelve prime
    bases, which no composite below that bound passes)."""
    if n < 2:
        return False
    for q in _BASES:
        if n % q == 0:
            return n == q
    d, s = n - 1, 0
    while d % 2 == 0:
        d, s = d // 2, s + 1
    for a in _BASES:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


class PureLinear:
    """The reference operations of the impossibility rules (module docstring)."""

    name = "pure"

    def det_mod(self, rows: list[list[int]], p: int) -> int:
        """``det(rows) mod p`` in ``0 … p−1`` by Gaussian elimination over ``Z/pZ`` on packed
        rows (module docstring); the rows are residues and are not modified."""
        n = len(rows)
        if n == 0:
            return 1 % p
        width = slot_bits(n, p.bit_length()) // 8  # bytes of a slot
        shift = 8 * width
        low = (1 << shift) - 1

        def pack(values: list[int]) -> int:
            return int.from_bytes(b"".join(v.to_bytes(width, "little") for v in values),
                                  "little")

        packed = [pack([x % p for x in row]) for row in rows]
        det = 1
        for m in range(n, 0, -1):  # m rows of m slots left; slot 0 is the current column
            k = next((i for i, r in enumerate(packed) if (r & low) % p), None)
            if k is None:
                return 0
            if k:
                packed[0], packed[k] = packed[k], packed[0]
                det = -det
            data = packed[0].to_bytes(m * width, "little")
            top = [int.from_bytes(data[t * width:(t + 1) * width], "little") % p
                   for t in range(m)]
            det = det * top[0] % p
            inv = pow(top[0], p - 2, p)
            negated = pack([p - v for v in top])  # slot t ≡ −top[t], every slot ≤ p
            rest = []
            for r in packed[1:]:
                f = (r & low) * inv % p
                rest.append((r + f * negated) >> shift if f else r >> shift)
            packed = rest
        return det % p
