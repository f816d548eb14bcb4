"""Burkholz's width: one target layer by two frozen layers with the output scale tuned.

Statement (R. Burkholz, "Batch normalization is sufficient for universal function approximation
in CNNs", ICLR 2024, Theorem 2.2, as reconstructed in docs/constructions.md). For a
target layer ``σ(W a + b)`` with ``c0`` inputs and ``c2'`` live outputs (rows ``W_i ≠ 0``), frozen
``V_1`` (``c1 × c0``) and ``V_2`` (``c2 × c1``) with ``c1 = c2'·(c0 − 1) + 1`` reach it exactly for
almost every draw, because the second layer's scale is tuned as well:
``diag(γ_2) V_2 diag(γ_1) V_1 = W`` becomes, with ``λ_i = 1/γ_2[i]``, the homogeneous system

    ``A (u; λ) = 0``,  ``A = [K | −B_W]``,  ``K = V_1ᵀ ⊙ V_2`` (live rows),
    ``B_W[(i,j), i] = W[i,j]``,

of ``c2'·c0`` equations in ``c1 + c2'`` unknowns: one more unknown than equations, so a nonzero
kernel vector exists, and the construction needs ``λ_i ≠ 0`` for every live row. Theorem LB
(docs/capacity.md, "The witnesses") shows the width is sharp: one unit less and ``A``
generically has full column rank, which no tuning at all can overcome (an
``exactnorm.impossibility`` document proves it).

Construction, per target layer ``i`` on its exact box ``B_{i−1}`` (free coordinates ``F``, those
with ``lower < upper``; pinned ones are constants, folded into the bias exactly as the checker
folds them):

1. ``(u; λ)`` in the kernel of ``A`` (rows ``(i, j)``, ``i`` live, ``j ∈ F``), found with modular
   pivots and one exact square solve (:mod:`exactnorm.exact.modular`) and checked exactly; when
   ``K`` has full row rank the output scale is not needed and ``λ = 1`` (``γ_2 = 1``);
2. ``γ_1 = u``, ``β_1`` the activating shift on ``B_{i−1}`` (every hidden ReLU stable), ``γ_2[i] =
   1/λ_i`` on live rows and 0 on the others;
3. ``β_2 = b − γ_2 ⊙ V_2 β_1 + Σ_{t pinned} (W − M)[:, t]·lo_t`` with ``M = diag(γ_2) V_2 diag(u)
   V_1``: the pre-activation equals ``W a + b`` on the box.

:func:`realize_given_pair` applies the same steps to *given* matrices (``exactnorm capacity``);
:func:`certify_burkholz` draws them at random (``--construction burkholz``) from the stream keys
of their positions (layers 1 and 2 of segment ``i``, docs/certificate-format.md §4). A draw is
never redrawn: version 3 proves a redraw only for a Khatri–Rao pair with ``m = c·d`` or a square
matrix (format §6), and this pair has ``m = c2'(c0 − 1) + 1 < c0·c2``; a draw whose ``A`` has no
usable kernel vector is an error naming its exact rank (try another seed, or theorem1).

>>> from exactnorm.model.targets import demo_target
>>> c = certify_burkholz(demo_target(), seed=0)
>>> c.network.widths
(9, 4, 10, 3, 5, 2)
>>> x = (0, 0, 1)
>>> c.network.evaluate(x) == c.target.evaluate(x)
True
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from flint import fmpq, fmpq_mat, fmpz, fmpz_mat

from exactnorm.constructions.common import (
    DEFAULT_RETRY,
    Construction,
    LayerReport,
    provenance,
    scaled_activating_shift,
)
from exactnorm.errors import SingularSystemError, require_integer
from exactnorm.exact.generator import draw
from exactnorm.exact.linalg import FlintMatrix, khatri_rao_system, max_bits
from exactnorm.exact.modular import (
    common_denominator,
    kernel_vector,
    rank_and_pivots,
    solve_full_row_rank,
    witness_prime,
)
from exactnorm.exact.sampling import DEFAULT_DISTRIBUTION, Distribution, parse_distribution
from exactnorm.exact.streams import WEIGHT, StreamKey
from exactnorm.model.network import FrozenLayer, FrozenNetwork, TargetNetwork, Vector, column
from exactnorm.model.operators.dense import Dense, dense_layers

__all__ = ["PairSystem", "PairSolution", "free_coordinates", "live_rows", "pair_system",
           "solve_pair", "realize_given_pair", "certify_burkholz", "burkholz_width"]


def free_coordinates(lo: Sequence[Any], hi: Sequence[Any]) -> list[int]:
    """Coordinates with ``lower < upper`` (the others are constants on the box)."""
    return [t for t, (a, b) in enumerate(zip(lo, hi)) if a < b]


def live_rows(W: FlintMatrix, free: Sequence[int]) -> list[int]:
    """Rows of ``W`` that are not zero on the free coordinates."""
    rows: list[list[Any]] = W.tolist()
    return [i for i, row in enumerate(rows) if any(row[t] for t in free)]


def burkholz_width(c0: int, c2: int) -> int:
    """The sharp width ``c2·(c0 − 1) + 1`` for ``c0`` free inputs and ``c2`` live outputs.

    >>> burkholz_width(64, 10), burkholz_width(24, 24)
    (631, 553)
    """
    return c2 * (c0 - 1) + 1 if c2 and c0 else 1


def _scaled_rows(M: FlintMatrix, rows: Sequence[int], cols: Sequence[int],
                 by_row: bool) -> tuple[list[list[fmpz]], list[fmpz]]:
    """``M[rows, cols]`` as integers after scaling each row (``by_row``) or each column by the
    lcm of its denominators; returns the integers and the scales."""
    entries = M.tolist()
    sub = [[fmpq(entries[r][c]) for c in cols] for r in rows]
    lines = sub if by_row else [list(col) for col in zip(*sub)] if sub else []
    scales, out = [], []
    for line in lines:
        nums, den = common_denominator(line)
        scales.append(den)
        out.append(nums)
    if by_row:
        return out, scales
    return ([list(r) for r in zip(*out)] if out else [[] for _ in rows]), scales


@dataclass(frozen=True)
class PairSystem:
    """``A = [K | −B]`` of a frozen pair for target (or Jacobian) rows ``live`` on the free
    coordinates ``free``, as integers: ``Az = A·diag(scales)``. Row ``a·|F| + f`` is the equation
    of output ``live[a]`` at coordinate ``free[f]``; columns ``0 … c1−1`` are ``u``, then one
    ``λ`` per live output (``outputs=False``: no λ columns, ``K`` alone)."""

    Az: fmpz_mat
    scales: list[fmpz]
    live: list[int]
    free: list[int]
    c0: int
    c1: int
    rhs: list[fmpq]  #: ``vec W`` on the rows, for ``K u = vec W`` (the output scale held at 1)

    def checker_row(self, r: int) -> int:
        """The row's index ``a·c0 + j`` in docs/certificate-format.md §9."""
        a, f = divmod(r, len(self.free))
        return a * self.c0 + self.free[f]


