"""The one registry of random stream keys: the key of a frozen matrix is its position.

Contract. Every frozen random matrix (and mask) of a construction draws from the stream
``(seed, key)`` of :mod:`exactnorm.exact.generator` with ``key = StreamKey(...).key``, the tuple
``(segment, offset, role, attempt)`` that the certificate format fixes (docs/certificate-format.md
§4): ``segment`` is the target layer the matrix helps realize (from 1), ``offset`` the position of
its frozen layer inside that segment (from 1), ``role`` which matrix of the layer it is
(:data:`WEIGHT` 0, its Bernoulli mask 1, skip ``t``: :func:`skip_role`, its mask the next role)
and ``attempt`` the redraw number after singular draws (from 0). The checker recomputes the first
three parts from the document's structure and refuses any other key, so a writer cannot choose a
key; the attempt counts only with proofs that the earlier attempts were singular, and only for a
unit that is not singular by construction (:func:`exactnorm.exact.generator.redraw_refusal`; the
checker's rule ``redraw``).

Correctness argument. Two different matrices of one certificate have different positions, hence
different keys, for any number of layers; the generator hashes the decimal key parts separated by
commas, so different tuples give different streams. A construction knows where each frozen layer
it draws will stand: Theorem 1 puts a layer's pair at offsets 1 and 2, the trade-off's block
``t`` at offsets ``3t − 2 … 3t`` (routing layer, then the pair; ``2t − 1, 2t`` with masked routing)
and its final matrix last, the low-rank construction its two pairs at offsets 1–2 and 3–4.

Reference: Giannou, Rajput, Papailiopoulos, "The Expressive Power of Tuning Only the
Normalization Layers", COLT 2023, arXiv:2302.07937 (Theorem 1: a fresh random pair per layer).

>>> k = StreamKey(segment=3, offset=4, attempt=2)
>>> k.key, k.mask_key, k.next_layer().key
((3, 4, 0, 2), (3, 4, 1, 2), (3, 5, 0, 2))
>>> StreamKey.from_key((3, 4, 2, 0)).describe()
'target layer 3, layer 4 of its segment, skip 0, attempt 0'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from exactnorm.errors import InputError

__all__ = ["StreamKey", "WEIGHT", "skip_role", "role_name", "PRIME_ROLE"]

#: role of a layer's own frozen weight; ``role + 1`` is its Bernoulli mask
WEIGHT = 0
#: the role of a system's witness prime stream (never a frozen matrix, never in a certificate)
PRIME_ROLE = 2**31 - 1


def skip_role(t: int) -> int:
    """The role of skip ``t`` (0-based) of a layer; ``skip_role(t) + 1`` is its mask."""
    return 2 + 2 * t


def role_name(role: int) -> str:
    """``weight``, ``skip t``, with ``mask`` for the odd roles.

    >>> role_name(0), role_name(1), role_name(4), role_name(5)
    ('weight', 'weight mask', 'skip 1', 'skip 1 mask')
    """
    if role == PRIME_ROLE:
        return "witness prime"
    base = "weight" if role < 2 else f"skip {(role - 2) // 2}"
    return base if role % 2 == 0 else f"{base} mask"


@dataclass(frozen=True)
class StreamKey:
    """The stream of one frozen matrix: ``(segment, offset, role, attempt)``.

    Parameters
    ----------
    segment
        The target layer realized (from 1).
    offset
        Position of the frozen layer inside the segment (from 1).
    role
        Which matrix of that layer (:data:`WEIGHT`, :func:`skip_role`; a mask is ``role + 1``).
    attempt
        Redraw number after singular draws (from 0).
    """

    segment: int
    offset: int
    role: int = WEIGHT
    attempt: int = 0

    def __post_init__(self) -> None:
        for name in ("segment", "offset", "role", "attempt"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InputError(f"stream key {name} must be a non-negative integer, "
                                 f"got {value!r}")

    @property
    def key(self) -> tuple[int, int, int, int]:
        """The tuple hashed by the generator."""
        return (self.segment, self.offset, self.role, self.attempt)

    @property
    def mask_key(self) -> tuple[int, int, int, int]:
        """The key of this matrix's Bernoulli mask (same position and attempt, role + 1)."""
        return (self.segment, self.offset, self.role + 1, self.attempt)

    @property
    def prime_key(self) -> tuple[int, int, int, int]:
        """The stream of the witness prime of the system this matrix starts."""
        return (self.segment, self.offset, PRIME_ROLE, self.attempt)

    def next_layer(self) -> StreamKey:
        """The weight of the next frozen layer of the segment, same attempt (a pair's second
        matrix)."""
        return replace(self, offset=self.offset + 1, role=WEIGHT)

    def with_attempt(self, attempt: int) -> StreamKey:
        """The same matrix, redrawn."""
        return replace(self, attempt=attempt)

    @classmethod
    def from_key(cls, key: Sequence[int]) -> StreamKey:
        """Decode a key tuple (e.g. from a draw record).

        Raises
        ------
        InputError
            When ``key`` is not four non-negative integers.
        """
        if len(key) != 4:
            raise InputError(f"a stream key has 4 parts, got {list(key)!r:.80}")
        return cls(*key)

    def where(self) -> str:
        """``"target layer i, layer k of its segment"`` (for messages)."""
        return f"target layer {self.segment}, layer {self.offset} of its segment"

    def describe(self) -> str:
        """Human-readable name of the stream."""
        return f"{self.where()}, {role_name(self.role)}, attempt {self.attempt}"
