"""Steps shared by every construction: the result type, the activating shift and its cancellation.

Ground types: ``fmpq_mat``/``fmpz_mat`` matrices, vectors as tuples of ``fmpq``.
"""

from __future__ import annotations

import functools
import math
import platform
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import numpy as np
from flint import fmpq, fmpq_mat, fmpz_mat

from exactnorm.errors import InputError
from exactnorm.exact.linalg import FlintMatrix, int64_array
from exactnorm.model.network import FrozenNetwork, TargetNetwork, Vector, affine_interval, column
from exactnorm.version import __version__

__all__ = ["DEFAULT_RETRY", "SHIFT_MODES", "Construction", "LayerReport", "activating_shift",
           "apply_shift_mode", "scaled_activating_shift", "cancelling_bias", "provenance",
           "row_ranges"]

#: redraws a singular frozen draw gets by default (each recorded in the certificate); with the
#: default ``nonzero:8`` a singular Khatri–Rao system is rare (docs/performance.md), so 8 is a
#: bound on a pathological seed's cost rather than an expected number; ``retry=0`` is strict
DEFAULT_RETRY = 8

#: how an activating shift is chosen (:func:`activating_shift`)
SHIFT_MODES = ("neuron", "layer", "integer")


@dataclass
class LayerReport:
    """What one target layer cost: sizes, exact rank, bit sizes, attempts, time (not certified)."""

    layer: int
    d_in: int
    d_out: int
    widths: tuple[int, ...]
    systems: int
    system_size: int
    rank: int
    gamma_bits: int
    beta_bits: int
    attempts: int
    seconds: float = 0.0
    witness: dict[str, Any] = field(default_factory=dict)
    #: ``(exact rank, unknowns)`` of every Khatri–Rao system, in order; empty for one system
    #: described by ``rank``/``system_size``
    system_ranks: tuple[tuple[int, int], ...] = ()

    @property
    def per_system(self) -> tuple[tuple[int, int], ...]:
        """``(exact rank, unknowns)`` of each linear system solved for this target layer."""
        return self.system_ranks or ((self.rank, self.system_size),)

    def rank_text(self) -> str:
        """Exact rank per system, runs of equal systems grouped: ``"4/4 ×8"``, ``"8/8, 2/2"``.

        ``rank`` alone cannot say this: for ``lowrank`` it is the rank of ``W`` and for
        ``tradeoff`` a sum over systems, neither comparable with one system's size.

        >>> LayerReport(1, 8, 2, (4, 2), 8, 4, 32, 1, 1, 8,
        ...             system_ranks=((4, 4),) * 7 + ((2, 2),)).rank_text()
        '4/4 ×7, 2/2'
        """
        runs: list[list[Any]] = []
        for pair in self.per_system:
            if runs and runs[-1][0] == pair:
                runs[-1][1] += 1
            else:
                runs.append([pair, 1])
        return ", ".join(f"{r}/{m}" + (f" ×{n}" if n > 1 else "") for (r, m), n in runs)


@dataclass
class Construction:
    """A frozen network realizing a target, with what is needed to write its certificate."""

    name: str
    target: TargetNetwork
    network: FrozenNetwork
    reports: list[LayerReport]
    provenance: dict[str, Any]
    witnesses: dict[str, Any]

    def __repr__(self) -> str:
        # short at any size (the fields hold whole networks)
        return (f"{type(self).__name__}(name={self.name!r}, target={self.target!r}, "
                f"frozen depth={self.network.depth}, tuned parameters="
                f"{self.network.tuned_parameters})")

    def _repr_html_(self) -> str:
        import html

        rows = "".join(f"<tr><td>{r.layer}</td><td>{r.d_in}→{r.d_out}</td><td>{r.systems}</td>"
                       f"<td>{r.system_size}</td><td>{html.escape(r.rank_text())}</td>"
                       f"<td>{r.gamma_bits}</td><td>{r.beta_bits}</td></tr>"
                       for r in self.reports[:20])
        return (f"<b>{html.escape(type(self).__name__)}</b> {html.escape(self.name)}: frozen "
                f"depth {self.network.depth}, tuned parameters {self.network.tuned_parameters}"
                f"<br>{self.target._repr_html_()}<table><tr><th>layer</th><th>d_in→d_out</th>"
                f"<th>systems</th><th>m</th><th>exact rank</th><th>γ bits</th><th>β bits</th>"
                f"</tr>{rows}</table>")


def apply_shift_mode(per_neuron: Vector, mode: str) -> Vector:
    """Per-neuron shifts as they are, their maximum for every neuron of the layer, or each
    rounded up to an integer."""
    if mode == "neuron":
        return per_neuron
    if mode == "layer":
        c = max(per_neuron) if per_neuron else fmpq(0)
        return tuple(c for _ in per_neuron)
    if mode == "integer":
        return tuple(fmpq(math.ceil(b)) for b in per_neuron)
    raise InputError(f"unknown shift_mode {mode!r}; expected one of {', '.join(SHIFT_MODES)}",
                     parameter="shift_mode")


