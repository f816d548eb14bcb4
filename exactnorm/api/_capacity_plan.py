"""``capacity --dry-run``: the sizes of the work :func:`exactnorm.api.capacity` would do, and a
rough estimate of its time, memory and document size, without computing any rank.

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

from exactnorm.api._boxes import resolve_box
from exactnorm.api._capacity import given_bounds, read_given, read_target
from exactnorm.exact.rationals import DEFAULT_MAX_DIGITS
from exactnorm.model.network import DEFAULT_MAX_WIDTH

__all__ = ["CapacityPlan", "plan_capacity", "WORD_OPERATIONS_PER_SECOND",
           "DOCUMENT_BYTES_PER_ENTRY"]

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
    net = read_given(frozen, activations, max_width)
    resolved = resolve_box(box=box, box_file=box_file, box_from_data=box_from_data,
                           max_digits=max_digits)
    bounds = given_bounds(resolved, net.widths[0])
    g = None if target is None else read_target(target, bounds, target_activations,
                                                max_width, max_digits)
    widths = net.widths
    pairs, work, peak = [], 0.0, 0
    for j in range(1, len(widths) - 1):
        c0, c1, c2 = widths[j - 1], widths[j], widths[j + 1]
        rows, cols = c2 * c0, c1
        pairs.append({"pair": j, "c0": c0, "c1": c1, "c2": c2, "rows": rows, "columns": cols,
                      "needed": rows})
        elimination = rows * cols * min(rows, cols)
        work += elimination * (3 if g is not None else 1)
        peak = max(peak, 16 * rows * (cols + (c2 if g is not None else 0)))
    entries = sum(a * b for a, b in zip(widths, widths[1:]))
    if g is not None:
        entries += sum(a * b for a, b in zip(g.widths, g.widths[1:]))
    return CapacityPlan(net.name, widths, pairs,
                        None if g is None else tuple(g.widths),
                        seconds=work / WORD_OPERATIONS_PER_SECOND, peak_bytes=BASE_BYTES + peak,
                        document_bytes=DOCUMENT_BYTES_PER_ENTRY * entries)
