"""Which construction and block size for a target: a measured cost model (docs/model.md,
docs/constructions.md).

Theorem 1 solves, per target layer, one Khatri–Rao system of size ``m = d_in·d_out``; its cost
grows like ``m^2.4`` in time and ``m²`` in memory, so a 784 → 128 layer (m = 100,352) is out of
reach. The width/depth trade-off with block size ``k`` solves ``⌈d_in/k⌉`` systems of size
``d_out·k`` instead. The model below estimates time, peak memory, certificate bytes and frozen
depth for both and :func:`choose_construction` picks:

* ``theorem1`` while every layer's system stays within :data:`THEOREM1_MAX_SYSTEM` (the largest
  size measured to finish in minutes: m = 4096, 194 s, 3 GiB on 2 cores);
* otherwise ``tradeoff`` with the block size of least estimated time among those whose draws are
  not structurally singular (below).

Why ``k = 1`` is the usual answer. With ``k = 1`` the system is ``K = V_inᵀ ⊙ V_out =
V_out·diag(v_in)`` (column ``j`` of the Khatri–Rao product is ``v_in[j]·V_out[:, j]``), so
``det K = det V_out · Π_j v_in[j]``: invertible iff ``V_out`` is and no entry of ``v_in`` is 0.
Measured per block at d_out = 128 (float32 784-128-10 MLP, nonzero:8 weights, 2 shared cores,
load ≈ 6): k = 1 0.09 s (Γ 1,345 bits), k = 2 0.36 s (2,562 bits), k = 4 2.25 s (4,924 bits),
k = 8 14.4 s (9,830 bits); on a quiet machine k = 1 takes 0.047 s (912 blocks of the
784-128-10 MLP in 18.4 s with two processes), the constant used below, which also matches
m = 4096 (estimated 220 s, measured 194 s). Total time ``⌈d_in/k⌉·t(128k)`` and certificate bytes
``⌈d_in/k⌉·(128k)·bits`` both grow with ``k``; only the frozen depth ``3⌈d_in/k⌉ + 1`` falls.
So ``k = 1`` wins whenever it is not structurally singular.

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
from dataclasses import dataclass, field
from fractions import Fraction

from exactnorm.errors import LimitExceededError
from exactnorm.exact.sampling import Distribution, parse_distribution
from exactnorm.model.network import TargetNetwork

__all__ = ["Estimate", "Choice", "THEOREM1_MAX_SYSTEM", "SINGULAR_RISK", "system_seconds",
           "human_seconds",
           "estimate_theorem1", "estimate_tradeoff", "estimate_pair", "combined_estimate",
           "choose_construction", "best_block", "zero_probability", "require_theorem1_budget",
           "estimate_channel_blocks", "best_channel_block"]

#: largest Khatri–Rao system Theorem 1 may solve by default (m = 4096: 194 s, 3 GiB, 84 MiB gz)
THEOREM1_MAX_SYSTEM = 4096
#: largest accepted union bound on a structurally singular block draw
SINGULAR_RISK = Fraction(1, 100)
#: block sizes considered by the automatic choice
BLOCK_SIZES = (1, 2, 4, 8, 16, 32, 64)

# Fit of the measured per-system times (module doc): t(m) = T128·(m/128)^EXPONENT seconds, one
# process on a quiet machine (the exponent from the loaded series, the scale from quiet runs).
_T128 = 0.047
_EXPONENT = 2.44
# Γ bits per unknown grow about linearly with m (1,345 bits at 128, 9,830 at 1,024).
_GAMMA_BITS_PER_M = 10.5
# gzip stores a decimal digit of Γ in about 0.45 bytes; a digit carries log10(2) bits' worth
_GZ_BYTES_PER_GAMMA_BIT = 0.45 * math.log10(2)
# a frozen matrix is written by reference: its draw record and layer keys, gzipped
_GZ_BYTES_PER_MATRIX = 60
# peak memory per unknown² of one system (K and the lifting; 3 GiB at m = 4096)
_PEAK_BYTES_PER_M2 = 190
_BASE_BYTES = 300 * 2**20


@dataclass(frozen=True)
class Estimate:
    """Estimated cost of one construction on one target (not certified; a planning aid)."""

    seconds: float
    peak_bytes: int
    certificate_bytes: int
    depth: int
    systems: int
    system_size: int

    def describe(self) -> str:
        return (f"{self.systems} system(s) of size ≤ {self.system_size}, "
                f"≈ {human_seconds(self.seconds)}, "
                f"peak ≈ {self.peak_bytes / 2**30:.1f} GiB, "
                f"certificate ≈ {self.certificate_bytes / 2**20:.0f} MiB gz, "
                f"frozen depth {self.depth}")


@dataclass(frozen=True)
class Choice:
    """The construction chosen for a target and why."""

    name: str
    block: int | None
    estimate: Estimate
    reason: str
    alternatives: dict[str, Estimate] = field(default_factory=dict)


def human_seconds(s: float) -> str:
    """A duration for a summary line.

    >>> human_seconds(42.4), human_seconds(3000), human_seconds(4 * 86400)
    ('42 s', '50 min', '4 days')
    """
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    if s < 2 * 86400:
        return f"{s / 3600:.0f} h"
    return f"{s / 86400:.0f} days"


def system_seconds(m: int) -> float:
    """Estimated seconds for one Khatri–Rao system of size ``m`` (fit of the measurements)."""
    return _T128 * (m / 128) ** _EXPONENT if m else 0.0


def _system_bytes(m: int, matrices: int, gamma_sized_betas: float) -> int:
    """gz bytes of one system's layers: Γ (m entries of about m·10.5 bits), the β vectors as
    long as Γ (``gamma_sized_betas`` of them: 2 for Theorem 1's smallest shifts, 0 for the
    trade-off's integer shifts, whose β are a few digits each) and the draw records."""
    gamma = m * m * _GAMMA_BITS_PER_M * _GZ_BYTES_PER_GAMMA_BIT
    return int(gamma * (1 + gamma_sized_betas) + matrices * _GZ_BYTES_PER_MATRIX)


def estimate_pair(m: int) -> Estimate:
    """Cost of one Khatri–Rao pair of size ``m``: two frozen layers, integer shifts (Theorem 1
    over channels solves one per convolution)."""
    return Estimate(system_seconds(m), _BASE_BYTES + _PEAK_BYTES_PER_M2 * m ** 2,
                    _system_bytes(m, 2, 0), 2, 1, m)


def combined_estimate(parts: list[Estimate]) -> Estimate:
    """The cost of realizing several runs one after the other: times, bytes, depths and systems
    add up; the peak memory and the largest system are the largest of any part.

    >>> combined_estimate([estimate_pair(4), estimate_pair(8)]).system_size
    8
    """
    if not parts:
        return Estimate(0.0, _BASE_BYTES, 0, 0, 0, 0)
    return Estimate(sum(e.seconds for e in parts), max(e.peak_bytes for e in parts),
                    sum(e.certificate_bytes for e in parts), sum(e.depth for e in parts),
                    sum(e.systems for e in parts), max(e.system_size for e in parts))


def estimate_theorem1(target: TargetNetwork, jobs: int = 1) -> Estimate:
    """Cost of Theorem 1: one system of size ``d_in·d_out`` per layer, two layers each."""
    sizes = [d_in * d_out for d_out, d_in in (tl.shape for tl in target.layers)]
    seconds = sum(system_seconds(m) for m in sizes) / min(jobs, len(sizes))
    nbytes = sum(_system_bytes(m, 2, 2) for m in sizes)
    return Estimate(seconds, _BASE_BYTES + _PEAK_BYTES_PER_M2 * max(sizes) ** 2, nbytes,
                    2 * len(sizes), len(sizes), max(sizes))


def estimate_systems(sizes: list[int], jobs: int = 1) -> Estimate:
    """Cost of independent Theorem 1 systems of the given sizes, two frozen layers each (the
    convolutions of a CNN: one system of size ``C·kh·kw·c_out`` per convolution).

    >>> e = estimate_systems([150, 2400])
    >>> e.systems, e.system_size, e.depth
    (2, 2400, 4)
    """
    sizes = [m for m in sizes if m] or [0]
    seconds = sum(system_seconds(m) for m in sizes) / max(1, min(jobs, 2))
    return Estimate(seconds, _BASE_BYTES + _PEAK_BYTES_PER_M2 * max(sizes) ** 2,
                    sum(_system_bytes(m, 2, 0) for m in sizes), 2 * len(sizes), len(sizes),
                    max(sizes))


def estimate_tradeoff(target: TargetNetwork, block: int, jobs: int = 1,
                      routing: str = "selection") -> Estimate:
    """Cost of the trade-off with block size ``block``: ``⌈d_in/k⌉`` systems per layer."""
    seconds = 0.0
    nbytes = 0
    depth = 0
    systems = 0
    largest = 0
    for d_out, d_in in (tl.shape for tl in target.layers):
        k = min(block, d_in)
        T = math.ceil(d_in / k)
        m = d_out * k
        seconds += T * system_seconds(m)
        nbytes += T * _system_bytes(m, 3 if routing == "selection" else 2, 0)
        depth += 2 if T == 1 else (3 * T + 1 if routing == "selection" else 2 * T + 1)
        systems += T
        largest = max(largest, m)
    return Estimate(seconds / jobs, _BASE_BYTES + _PEAK_BYTES_PER_M2 * largest ** 2 * jobs,
                    nbytes, depth, systems, largest)


def estimate_channel_blocks(c_out: int, channels: int, taps: int, block: int) -> Estimate:
    """Cost of a convolution ``channels → c_out`` with ``taps = kh·kw`` realized by channel
    blocks of ``block`` input channels (:mod:`~exactnorm.constructions.convblocks`): ``T =
    ⌈channels/block⌉`` Khatri–Rao systems of size ``c_out·block·taps`` (two frozen layers each)
    and the final ``c_out × c_out`` matrix; depth ``2T + 1``. One block is the plain pair.

    >>> e = estimate_channel_blocks(32, 32, 9, 1)
    >>> e.systems, e.system_size, e.depth
    (32, 288, 65)
    """
    k = min(block, channels)
    T = math.ceil(channels / k)
    m = c_out * k * taps
    if T == 1:
        return estimate_pair(m)
    return Estimate(T * system_seconds(m), _BASE_BYTES + _PEAK_BYTES_PER_M2 * m ** 2,
                    T * _system_bytes(m, 2, 0) + _GZ_BYTES_PER_MATRIX, 2 * T + 1, T, m)


def best_channel_block(c_out: int, channels: int, taps: int, distribution: str | Distribution
                       ) -> tuple[int, Estimate, bool]:
    """Channels per block of least estimated time among those whose draws are not structurally
    singular (the union bound of :func:`best_block` with rows of ``block·taps`` entries).

    Returns ``(block, estimate, admissible)``.

    >>> best_channel_block(32, 32, 9, "nonzero:8")[0]
    1
    """
    q = zero_probability(distribution)
    options = {k: estimate_channel_blocks(c_out, channels, taps, k) for k in BLOCK_SIZES
               if k <= channels}
    admissible = {k: e for k, e in options.items()
                  if e.system_size * q ** (k * taps) <= SINGULAR_RISK}
    pool = admissible or options
    k = min(pool, key=lambda b: (pool[b].seconds, b))
    return k, pool[k], bool(admissible)


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


def _admissible(target: TargetNetwork, block: int, q: Fraction) -> bool:
    return all(d_out * min(block, d_in) * q ** min(block, d_in) <= SINGULAR_RISK
               for d_out, d_in in (tl.shape for tl in target.layers))


def best_block(target: TargetNetwork, distribution: str | Distribution, *,
               jobs: int = 1) -> tuple[int, Estimate, bool, dict[int, Estimate]]:
    """The block size of least estimated time among the admissible ones.

    Returns ``(k, estimate, admissible, estimates by k)``; ``admissible`` is ``False`` when every
    block size risks a structurally singular draw and the fastest overall was taken.
    """
    q = zero_probability(distribution)
    widest = max(tl.shape[1] for tl in target.layers)
    options = {k: estimate_tradeoff(target, k, jobs) for k in BLOCK_SIZES if k <= widest}
    admissible = {k: e for k, e in options.items() if _admissible(target, k, q)}
    pool = admissible or options
    k = min(pool, key=lambda b: (pool[b].seconds, b))
    return k, pool[k], bool(admissible), options


def choose_construction(target: TargetNetwork, distribution: str | Distribution, *,
                        jobs: int = 1, max_system: int = THEOREM1_MAX_SYSTEM) -> Choice:
    """Theorem 1 if every system is within :data:`THEOREM1_MAX_SYSTEM`, else the trade-off with
    the fastest admissible block size (module doc).

    Parameters
    ----------
    target : TargetNetwork
    distribution : str or Distribution
        Entry distribution of the frozen weights (decides which block sizes are admissible).
    jobs : int
        Processes that will solve the systems (scales the time estimate).
    max_system : int
        Largest Khatri–Rao system Theorem 1 may solve (the budget).

    Returns
    -------
    Choice
    """
    t1 = estimate_theorem1(target, jobs)
    if t1.system_size <= max_system:
        return Choice("theorem1", None, t1, f"every system within m ≤ {max_system}")
    k, est, admissible, options = best_block(target, distribution, jobs=jobs)
    why = (f"Theorem 1 needs a system of size {t1.system_size} > {max_system} "
           f"({human_seconds(t1.seconds)} estimated); block size {k} is the fastest")
    why += (" whose draws are not structurally singular" if admissible
            else " (every block size risks a zero row of V_in with this distribution)")
    return Choice("tradeoff", k, est, why,
                  {"theorem1": t1, **{f"tradeoff k={b}": e for b, e in options.items()}})


def require_theorem1_budget(target: TargetNetwork, jobs: int = 1,
                            max_system: int = THEOREM1_MAX_SYSTEM) -> None:
    """Refuse an explicit Theorem 1 beyond :data:`THEOREM1_MAX_SYSTEM`, with the estimate.

    Raises
    ------
    LimitExceededError
        With the estimated time, memory and certificate size (exit code 2), at once.
    """
    t1 = estimate_theorem1(target, jobs)
    if t1.system_size > max_system:
        raise LimitExceededError(
            f"--construction theorem1 would solve a Khatri–Rao system of size {t1.system_size} "
            f"(> {max_system}): {t1.describe()}; use the default choice, "
            f"--construction tradeoff, or raise --max-system")
