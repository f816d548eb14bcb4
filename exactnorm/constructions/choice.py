"""Which construction and block size for a target: the least estimated time among the
constructions whose certificate the checker will accept (docs/model.md, docs/constructions.md).

Theorem 1 solves, per target layer, one Khatri–Rao system of size ``m = d_in·d_out``; the
width/depth trade-off with block size ``k`` solves ``⌈d_in/k⌉`` systems of size ``d_out·k``
instead, and a convolution may be split into channel blocks the same way. For each candidate the
cost model (:mod:`~exactnorm.constructions.costs`) predicts, from the shapes, the frozen entry
distribution and the target's exact entries, what it will build (its footprint: the systems,
the bit length of their solutions, the frozen layers and entries, the bits written), what
the checker will need (its largest structure and its work, against the checker's own limits)
and what it costs (time to build, write and check; peak memory; certificate bytes).
:func:`choose_construction` then picks:

* among Theorem 1 (while every system is within ``max_system``) and the trade-off with every
  block size whose draws are not structurally singular (below), those whose certificate the
  checker will accept (:meth:`~exactnorm.constructions.costs.CheckerForecast.fits`);
* of those, the one of least estimated time for one process (so that the choice, which the
  certificate records, does not depend on the machine's cores) — the first in the order
  Theorem 1, block size 1, 2, 4, … whose estimate is within :data:`PREFERENCE` (25 %) or
  :data:`PREFERENCE_SECONDS` (half a second) of the least (estimates are good to tens of
  percent and a few tenths of a second; a later choice must win clearly).

Theorem 1 is refused by the checker from about d = 52 for a square layer whatever its weights:
its γ have about ``9·d²`` bits (the Hadamard bound of ``det K``) and the checker scales the
``d × d²`` next matrix by them, ``9·d⁵`` bits against its limit of 2³² (a 64 × 64 layer: 64 × 4096
numbers of 41,000 bits). The trade-off with ``k = 1`` is also far faster on wide layers: a
256 → 10 layer is one system of 2,560 unknowns (minutes) or 256 systems of 10 (a second).

Why ``k = 1`` is the usual answer of the trade-off. With ``k = 1`` the system is ``K = V_inᵀ ⊙
V_out = V_out·diag(v_in)`` (column ``j`` of the Khatri–Rao product is ``v_in[j]·V_out[:, j]``),
so ``det K = det V_out · Π_j v_in[j]``: invertible iff ``V_out`` is and no entry of ``v_in`` is
0, and its γ have only ``det V_out``'s bits. Larger ``k`` means ``⌈d_in/k⌉·t(d_out·k)`` time and
bytes growing with ``k``; only the frozen depth ``3⌈d_in/k⌉ + 1`` falls.

Structural singularity. If an entry of the distribution is 0 with probability ``q``, a row of
``V_in`` (``k`` entries) is all zero with probability ``q^k``, and then a column of ``K`` is 0; by
the union bound a block of size ``m = d_out·k`` has such a column with probability at most
``m·q^k``. A block size is admissible when this bound is at most :data:`SINGULAR_RISK`
(``int:8``: q = 1/17, so k = 1 at d_out = 128 is singular with probability ≈ 1, k = 4 with
≤ 0.6%). ``nonzero:B`` has q = 0 and admits ``k = 1``.

Reference: Giannou, Rajput, Papailiopoulos, "The Expressive Power of Tuning Only the
Normalization Layers", COLT 2023 (arXiv 2302.07937), Theorem 1 and the width/depth discussion.

>>> from exactnorm.model.targets import random_target
>>> choose_construction(random_target((4, 3, 2), seed=0), "int:8").name
'theorem1'
>>> wide = choose_construction(random_target((80, 64, 2), seed=0), "nonzero:8")
>>> wide.name, wide.block
('tradeoff', 1)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

from exactnorm.constructions.convblocks import HULL_WORK
from exactnorm.constructions.costs import (
    CheckerForecast,
    EntryLaw,
    Estimate,
    Footprint,
    LayerBits,
    Pair,
    determinant_bits,
    entry_law,
    gamma_bits,
    human_seconds,
)
from exactnorm.errors import LimitExceededError
from exactnorm.exact.sampling import DEFAULT_DISTRIBUTION, Distribution, parse_distribution
from exactnorm.model.network import TargetNetwork

__all__ = ["Estimate", "Choice", "CheckerForecast", "THEOREM1_MAX_SYSTEM", "SINGULAR_RISK",
           "system_seconds", "human_seconds", "estimate_theorem1", "estimate_tradeoff",
           "estimate_pair", "estimate_systems", "combined_estimate", "choose_construction",
           "best_block", "zero_probability", "require_theorem1_budget", "require_checker",
           "estimate_channel_blocks", "best_channel_block", "theorem1_footprint",
           "tradeoff_footprint", "pair_footprint", "channel_blocks_footprint", "layer_bits",
           "choose_channel_blocks"]

#: largest Khatri–Rao system Theorem 1 may solve by default (m = 4096: minutes and GiB; the
#: checker's limits refuse square layers from d ≈ 52 anyway, module doc)
THEOREM1_MAX_SYSTEM = 4096
#: largest accepted union bound on a structurally singular block draw
SINGULAR_RISK = Fraction(1, 100)
#: block sizes considered by the automatic choice
BLOCK_SIZES = (1, 2, 4, 8, 16, 32, 64)
#: bits of an integer activating shift (``shift_mode="integer"``: a few bits, the value of γ
#: times a row of small entries over the box)
_INTEGER_SHIFT_BITS = 24
#: bits a smallest exact shift adds to γ's (the box's denominators and a row's sum)
_EXACT_SHIFT_BITS = 40
#: multiply-adds above which a convolution's block takes the hull of the patch boxes
_HULL_WORK = HULL_WORK


@dataclass(frozen=True)
class Choice:
    """The construction chosen for a target and why."""

    name: str
    block: int | None
    estimate: Estimate
    reason: str
    alternatives: dict[str, Estimate] = field(default_factory=dict)


# ------------------------------------------------------------------ the target's bits

_BITS_CACHE: dict[int, tuple[Any, LayerBits]] = {}


def layer_bits(weight: Any) -> LayerBits:
    """:class:`~exactnorm.constructions.costs.LayerBits` of a weight matrix, computed once per
    matrix object (the plan asks for every candidate)."""
    hit = _BITS_CACHE.get(id(weight))
    if hit is not None and hit[0] is weight:
        return hit[1]
    bits = LayerBits(weight)
    if len(_BITS_CACHE) > 256:
        _BITS_CACHE.clear()
    _BITS_CACHE[id(weight)] = (weight, bits)
    return bits


def _law(distribution: str | Distribution | None) -> EntryLaw:
    return entry_law(distribution if distribution is not None else DEFAULT_DISTRIBUTION)


def _beta_bits(gamma: float, shift_mode: str) -> float:
    return _INTEGER_SHIFT_BITS if shift_mode == "integer" else gamma + _EXACT_SHIFT_BITS


def _target_numbers(target: TargetNetwork) -> tuple[float, int]:
    """Bits and count of the numbers a certificate writes for the target itself."""
    bits, numbers = 0.0, 0
    for layer in target.layers:
        weight = layer.weight  # None for a fixed map (a pooling): nothing written
        if weight is None:
            continue
        n = weight.nrows() * weight.ncols() + len(layer.bias)
        numbers += n
        bits += n * (layer_bits(weight).whole + 1)
    d = len(target.lower)
    return bits + 2 * d * 16, numbers + 2 * d


# ------------------------------------------------------------------ footprints

def pair_footprint(k: int, d_out: int, rhs_bits: float, law: EntryLaw, *, count: int = 1,
                   positions: int = 1, shift_mode: str = "integer",
                   window: float | None = None, spread: float | None = None,
                   masked: float = 0.0) -> Footprint:
    """``count`` Theorem 1 pairs of ``V_in`` m × k and ``V_out`` d_out × m (``m = k·d_out``)
    whose right-hand side has ``rhs_bits`` bits, at ``positions`` output positions. Unless
    given, the activating shift takes the range of every frozen row over every position's box
    (``window`` multiply-adds in FLINT, the ``spread`` of every row's range over the positions
    and the patch boxes handled one by one)."""
    g = gamma_bits(k, d_out, rhs_bits, law)
    m = k * d_out
    if window is None:
        window = float(m * k * positions)
    if spread is None:
        spread = float(m * positions + (2 * k * positions if positions > 1 else 0))
    pair = Pair(k, d_out, count, g, gamma_bits(k, d_out, rhs_bits, law, bound=True),
                _beta_bits(g, shift_mode), positions, law.value_bits, window, spread, masked)
    return Footprint((pair,), entries=count * (m * k + d_out * m), tasks=count,
                     largest_task=1.0 / max(count, 1))


def theorem1_footprint(target: TargetNetwork, distribution: str | Distribution | None = None,
                       shift_mode: str = "neuron") -> Footprint:
    """What Theorem 1 builds for a target of dense layers: one pair per layer."""
    law = _law(distribution)
    bits, numbers = _target_numbers(target)
    out = Footprint(other_bits=bits, other_numbers=numbers, tasks=0, largest_task=0.0)
    for tl in target.layers:
        d_out, d_in = tl.shape
        weight: Any = tl.weight  # a dense layer: checked by the plan
        out = out.plus(pair_footprint(d_in, d_out, layer_bits(weight).whole, law,
                                      shift_mode=shift_mode))
    return replace(out, other_units=out.other_units + _next_boxes(target))


def _next_boxes(target: TargetNetwork) -> float:
    """Checker units of the target's interval boxes (a product over each layer's rows)."""
    return sum(2.0 * tl.shape[0] * tl.shape[1] * 66 for tl in target.layers)


def _blocks(d_out: int, sizes: Sequence[int], block_bits: Sequence[int], law: EntryLaw,
            seen: int, positions: int = 1, patch: int = 0) -> Footprint:
    """The blocks of one layer realized with ``V_F⁻¹ W``: a pair per block (``sizes[t]`` kernel
    columns, right-hand side of ``block_bits[t]`` bits plus ``det V_F``'s, integer shifts), the
    final ``d_out × d_out`` matrix and the identity skips accumulating the blocks' maps over the
    ``seen`` columns of the segment input."""
    det_f = determinant_bits(d_out, law)
    out = Footprint(tasks=0, largest_task=0.0)
    groups: dict[int, list[int]] = {}
    for k, bits in zip(sizes, block_bits):
        groups.setdefault(k, []).append(bits)
    hull = 0.0
    for k, group in groups.items():
        window: float | None = None
        spread: float | None = None
        masked = 0.0
        if patch:
            # a convolution's block: both shifts (the block's channels, then the block's
            # d_out outputs) over every position's patch box, or over their hull (computed
            # once per layer)
            window = spread = 0.0
            for channels in (k * d_out, d_out):
                if positions > 1 and channels * positions * patch > _HULL_WORK:
                    window += channels * patch
                    spread += channels
                    hull = 2.0 * patch * positions
                else:
                    window += channels * patch * positions
                    spread += (channels + 2 * patch) * positions
            masked = 2.0 * k * d_out * patch  # its kernel's structural zeros, checked twice
        m = k * d_out
        stable_at = 1 if patch and positions > 1 and m * positions * patch > _HULL_WORK \
            else positions  # where the checker tests the block's channels
        part = pair_footprint(k, d_out, det_f + sum(group) / len(group) + 8, law,
                              count=len(group), positions=stable_at, window=window,
                              spread=spread, masked=masked)
        worst = gamma_bits(k, d_out, det_f + max(group) + 8, law, bound=True)
        out = out.plus(replace(part, pairs=(replace(part.pairs[0], gamma_bound=worst,
                                                    out_stable=d_out),)))
    T = len(sizes)
    acc_bits = det_f + max(block_bits) + 16
    acc_words = math.ceil(acc_bits / 64)
    # block t adds a map of d_out rows over the columns seen so far (a sum and its reduction);
    # the final matrix composes d_out × d_out with the accumulated map
    units = (d_out * (seen * T / 2 + T) * 4 + d_out * d_out * (seen + 1)) * (64 + acc_words)
    return replace(out, extra_layers=1, entries=out.entries + d_out * d_out, hull=hull,
                   other_bits=d_out * (_INTEGER_SHIFT_BITS + 1), other_numbers=d_out,
                   other_units=units,
                   other_structure=(d_out, seen, acc_bits, "the accumulated map of the blocks"))


def tradeoff_footprint(target: TargetNetwork, block: int,
                       distribution: str | Distribution | None = None,
                       routing: str = "selection", shift_mode: str = "integer") -> Footprint:
    """What the width/depth trade-off with block size ``block`` builds for a dense target."""
    law = _law(distribution)
    bits, numbers = _target_numbers(target)
    out = Footprint(other_bits=bits, other_numbers=numbers, tasks=0, largest_task=0.0)
    for tl in target.layers:
        d_out, d_in = tl.shape
        k = min(block, d_in)
        lb = layer_bits(tl.weight)  # a dense layer
        if k >= d_in:
            out = out.plus(pair_footprint(d_in, d_out, lb.whole, law, shift_mode=shift_mode))
            continue
        T = math.ceil(d_in / k)
        part = _blocks(d_out, [min(k, d_in - t * k) for t in range(T)], lb.blocks(k), law,
                       d_in)
        if routing == "selection":
            # a routing layer per block: a drawn k × d_in matrix with γ = β = 0 and a selection
            part = replace(part, extra_layers=part.extra_layers + T,
                           entries=part.entries + T * k * d_in,
                           other_bits=part.other_bits + T * (2 * k * 2 + 8 * k),
                           other_numbers=part.other_numbers + 2 * T * k)
        out = out.plus(part)
    return replace(out, other_units=out.other_units + _next_boxes(target))


def channel_blocks_footprint(c_out: int, channels: int, taps: int, block: int, weight: Any,
                             positions: int, distribution: str | Distribution | None = None
                             ) -> Footprint:
    """A convolution ``channels → c_out`` (``taps = kh·kw``) realized by blocks of ``block``
    input channels (one block of every channel: the plain pair)."""
    law = _law(distribution)
    lb = layer_bits(weight) if weight is not None else None
    patch = channels * taps
    k = min(block, channels)
    next_box = 2.0 * c_out * patch * positions * 66  # the target's box over every position
    if k >= channels:
        plain = pair_footprint(patch, c_out, lb.whole if lb else 32, law, positions=positions)
        return replace(plain, other_units=next_box)
    block_bits = lb.channel_blocks(channels, taps, k) if lb else [32] * math.ceil(channels / k)
    T = len(block_bits)
    sizes = [(min(k, channels - t * k)) * taps for t in range(T)]
    part = _blocks(c_out, sizes, block_bits, law, patch, positions=positions, patch=patch)
    # a masked kernel is drawn over every column of the patch
    return replace(part, entries=part.entries + sum(c_out * s * (patch - s) for s in sizes),
                   other_units=part.other_units + next_box)


# ------------------------------------------------------------------ estimates

def _one_pair_estimate(m: int, k: int | None = None, d_out: int | None = None,
                       rhs_bits: float = 32, distribution: str | Distribution | None = None,
                       positions: int = 1) -> Estimate:
    if k is None or d_out is None:
        d_out = max(1, math.isqrt(m))
        k = max(1, m // d_out)
    return pair_footprint(k, d_out, rhs_bits, _law(distribution), positions=positions).estimate()


def system_seconds(m: int) -> float:
    """Estimated seconds to build, write and check one square Khatri–Rao pair of ``m``
    unknowns (entries of 32 bits on the right-hand side)."""
    return _one_pair_estimate(m).seconds if m else 0.0


def estimate_pair(m: int, *, k: int | None = None, d_out: int | None = None,
                  rhs_bits: float = 32, distribution: str | Distribution | None = None,
                  positions: int = 1) -> Estimate:
    """Cost of one Khatri–Rao pair of size ``m`` (``k`` columns of ``V_in``, ``d_out`` rows of
    ``V_out``; square when not given): two frozen layers, integer shifts (Theorem 1 over
    channels solves one per convolution)."""
    return _one_pair_estimate(m, k, d_out, rhs_bits, distribution, positions)


def combined_estimate(parts: list[Estimate]) -> Estimate:
    """The cost of realizing several runs one after the other: their footprints together
    (times, bytes, depths and systems add up; the peak memory follows the largest system).

    >>> combined_estimate([estimate_pair(4), estimate_pair(8)]).system_size
    8
    """
    if not parts:
        return Footprint(tasks=0, largest_task=0.0).estimate()
    footprints = [e.footprint for e in parts if e.footprint is not None]
    fp = footprints[0] if footprints else Footprint(tasks=0, largest_task=0.0)
    for other in footprints[1:]:
        fp = fp.plus(other)
    est = fp.estimate()
    rest = sum(e.seconds for e in parts if e.footprint is None)  # estimated elsewhere
    return replace(est, seconds=est.seconds + rest, check_seconds=est.check_seconds + rest,
                   depth=sum(e.depth for e in parts))


def estimate_theorem1(target: TargetNetwork, jobs: int = 1,
                      distribution: str | Distribution | None = None,
                      shift_mode: str = "neuron") -> Estimate:
    """Cost of Theorem 1: one system of size ``d_in·d_out`` per layer, two layers each
    (``jobs`` is accepted for compatibility: :meth:`Estimate.wall` spreads the work)."""
    return theorem1_footprint(target, distribution, shift_mode).estimate()


def estimate_systems(sizes: list[int], jobs: int = 1) -> Estimate:
    """Cost of independent square Theorem 1 systems of the given sizes, two frozen layers each.

    >>> e = estimate_systems([150, 2400])
    >>> e.systems, e.system_size, e.depth
    (2, 2400, 4)
    """
    return combined_estimate([estimate_pair(m) for m in sizes if m] or [estimate_pair(0)])


def estimate_tradeoff(target: TargetNetwork, block: int, jobs: int = 1,
                      routing: str = "selection",
                      distribution: str | Distribution | None = None) -> Estimate:
    """Cost of the trade-off with block size ``block``: ``⌈d_in/k⌉`` systems per layer."""
    return tradeoff_footprint(target, block, distribution, routing).estimate()


def estimate_channel_blocks(c_out: int, channels: int, taps: int, block: int, *,
                            weight: Any = None, positions: int = 1,
                            distribution: str | Distribution | None = None) -> Estimate:
    """Cost of a convolution ``channels → c_out`` with ``taps = kh·kw`` realized by channel
    blocks of ``block`` input channels (:mod:`~exactnorm.constructions.convblocks`): ``T =
    ⌈channels/block⌉`` Khatri–Rao systems of size ``c_out·block·taps`` (two frozen layers each)
    and the final ``c_out × c_out`` matrix; depth ``2T + 1``. One block is the plain pair.

    >>> e = estimate_channel_blocks(32, 32, 9, 1)
    >>> e.systems, e.system_size, e.depth
    (32, 288, 65)
    """
    return channel_blocks_footprint(c_out, channels, taps, block, weight, positions,
                                    distribution).estimate()


# ------------------------------------------------------------------ choices

#: a construction later in the order of preference (Theorem 1, then the trade-off or channel
#: blocks with block size 1, 2, 4, …) is chosen only when it is estimated faster than every
#: earlier one by this factor and by :data:`PREFERENCE_SECONDS`: estimates are good to tens of
#: percent and a few tenths of a second, and the earlier ones are the simpler certificates
PREFERENCE = 1.25
PREFERENCE_SECONDS = 0.5


def _within(seconds: float, best: float) -> bool:
    return seconds <= max(PREFERENCE * best, best + PREFERENCE_SECONDS)


def _preferred(seconds: dict[Any, float], order: Sequence[Any]) -> Any:
    """The first of ``order`` within :data:`PREFERENCE` (or :data:`PREFERENCE_SECONDS`) of
    the fastest."""
    best = min(seconds.values())
    return next(c for c in order if c in seconds and _within(seconds[c], best))


def zero_probability(dist: str | Distribution) -> Fraction:
    """Probability that one frozen entry is 0 (exact; an upper bound for ``gauss``)."""
    d = parse_distribution(dist)
    if d.law == "nonzero":
        return Fraction(0)
    if d.law == "set":
        return Fraction(sum(1 for v in d.values if v == 0), len(d.values))
    if d.law in ("int", "rational"):
        return Fraction(1, 2 * d.param + 1)
    if d.law == "bits":
        return Fraction(1, 2 ** (d.param + 1) + 1)
    return Fraction(1)  # gauss: no closed form here, never assume zero-free


def best_channel_block(c_out: int, channels: int, taps: int, distribution: str | Distribution,
                       *, weight: Any = None, positions: int = 1, largest: int | None = None
                       ) -> tuple[int, Estimate, bool]:
    """Channels per block of least estimated time among those whose draws are not structurally
    singular (the union bound of :func:`best_block` with rows of ``block·taps`` entries) and
    whose certificate the checker accepts.

    Returns ``(block, estimate, admissible)``.

    >>> best_channel_block(32, 32, 9, "nonzero:8")[0]
    1
    """
    q = zero_probability(distribution)
    top = channels if largest is None else max(1, largest)
    options = {k: estimate_channel_blocks(c_out, channels, taps, k, weight=weight,
                                          positions=positions, distribution=distribution)
               for k in BLOCK_SIZES if k < top}
    options[top] = estimate_channel_blocks(c_out, channels, taps, top, weight=weight,
                                           positions=positions, distribution=distribution)
    admissible = {k: e for k, e in options.items()
                  if e.system_size * q ** (min(k, channels) * taps) <= SINGULAR_RISK}
    pool = admissible or options
    accepted = {k: e for k, e in pool.items()
                if e.checker is None or e.checker.fits_structures} or pool
    k = _preferred({b: e.seconds for b, e in accepted.items()}, sorted(accepted))
    return k, accepted[k], bool(admissible)


def _admissible(target: TargetNetwork, block: int, q: Fraction) -> bool:
    return all(d_out * min(block, d_in) * q ** min(block, d_in) <= SINGULAR_RISK
               for d_out, d_in in (tl.shape for tl in target.layers))


def best_block(target: TargetNetwork, distribution: str | Distribution, *,
               jobs: int = 1, max_system: int | None = None
               ) -> tuple[int, Estimate, bool, dict[int, Estimate]]:
    """The block size of least estimated time among the admissible ones whose systems are
    within ``max_system`` and whose certificate the checker will accept (if none is accepted,
    the fastest admissible one: the caller refuses it with the checker's reason).

    Returns ``(k, estimate, admissible, estimates by k)``; ``admissible`` is ``False`` when every
    block size risks a structurally singular draw and the fastest overall was taken.
    """
    q = zero_probability(distribution)
    widest = max(tl.shape[1] for tl in target.layers)
    # block sizes below the widest input: from there on every layer is one Theorem 1 pair
    options = {k: estimate_tradeoff(target, k, distribution=distribution)
               for k in BLOCK_SIZES if k == 1 or k < widest}
    if max_system is not None:
        # block size 1 always stays: its systems are as small as the trade-off makes them
        options = {k: e for k, e in options.items() if k == 1 or e.system_size <= max_system}
    admissible = {k: e for k, e in options.items() if _admissible(target, k, q)}
    pool = admissible or options
    accepted = {k: e for k, e in pool.items()
                if e.checker is None or e.checker.fits_structures} or pool
    k = _preferred({b: e.seconds for b, e in accepted.items()}, sorted(accepted))
    return k, accepted[k], bool(admissible), options


def choose_construction(target: TargetNetwork, distribution: str | Distribution, *,
                        jobs: int = 1, max_system: int = THEOREM1_MAX_SYSTEM) -> Choice:
    """The construction of least estimated time among Theorem 1 (every system within
    ``max_system``) and the trade-off's admissible block sizes, whose certificate the checker
    will accept (module doc).

    Parameters
    ----------
    target : TargetNetwork
    distribution : str or Distribution
        Entry distribution of the frozen weights (decides which block sizes are admissible and
        the bit sizes).
    jobs : int
        Accepted for compatibility; the choice compares one-process estimates, so that the
        certificate, which records it, is the same on every machine.
    max_system : int
        Largest Khatri–Rao system Theorem 1 may solve (the budget).

    Returns
    -------
    Choice
    """
    t1 = estimate_theorem1(target, distribution=distribution)
    k, est, admissible, options = best_block(target, distribution, max_system=max_system)
    alternatives = {"theorem1": t1, **{f"tradeoff k={b}": e for b, e in options.items()}}
    assert t1.checker is not None and est.checker is not None
    t1_allowed = t1.system_size <= max_system and t1.checker.fits_structures
    if t1_allowed and (_within(t1.seconds, est.seconds) or not est.checker.fits_structures):
        return Choice("theorem1", None, t1, f"every system within m ≤ {max_system}",
                      alternatives)
    if not est.checker.fits_structures:
        raise LimitExceededError(
            f"no construction of this target stays within the checker's limits: the "
            f"trade-off with block size {k}: {est.checker.refusal()}"
            + ("" if t1.system_size > max_system else
               f"; Theorem 1: {t1.checker.refusal()}"), parameter="construction")
    singular = (" whose draws are not structurally singular" if admissible
                else " (every block size risks a zero row of V_in with this distribution)")
    if t1.system_size > max_system:
        why = (f"Theorem 1 needs a system of size {t1.system_size} > {max_system} "
               f"({human_seconds(t1.seconds)} estimated); block size {k} is the fastest"
               + singular)
    elif not t1.checker.fits_structures:
        why = (f"Theorem 1's certificate would be refused by the checker "
               f"({t1.checker.refusal()}); block size {k} is the fastest" + singular)
    else:
        why = (f"Theorem 1 is estimated at {human_seconds(t1.seconds)}, block size {k} at "
               f"{human_seconds(est.seconds)}, the fastest" + singular)
    return Choice("tradeoff", k, est, why, alternatives)


def require_theorem1_budget(target: TargetNetwork, jobs: int = 1,
                            max_system: int = THEOREM1_MAX_SYSTEM,
                            distribution: str | Distribution | None = None) -> None:
    """Refuse an explicit Theorem 1 beyond :data:`THEOREM1_MAX_SYSTEM`, or one whose certificate
    the checker would refuse, with the estimate.

    Raises
    ------
    LimitExceededError
        With the estimated time, memory and certificate size (exit code 2), at once.
    """
    t1 = estimate_theorem1(target, distribution=distribution)
    if t1.system_size > max_system:
        raise LimitExceededError(
            f"--construction theorem1 would solve a Khatri–Rao system of size {t1.system_size} "
            f"(> {max_system}): {t1.describe()}; use the default choice, "
            f"--construction tradeoff, or raise --max-system")
    require_checker(t1, "construction theorem1", "construction auto or tradeoff")


def require_checker(estimate: Estimate, what: str, instead: str, *, whole: bool = True) -> None:
    """Refuse at once a construction whose certificate the checker would refuse (rule
    ``limit``), naming what works instead. ``whole=False`` for a part of a network: its
    structures only (the work budget is the whole certificate's).

    Raises
    ------
    LimitExceededError
        (exit code 2) before any work.
    """
    forecast = estimate.checker
    if forecast is not None and not (forecast.fits if whole else forecast.fits_structures):
        raise LimitExceededError(
            f"{what} would write a certificate the checker refuses (rule limit): "
            f"{forecast.refusal()}; use {instead}", parameter="construction")


def choose_channel_blocks(c_out: int, channels: int, taps: int, *, weight: Any,
                          positions: int, distribution: str | Distribution,
                          max_system: int = THEOREM1_MAX_SYSTEM,
                          block: int | None = None) -> tuple[str, int, Estimate, str]:
    """Plain Theorem 1 over channels (one pair) or channel blocks for a convolution
    ``channels → c_out`` with ``taps = kh·kw`` kernel positions at ``positions`` output
    positions: the least estimated time among the plain pair (while its system
    ``c_out·channels·taps`` is within ``max_system``) and the admissible block sizes, whose
    certificate the checker will accept. ``block`` (input channels per block) overrides.

    Returns ``(mode, block, estimate, why)`` with ``mode`` ``"plain"`` or ``"blocks"``.

    Raises
    ------
    LimitExceededError
        When no choice stays within the checker's limits (before any work).

    >>> choose_channel_blocks(32, 32, 9, weight=None, positions=16,
    ...                       distribution="nonzero:8")[:2]
    ('blocks', 1)
    """
    m = c_out * channels * taps
    plain = estimate_channel_blocks(c_out, channels, taps, channels, weight=weight,
                                    positions=positions, distribution=distribution)
    if block is not None:
        k = min(block, channels)
        est = estimate_channel_blocks(c_out, channels, taps, k, weight=weight,
                                      positions=positions, distribution=distribution)
        require_checker(est, f"a convolution in blocks of {k} channel(s)",
                        "a smaller block or the automatic choice", whole=False)
        return ("plain" if k >= channels else "blocks"), k, est, f"block {block} given"
    k, est, admissible = best_channel_block(c_out, channels, taps, distribution, weight=weight,
                                            positions=positions, largest=channels - 1)
    assert plain.checker is not None and est.checker is not None
    plain_ok = m <= max_system and plain.checker.fits_structures
    if plain_ok and (_within(plain.seconds, est.seconds) or not est.checker.fits_structures
                     or k >= channels):
        return "plain", channels, plain, f"m = {m} ≤ max_system {max_system}, the fastest"
    if not est.checker.fits_structures:
        raise LimitExceededError(
            f"no realization of this {channels} → {c_out} convolution stays within the "
            f"checker's limits: {est.checker.refusal()}", parameter="block")
    if m > max_system:
        why = (f"Theorem 1 needs m = {m} > max_system {max_system} "
               f"(≈ {human_seconds(plain.seconds)})")
    elif not plain.checker.fits_structures:
        why = ("Theorem 1's certificate would be refused by the checker "
               f"({plain.checker.refusal()})")
    else:
        why = f"Theorem 1 (m = {m}) is estimated at {human_seconds(plain.seconds)}"
    why += (f"; {k} channel(s) per block is the fastest"
            + ("" if admissible else " (every size risks a zero row)"))
    return "blocks", k, est, why
