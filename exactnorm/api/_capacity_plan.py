"""``capacity --dry-run``: the sizes of the work :func:`exactnorm.api.capacity` would do, and a
rough estimate of its time, memory and document size, without computing any rank; and
:func:`rounding_hint`, the note of a target that is the given network up to float rounding.

Contract
--------
:func:`plan_capacity` reads the given network (and the target, when given) exactly as
:func:`~exactnorm.api.capacity` does, then for each pair of consecutive linear layers
``c0 → c1 → c2`` states the Khatri–Rao matrix ``K`` whose rank the profile computes
(``c2·c0`` rows, ``c1`` columns) and, with a target, the decision's system of the same shape
with the target's ``c2`` output columns beside it. Nothing is decided.

The estimate (a planning aid, not certified) counts ``rows · columns · min(rows, columns)``
64-bit word operations per modular rank (Gaussian elimination modulo a prime), the profile one
per pair and the decision two, at :data:`WORD_OPERATIONS_PER_SECOND` (measured on the 2-core
benchmark machine: 64 → 256 → 10, a ``640 × 256`` matrix, 0.4 s); the document stores every
given and target entry, about :data:`DOCUMENT_BYTES_PER_ENTRY` bytes each for float32 weights
(measured: 250,873 bytes for 18,944 given entries).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from flint import fmpq

from exactnorm.analysis.capacity import linked_pairs
from exactnorm.api._capacity import read_target
from exactnorm.api._targets import frozen_of
from exactnorm.errors import ExactnormError
from exactnorm.exact.rationals import DEFAULT_MAX_DIGITS
from exactnorm.model.batchnorm import as_target
from exactnorm.model.box import Box
from exactnorm.model.network import DEFAULT_MAX_WIDTH
from exactnorm.model.operators.dense import dense_frozen

__all__ = ["CapacityPlan", "plan_capacity", "rounding_hint", "ROUNDING_BITS",
           "WORD_OPERATIONS_PER_SECOND", "DOCUMENT_BYTES_PER_ENTRY"]

#: modular elimination throughput of the capacity verb (FLINT, measured; a planning aid)
WORD_OPERATIONS_PER_SECOND = 1.0e8
#: bytes of the document per stored exact entry (float32 weights as dyadic rationals)
DOCUMENT_BYTES_PER_ENTRY = 14
#: memory of the process before any matrix (the imports)
BASE_BYTES = 150 * 2**20


@dataclass(frozen=True)
class CapacityPlan:
    """What :func:`plan_capacity` found: the given network's ``widths``, one row per pair
    (``pair``, ``c0``, ``c1``, ``c2``, the ``rows``/``columns`` of ``K`` and the ``needed`` rank
    of a universal pair), the target's widths (``None`` without one) and the estimate."""

    network: str
    widths: tuple[int, ...]
    pairs: list[dict[str, int]] = field(default_factory=list)
    target_widths: tuple[int, ...] | None = None
    seconds: float = 0.0
    peak_bytes: int = 0
    document_bytes: int = 0

    def lines(self) -> list[str]:
        """What ``capacity --dry-run`` prints."""
        out = [f"plan for {self.network}: given widths {'-'.join(map(str, self.widths))}"
               + ("" if self.target_widths is None else
                  f", target widths {'-'.join(map(str, self.target_widths))}")]
        for row in self.pairs:
            out.append(f"  pair {row['pair']}-{row['pair'] + 1} ({row['c0']} → {row['c1']} → "
                       f"{row['c2']}): K is {row['rows']} × {row['columns']}, universal needs "
                       f"rank {row['needed']}")
        what = "profile and decision" if self.target_widths is not None else "profile"
        out.append(f"estimated ({what}): ≈ {self.seconds:.1f} s, peak memory ≈ "
                   f"{self.peak_bytes / 2**30:.2f} GiB"
                   + ("" if self.target_widths is None else
                      f", document ≈ {self.document_bytes / 2**20:.1f} MiB"))
        out.append("nothing was computed (--dry-run): the same command without --dry-run does "
                   "this work")
        return out

    def as_dict(self) -> dict[str, Any]:
        return {"network": self.network, "widths": list(self.widths), "pairs": self.pairs,
                "target_widths": None if self.target_widths is None
                else list(self.target_widths),
                "estimate": {"seconds": self.seconds, "peak_bytes": self.peak_bytes,
                             "document_bytes": self.document_bytes}}