def pair_system(V1: FlintMatrix, V2: FlintMatrix, W: FlintMatrix, live: Sequence[int],
                free: Sequence[int], *, outputs: bool = True) -> PairSystem:
    """The integer system of a frozen pair and a target weight (or Jacobian) ``W`` (class doc)."""
    c1, c0 = V1.nrows(), V1.ncols()
    V1i, d1 = _scaled_rows(V1, range(c1), free, by_row=True)
    V2i, d2 = _scaled_rows(V2, live, range(c1), by_row=False)
    Wq = W.tolist()
    rows, rhs = [], []
    Wi, t = _scaled_rows(W, live, free, by_row=True) if outputs else ([], [])
    n_out = len(live) if outputs else 0
    for a, i in enumerate(live):
        v2 = V2i[a]
        for f, j in enumerate(free):
            row = [v2[k] * V1i[k][f] for k in range(c1)]
            if outputs:
                row += [-Wi[a][f] if b == a else fmpz(0) for b in range(n_out)]
            rows.append(row)
            rhs.append(fmpq(Wq[i][j]))
    width = c1 + n_out
    Az = fmpz_mat(len(rows), width, [x for row in rows for x in row]) if rows \
        else fmpz_mat(0, width)
    scales = [d1[k] * d2[k] for k in range(c1)] + list(t)
    return PairSystem(Az, scales, list(live), list(free), c0, c1, rhs)