def activating_shift(G: FlintMatrix, lo: Sequence[fmpq], hi: Sequence[fmpq],
                     mode: str = "neuron") -> Vector:
    """Shift β that makes every neuron of ``G a + β`` non-negative on the box ``[lo, hi]``.

    ``mode="neuron"`` gives each neuron the smallest such shift, ``β_k = −min_{a∈B} G_k a`` (the
    neuron's exact minimum becomes 0); ``mode="layer"`` uses one constant ``c = max_k β_k`` for
    the whole layer, as in the proof of Theorem 1; ``mode="integer"`` rounds each smallest shift
    up to an integer, ``⌈β_k⌉`` (a declared safe bound, docs/model.md: a shift of a few bits instead
    of one as long as Γ, and the shifts that cancel it downstream stay integers too). Either way
    the ReLU acts as the identity on the box, so the layer is affine there (docs/model.md,
    Theorem 1 step 2).

    >>> from flint import fmpq_mat
    >>> G = fmpq_mat([[1, -2], [fmpq(1, 3), 0]])
    >>> lo, hi = (fmpq(0), fmpq(0)), (fmpq(1), fmpq(1, 2))
    >>> activating_shift(G, lo, hi), activating_shift(G, lo, hi, mode="integer")
    ((1, 0), (1, 0))
    >>> activating_shift(fmpq_mat([[fmpq(-1, 3)]]), (fmpq(0),), (fmpq(1),), mode="integer")
    (1,)
    """
    zeros = [fmpq(0)] * G.nrows()
    mins, _ = affine_interval(G, zeros, lo, hi)
    per_neuron = tuple(-m for m in mins)
    return apply_shift_mode(per_neuron, mode)


def scaled_activating_shift(gamma: Sequence[fmpq], V: FlintMatrix, lo: Sequence[fmpq],
                            hi: Sequence[fmpq], mode: str = "neuron") -> Vector:
    """:func:`activating_shift` of ``G = diag(γ) V`` without forming ``G``.

    ``min_a γ_k (V_k a)`` is ``γ_k·min_a V_k a`` for ``γ_k ≥ 0`` and ``γ_k·max_a V_k a``
    otherwise, so the interval arithmetic runs on the small frozen entries of ``V`` and each
    (large) ``γ_k`` is multiplied once. Same result as ``activating_shift(diag(γ) V, …)``.
    """
    vmin, vmax = row_ranges(V, lo, hi)
    per_neuron = tuple(-(g * (mn if g >= 0 else mx)) for g, mn, mx in zip(gamma, vmin, vmax))
    return apply_shift_mode(per_neuron, mode)


def row_ranges(V: FlintMatrix, lo: Sequence[fmpq], hi: Sequence[fmpq]) -> tuple[Vector, Vector]:
    """``min`` and ``max`` of every row of ``V a`` over the box: for an integer ``V`` as two
    FLINT products, ``V⁺·lo + V⁻·hi`` and ``V⁺·hi + V⁻·lo`` (``V⁺``, ``V⁻`` its positive and
    negative parts: a box is a product set, so each entry takes its own end); otherwise
    entry by entry (:func:`~exactnorm.model.network.affine_interval`). Equal either way."""
    if not isinstance(V, fmpz_mat) or V.nrows() * V.ncols() == 0 or not lo:
        return affine_interval(V, [fmpq(0)] * V.nrows(), lo, hi)
    try:
        arr = int64_array(V)
    except OverflowError:
        return affine_interval(V, [fmpq(0)] * V.nrows(), lo, hi)
    pos = fmpq_mat(fmpz_mat(np.maximum(arr, 0).tolist()))
    neg = fmpq_mat(fmpz_mat(np.minimum(arr, 0).tolist()))
    lo_col, hi_col = fmpq_mat(len(lo), 1, list(lo)), fmpq_mat(len(hi), 1, list(hi))
    return (tuple((pos * lo_col + neg * hi_col).entries()),
            tuple((pos * hi_col + neg * lo_col).entries()))


def cancelling_bias(V: FlintMatrix, shift: Sequence[fmpq], bias: Sequence[fmpq]) -> Vector:
    """``b − V·shift``: the next layer's β that removes an earlier shift exactly (step 3)."""
    vs = V * column(shift)
    return tuple(fmpq(bias[r]) - vs[r, 0] for r in range(V.nrows()))


@functools.cache
def _installed(name: str) -> str:
    """The installed version of a distribution (read once per process: the lookup scans
    every installed package's metadata)."""
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def provenance(construction: str, seed: int, distribution: str, **extra: Any) -> dict[str, Any]:
    """Seed, distribution and software versions, recorded in every certificate."""
    installed = _installed

    out = {
        "construction": construction,
        "seed": seed,
        "distribution": distribution,
        "rng": "exactnorm.shake256.v1",
        "stream_keys": "(segment, layer of the segment, role, attempt); role 0: the layer's "
                       "weight, 1: its mask, 2 + 2t: skip t, 3 + 2t: its mask",
        "versions": {
            "exactnorm": __version__,
            "python-flint": installed("python-flint"),
            "numpy": installed("numpy"),
            "sympy": installed("sympy"),
            "python": platform.python_version(),
        },
    }
    out.update(extra)
    return out