def plan_capacity(frozen: Any, *, box: Any = None,
                  box_file: str | os.PathLike[str] | None = None,
                  box_from_data: str | os.PathLike[str] | None = None, target: Any = None,
                  activations: str | Sequence[str] | None = None,
                  target_activations: str | Sequence[str] | None = None,
                  max_width: int = DEFAULT_MAX_WIDTH,
                  max_digits: int = DEFAULT_MAX_DIGITS) -> CapacityPlan:
    """The plan of :func:`exactnorm.api.capacity` with the same arguments (module doc): the
    inputs are read and refused as there, nothing is computed.

    Examples
    --------
    >>> from exactnorm.model.network import TargetNetwork
    >>> frozen = TargetNetwork.from_lists([[[1, 0], [0, 1], [1, 1]], [[1, 1, 1]]],
    ...                                   [[0, 0, 0], [0]], lower=[0, 0], upper=[1, 1])
    >>> plan_capacity(frozen).pairs
    [{'pair': 1, 'c0': 2, 'c1': 3, 'c2': 1, 'rows': 2, 'columns': 3, 'needed': 2}]
    """
    net = frozen_of(frozen, activations=activations, max_width=max_width,
                    max_digits=max_digits)
    region = Box.given(box=box, box_file=box_file, box_from_data=box_from_data,
                       max_digits=max_digits)
    if region is not None:
        region = region.fit(net.input_dim, what="the given network's input")
    g = None if target is None else read_target(target, region, target_activations,
                                                max_width, max_digits)
    weights = [layer.weight for layer in dense_frozen(net.layers, "capacity")]
    widths = (net.input_dim, *(W.nrows() for W in weights))
    pairs, work, peak = [], 0.0, 0
    for j in linked_pairs(net):
        c0, c1, c2 = weights[j - 1].ncols(), weights[j - 1].nrows(), weights[j].nrows()
        rows, cols = c2 * c0, c1
        pairs.append({"pair": j, "c0": c0, "c1": c1, "c2": c2, "rows": rows, "columns": cols,
                      "needed": rows})
        elimination = rows * cols * min(rows, cols)
        work += elimination * (3 if g is not None else 1)
        peak = max(peak, 16 * rows * (cols + (c2 if g is not None else 0)))
    entries = sum(W.nrows() * W.ncols() for W in weights)
    if g is not None:
        entries += sum(a * b for a, b in zip(g.widths, g.widths[1:]))
    return CapacityPlan(str(frozen) if isinstance(frozen, (str, os.PathLike))
                        else type(frozen).__name__, widths, pairs,
                        None if g is None else tuple(g.widths),
                        seconds=work / WORD_OPERATIONS_PER_SECOND, peak_bytes=BASE_BYTES + peak,
                        document_bytes=DOCUMENT_BYTES_PER_ENTRY * entries)


#: relative difference (2^-k) below which two exact networks differ by float rounding only
ROUNDING_BITS = 20


def rounding_hint(r: Any, points: int = 8) -> str | None:
    """A note when the target equals the given network at its own normalization except for
    differences of float rounding: the exact answer is about the exact numbers, and a copy of a
    network through float arithmetic (a folded BatchNorm, a float32 export) is another network.

    The two are evaluated exactly at the box's corners and seeded points of the box (up to
    ``points``); the hint is given when they differ somewhere, and everywhere by at most
    ``2^-ROUNDING_BITS`` relative to the largest output (at least 1).
    """
    g = r.target
    if g is None:
        return None
    try:
        own = as_target(r.network, Box(tuple(g.lower), tuple(g.upper)))
    except ExactnormError:  # another shape: not a copy of the given network
        return None
    if tuple(own.widths) != tuple(g.widths):
        return None
    xs = list(g.corners(points // 2))
    xs += [[lo + (hi - lo) * fmpq(k + 1, points + 2) for lo, hi in zip(g.lower, g.upper)]
           for k in range(points - len(xs))]
    largest, biggest = fmpq(0), fmpq(0)
    for x in xs:
        for a, b in zip(own.evaluate(x), g.evaluate(x)):
            largest = max(largest, abs(a - b))
            biggest = max(biggest, abs(a), abs(b))
    if largest == 0 or largest > fmpq(1, 2**ROUNDING_BITS) * max(biggest, fmpq(1)):
        return None
    return (f"the target equals the given network at its own normalization up to float "
            f"rounding only (largest difference {float(largest):.3g} at {len(xs)} points of "
            f"the box, outputs up to {float(biggest):.3g}): the answer is about the exact "
            f"numbers, and a float copy of a network (a folded BatchNorm, a float32 export) "
            f"is another network; give the target with the same exact numbers")