@dataclass(frozen=True)
class PairSolution:
    """``γ_1 = u`` and ``γ_2`` with ``diag(γ_2) V_2 diag(u) V_1 = W`` on the free coordinates;
    ``scale_tuned``: whether ``γ_2 ≠ 1`` was needed (``K`` without full row rank)."""

    u: tuple[fmpq, ...]
    gamma_out: tuple[fmpq, ...]
    scale_tuned: bool
    rank: int
    unknowns: int


def solve_pair(V1: FlintMatrix, V2: FlintMatrix, W: FlintMatrix, free: Sequence[int],
               p: int | None = None) -> PairSolution | None:
    """Exact ``(u, γ_2)`` for ``W`` (module docstring, step 1), or ``None`` when the modular
    choices find none (``A`` of full column rank, or every kernel vector found has a zero ``λ``).
    """
    c1, c2 = V1.nrows(), V2.nrows()
    live = live_rows(W, free)
    zero = fmpq(0)
    if not live:
        return PairSolution((zero,) * c1, (zero,) * c2, False, 0, 0)
    if p is None:
        p = witness_prime(fmpq(x).denom() for M in (V1, V2, W) for x in M.entries())
    K = pair_system(V1, V2, W, live, free, outputs=False)
    u1 = solve_full_row_rank(K.Az, K.rhs, p)
    if u1 is not None:  # K has full row rank: the output scale stays 1
        gamma = [zero] * c2
        for i in live:
            gamma[i] = fmpq(1)
        return PairSolution(tuple(x * s for x, s in zip(u1, K.scales)), tuple(gamma), False,
                            K.Az.nrows(), c1)
    A = pair_system(V1, V2, W, live, free)
    rank, pivots = rank_and_pivots(A.Az, p)
    free_cols = [j for j in range(A.Az.ncols()) if j not in set(pivots)]
    tries = [None, {j: k + 1 for k, j in enumerate(free_cols)}]
    for values in tries:
        v = kernel_vector(A.Az, p, values)
        if v is None:
            return None
        v = [x * s for x, s in zip(v, A.scales)]
        lam = v[c1:]
        if all(lam):
            gamma = [zero] * c2
            for i, x in zip(live, lam):
                gamma[i] = 1 / x
            return PairSolution(tuple(v[:c1]), tuple(gamma), True, rank, A.Az.ncols())
    return None


def realize_given_pair(V1: FlintMatrix, V2: FlintMatrix, solution: PairSolution,
                       W: FlintMatrix, b: Sequence[fmpq], activation: str,
                       box: tuple[Vector, Vector], *, input_node: int,
                       records: tuple[dict[str, Any], dict[str, Any]],
                       shift_mode: str = "neuron") -> list[FrozenLayer]:
    """The two frozen layers of a solved pair (module docstring, steps 2 and 3)."""
    lo, hi = box
    u, g2 = solution.u, solution.gamma_out
    beta_in = scaled_activating_shift(u, V1, lo, hi, mode=shift_mode)
    pinned = [t for t in range(len(lo)) if not lo[t] < hi[t]]
    shift = V2 * column(beta_in)
    beta_out = [fmpq(b[i]) - g2[i] * shift[i, 0] for i in range(V2.nrows())]
    if pinned:
        # coefficients of constant coordinates are free on the box: fold their difference
        V1q = fmpq_mat(V1) if isinstance(V1, fmpz_mat) else V1
        inner = V2 * fmpq_mat([[u[k] * V1q[k, t] for t in pinned] for k in range(V1.nrows())])
        Wq = W.tolist()
        for i in range(V2.nrows()):
            beta_out[i] += sum(((fmpq(Wq[i][t]) - g2[i] * inner[i, c]) * lo[t]
                                for c, t in enumerate(pinned)), fmpq(0))
    first = FrozenLayer(input_node, Dense(V1), tuple(u), beta_in, "relu", record=records[0])
    second = FrozenLayer(input_node + 1, Dense(V2), tuple(g2), tuple(beta_out), activation,
                         record=records[1])
    return [first, second]


def _kernel_of_k(V1: FlintMatrix, V2: FlintMatrix, p: int) -> list[int] | None:
    """An integer ``v ≠ 0`` with ``V_2 diag(v) V_1 = 0`` (the redraw rule's proof), if any."""
    K = khatri_rao_system(V1, V2)
    Kz = K if isinstance(K, fmpz_mat) else K.numer_denom()[0]
    v = kernel_vector(Kz, p)
    if v is None:
        return None
    nums, _ = common_denominator(v)
    return [int(x) for x in nums]


