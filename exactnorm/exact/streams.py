"""The one registry of random stream keys: which frozen matrix draws from which stream.

Contract. Every frozen random matrix (and mask) of a construction draws from the stream
``(seed, key)`` of :mod:`exactnorm.exact.generator` with ``key = StreamKey(...).key``, a tuple
``(target_layer, block, part, attempt)`` of non-negative integers. Two different matrices of one
certificate get different keys, for any number of layers and blocks; a key decodes back to the
matrix it names (:meth:`StreamKey.from_key`, :meth:`StreamKey.describe`), so messages name the
true target layer and block.

Correctness argument. The map ``StreamKey → tuple`` is injective (it *is* the tuple of fields),
and the generator hashes the decimal key parts separated by commas, so different tuples give
different streams; nothing is packed arithmetically (the former ``1000·layer + part`` keys
collided from 999 blocks on). ``block`` numbers sub-systems within a target layer: ``0`` for a
layer's single Theorem-1 pair and the trade-off's final matrix, ``1 … T`` for trade-off input
blocks, ``1`` and ``2`` for the low-rank ``P`` and ``U`` pairs.

Reference: Giannou, Rajput, Papailiopoulos, "The Expressive Power of Tuning Only the
Normalization Layers", COLT 2023, arXiv:2302.07937 (Theorem 1: a fresh random pair per layer).

>>> k = StreamKey(target_layer=3, block=1001, part=Part.PAIR_OUT, attempt=2)
>>> k.key
(3, 1001, 1, 2)
>>> StreamKey.from_key(k.key).describe()
'target layer 3, block 1001, second matrix of the pair, attempt 2'
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, replace

from exactnorm.errors import InputError

__all__ = ["Part", "StreamKey", "LOWRANK_P", "LOWRANK_U", "WHOLE_LAYER"]

#: ``block`` of a target layer realized by one pair (Theorem 1) and of the trade-off's ``V_F``
WHOLE_LAYER = 0
#: ``block`` of the low-rank construction's first (``P``) and second (``U``) pair
LOWRANK_P, LOWRANK_U = 1, 2


class Part(enum.IntEnum):
    """Which matrix of a (target layer, block) a stream draws."""

    PAIR_IN = 0  # V_in (m × d_in): first matrix of a Khatri–Rao pair
    PAIR_OUT = 1  # V_out (d_out × m): second matrix of the pair
    MASK_IN = 2  # Bernoulli mask of V_in (sparse frozen weights)
    MASK_OUT = 3  # Bernoulli mask of V_out
    FINAL = 4  # the trade-off's final mixing matrix V_F (d_out × d_out)
    ROUTING = 5  # a trade-off routing layer's frozen V (its γ = β = 0)
    PRIME = 6  # the witness prime of a system (not a frozen matrix)
    SKIP = 7  # a random frozen skip matrix (test networks of exactnorm.strategies)


_DESCRIPTION = {
    Part.PAIR_IN: "first matrix of the pair",
    Part.PAIR_OUT: "second matrix of the pair",
    Part.MASK_IN: "mask of the first matrix",
    Part.MASK_OUT: "mask of the second matrix",
    Part.FINAL: "final mixing matrix",
    Part.ROUTING: "routing matrix",
    Part.PRIME: "witness prime",
    Part.SKIP: "random skip matrix",
}


@dataclass(frozen=True)
class StreamKey:
    """The stream of one frozen matrix: ``(target_layer, block, part, attempt)``.

    Parameters
    ----------
    target_layer
        The target layer realized (from 1).
    block
        Sub-system within the layer (see the module doc); ``0`` when there is one.
    part
        Which matrix (:class:`Part`).
    attempt
        Redraw number after singular draws (from 0).
    """

    target_layer: int
    block: int
    part: Part
    attempt: int = 0

    def __post_init__(self) -> None:
        for name in ("target_layer", "block", "attempt"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InputError(f"stream key {name} must be a non-negative integer, "
                                 f"got {value!r}")
        object.__setattr__(self, "part", Part(self.part))

    @property
    def key(self) -> tuple[int, int, int, int]:
        """The tuple hashed by the generator."""
        return (self.target_layer, self.block, int(self.part), self.attempt)

    def with_part(self, part: Part) -> StreamKey:
        """The same layer, block and attempt, another matrix."""
        return replace(self, part=part)

    def with_attempt(self, attempt: int) -> StreamKey:
        """The same matrix, redrawn."""
        return replace(self, attempt=attempt)

    @classmethod
    def from_key(cls, key: Sequence[int]) -> StreamKey:
        """Decode a key tuple (e.g. from a draw record).

        Raises
        ------
        InputError
            When ``key`` is not four non-negative integers with a known part.
        """
        if len(key) != 4:
            raise InputError(f"a construction stream key has 4 parts, got {list(key)!r:.80}")
        layer, block, part, attempt = key
        try:
            named = Part(part)
        except ValueError:
            raise InputError(f"unknown stream part {part!r} in key {list(key)!r:.80}") from None
        return cls(layer, block, named, attempt)

    def where(self) -> str:
        """``"target layer i"`` or ``"target layer i, block t"`` (for messages)."""
        if self.block == WHOLE_LAYER:
            return f"target layer {self.target_layer}"
        return f"target layer {self.target_layer}, block {self.block}"

    def describe(self) -> str:
        """Human-readable name of the stream."""
        return f"{self.where()}, {_DESCRIPTION[self.part]}, attempt {self.attempt}"