def certify_burkholz(target: TargetNetwork, *, seed: int = 0,
                     distribution: str | Distribution = DEFAULT_DISTRIBUTION,
                     retry: int = DEFAULT_RETRY, shift_mode: str = "neuron",
                     progress: Callable[[int, int], None] | None = None) -> Construction:
    """Realize ``target`` with the sharp width ``c2'·(c0 − 1) + 1`` per target layer (module
    docstring): depth ``2L``, the first frozen layer of each pair ``c2'(c0 − 1) + 1`` wide
    (``c0`` free coordinates of the layer's box, ``c2'`` live rows).

    Frozen weights of target layer ``i`` are drawn from ``StreamKey(i, 1, WEIGHT, 0)`` and
    ``StreamKey(i, 2, WEIGHT, 0)``, the keys of their positions (as Theorem 1). ``retry`` is
    accepted for the constructions' common signature, but no draw is redrawn (module doc): a
    failed draw raises :class:`~exactnorm.errors.SingularSystemError` with the exact rank and,
    when ``K`` itself is singular, a kernel vector.
    """
    dist = parse_distribution(distribution)
    require_integer(retry, "retry")
    boxes = target.interval_boxes()
    layers: list[FrozenLayer] = []
    reports: list[LayerReport] = []
    for i, tl in enumerate(dense_layers(target.layers, "construction burkholz"), 1):
        t0 = time.perf_counter()
        lo, hi = boxes[i - 1]
        free = free_coordinates(lo, hi)
        live = live_rows(tl.weight, free)
        d_out, d_in = tl.weight.nrows(), tl.weight.ncols()
        c1 = burkholz_width(len(free), len(live))
        stream = StreamKey(i, 1, WEIGHT, 0)
        V1, rec1 = draw(seed, stream.key, c1, d_in, dist)
        V2, rec2 = draw(seed, stream.next_layer().key, d_out, c1, dist)
        p = witness_prime(fmpq(x).denom() for M in (V1, V2, tl.weight) for x in M.entries())
        solution = solve_pair(V1, V2, tl.weight, free, p)
        if solution is None:
            kernel = _kernel_of_k(V1, V2, p)
            rank = rank_and_pivots(pair_system(V1, V2, tl.weight, live, free).Az, p)[0]
            raise SingularSystemError(
                f"burkholz: target layer {i}: no kernel vector of [K | -B] with every output "
                f"scale nonzero for this draw (rank {rank} modulo a prime, {c1 + len(live)} "
                f"unknowns; seed {seed}); a burkholz pair is never redrawn (its redraw cannot be "
                f"proven in a certificate: m < c0·c2); try another seed or theorem1",
                rank=rank, size=c1 + len(live), kernel=kernel, layer=i)
        pair = realize_given_pair(V1, V2, solution, tl.weight, tl.bias, tl.activation,
                                  (lo, hi), input_node=len(layers), records=(rec1, rec2),
                                  shift_mode=shift_mode)
        layers.extend(pair)
        gamma_bits = max(max_bits(fmpq_mat([list(solution.u)])),
                         max_bits(fmpq_mat([list(solution.gamma_out)])))
        beta_bits = max(max_bits(fmpq_mat([list(layer.beta)])) for layer in pair)
        reports.append(LayerReport(
            layer=i, d_in=d_in, d_out=d_out, widths=(c1, d_out), systems=1,
            system_size=len(live) * len(free), rank=solution.rank, gamma_bits=gamma_bits,
            beta_bits=beta_bits, attempts=1,
            seconds=time.perf_counter() - t0,
            witness={"layer": i, "offset": 1, "system": "[K | -B_W] (output scale tuned)",
                     "equations": len(live) * len(free), "unknowns": solution.unknowns,
                     "rank": solution.rank, "stream_key": list(stream.key),
                     "singular_draws": []},
            system_ranks=((solution.rank, solution.unknowns),)))
        if progress is not None:
            progress(i, target.depth)
    network = FrozenNetwork(target.widths[0], tuple(layers),
                            tuple(2 * i for i in range(1, target.depth + 1)))
    return Construction(
        name="burkholz", target=target, network=network, reports=reports,
        provenance=provenance("burkholz", seed, dist.spec, shift_mode=shift_mode, retry=retry,
                              width="c2'·(c0 − 1) + 1 per target layer (output scale tuned)"),
        witnesses={"layers": [r.witness for r in reports]})
