"""The channel-block trade-off for convolutions: one small Khatri–Rao system per block of input
channels, summed exactly through identity skips.

Construction (exactnorm's design, the convolutional analogue of the dense trade-off's masked
routing, :mod:`~exactnorm.constructions.tradeoff`; docs/convolutions.md, "Channel blocks").
A target convolution ``σ(W·patch + b)`` with ``c_out`` output channels, ``C`` input channels and
a ``kh × kw`` kernel (``W`` is ``c_out × C·kh·kw``) is split by input channels into blocks
``S_1 … S_T``; ``cols(S)`` are the kernel columns ``c·kh·kw + u·kw + v`` of the channels
``c ∈ S`` (increasing).

1. Draw the final ``V_F`` (``c_out × c_out``, a 1×1 convolution), redrawn until invertible
   (each singular attempt recorded with a kernel vector); ``W' = V_F⁻¹ W`` exactly.
2. Block ``t`` (segment layers ``2t − 1`` and ``2t``):

   * a masked k×k convolution ``V_t`` with the target's window, reading the segment input,
     whose kernel columns outside ``cols(S_t)`` are structural zeros (a 2-d draw record with
     the ``{"columns": cols(S_t)}`` mask), ``m_t = c_out·|cols(S_t)|`` channels, per-channel
     ``γ_t`` and a shift ``β_t`` making every channel's ReLU the identity on the box;
   * a 1×1 convolution ``U_t`` to ``c_out`` channels with ``γ = 1`` and
     ``β = c_t − U_t β_t``, so that its pre-activation is ``W'[:, cols(S_t)]·patch + c_t``
     (``U_t diag(γ_t) V_t = W'[:, cols(S_t)]`` is the block's Khatri–Rao system of ``m_t``
     unknowns), with ``c_t`` the per-channel shift that makes it non-negative on the box, so its
     ReLU is the identity too;
   * from ``t = 2`` on, a post-activation ``identity`` skip from block ``t − 1``'s output: the
     accumulator ``O_t = Σ_{u ≤ t} (W'_u·patch + c_u)``.
3. The checkpoint (layer ``2T + 1``) is ``V_F`` reading ``O_T`` with ``γ = 1`` and
   ``β = b − V_F Σ_t c_t``: its pre-activation is ``V_F V_F⁻¹ W·patch + b = W·patch + b``, the
   target's at every position, borders included (every map is the same at every position;
   padding pixels are 0 on both sides). A residual target's skip is attached to it by the plan.

Stability boxes (docs/certificate-format.md §8): a frozen convolution's ReLU channels are made
stable either on **every position's** patch box (``"positions"``, the default) or on their
**hull** (one box per patch coordinate: the minimum of the lower and the maximum of the upper
bounds over every position, a padding pixel contributing 0 to both; ``"hull"``). The hull
contains every position's patch box, so a shift computed on it is also stable position by
position; it is looser (larger shifts) and costs the checker ``1/positions`` of the work. The
writer uses the hull where the per-position test would cost more than :data:`HULL_WORK` exact
multiply-adds (``channels × positions × patch``) and writes the family it used on the layer.

Reference: Giannou, Rajput, Papailiopoulos, COLT 2023 (Theorem 1, width/depth); Burkholz,
ICLR 2024 (BatchNorm in CNNs).

>>> from flint import fmpq, fmpq_mat
>>> from exactnorm.model.layers import TargetLayer
>>> from exactnorm.model.operators import Conv, ConvGeometry
>>> g = ConvGeometry((2, 3, 3), (2, 2), padding=(1, 1))
>>> layer = TargetLayer(Conv(g, fmpq_mat([[1, -1, 2, 0, 1, 1, -2, 3]])), (fmpq(1),), "relu")
>>> layers, report = realize_conv_blocks(layer, ((fmpq(0),) * 18, (fmpq(1),) * 18), block=1,
...                                      seed=0, index=1, input_node=0)
>>> [fl.channels for fl in layers], report.systems, report.system_size
([4, 1, 4, 1, 1], 2, 4)
>>> layers[2].drawn_columns, [s.source for s in layers[3].skips]
((4, 5, 6, 7), [2])
"""

from __future__ import annotations

import time
from typing import Any

from flint import fmpq, fmpq_mat

from exactnorm.constructions.common import (
    DEFAULT_RETRY,
    LayerReport,
    apply_shift_mode,
    cancelling_bias,
    row_ranges,
)
from exactnorm.constructions.theorem1 import solve_pair
from exactnorm.constructions.tradeoff import final_matrix, left_divide
from exactnorm.errors import InputError, require_integer
from exactnorm.exact.linalg import max_bits
from exactnorm.exact.parallel import (
    check_jobs,
    map_tasks,
    pack_matrix,
    pack_q,
    unpack_matrix,
    unpack_q,
)
from exactnorm.exact.sampling import DEFAULT_DISTRIBUTION, Distribution, parse_distribution
from exactnorm.model.layers import STABILITY_FAMILIES, FrozenLayer, TargetLayer
from exactnorm.model.operators.conv import NAME as CONV
from exactnorm.model.operators.conv import Conv, conv_of
from exactnorm.model.operators.window import ConvGeometry
from exactnorm.model.routes import Route, Skip
from exactnorm.model.values import Vector

__all__ = ["channel_blocks", "block_columns", "hull_box", "channel_shift", "kernel_record",
           "stability_family", "realize_conv_blocks", "HULL_WORK", "DEFAULT_CONV_SHIFT_MODE"]

#: per-channel shifts rounded up to integers: β stays small integers next to Γ
DEFAULT_CONV_SHIFT_MODE = "integer"
#: above this many exact multiply-adds (channels × positions × patch) a frozen convolution of
#: the block construction is made stable on the hull of its patch boxes (module doc)
HULL_WORK = 10**6


def channel_blocks(channels: int, k: int) -> list[list[int]]:
    """Consecutive blocks of ``k`` input channels (the last may be shorter).

    >>> channel_blocks(5, 2)
    [[0, 1], [2, 3], [4]]
    """
    require_integer(k, "block", minimum=1)
    return [list(range(s, min(s + k, channels))) for s in range(0, channels, k)]


def block_columns(block: list[int], kh: int, kw: int) -> list[int]:
    """The kernel columns ``c·kh·kw + u·kw + v`` of the channels in ``block``, increasing.

    >>> block_columns([1], 2, 2)
    [4, 5, 6, 7]
    """
    taps = kh * kw
    return [c * taps + t for c in sorted(block) for t in range(taps)]


def kernel_record(record: dict[str, Any], shape: tuple[int, int, int, int]) -> dict[str, Any]:
    """The draw record of a ``rows × C·kh·kw`` matrix rewritten with the kernel's 4-d shape
    ``[rows, C, kh, kw]``: the same words in the same order (C order). A masked record stays
    2-d (a 4-d record has no mask, docs/certificate-format.md §2)."""
    rows, cols = record["shape"]
    if rows != shape[0] or cols != shape[1] * shape[2] * shape[3] or "mask" in record:
        raise InputError(f"a draw record of shape {record['shape']} is not a kernel of shape "
                         f"{list(shape)}")
    return dict(record, shape=[int(v) for v in shape])


def hull_box(geometry: ConvGeometry, lo: Vector, hi: Vector) -> tuple[Vector, Vector]:
    """The hull of every position's patch box: per patch coordinate the minimum of the lower
    bounds and the maximum of the upper bounds over the positions (padding pixels 0).

    >>> from flint import fmpq
    >>> g = ConvGeometry((1, 1, 3), (1, 2), padding=(0, 1))
    >>> hull_box(g, (fmpq(1), fmpq(2), fmpq(3)), (fmpq(4), fmpq(5), fmpq(6)))
    ((0, 0), (6, 6))
    """
    plo, phi = geometry.patches(lo), geometry.patches(hi)
    P = plo.ncols()
    flo, fhi = plo.entries(), phi.entries()
    rows = plo.nrows()
    return (tuple(min(flo[r * P:(r + 1) * P]) for r in range(rows)),
            tuple(max(fhi[r * P:(r + 1) * P]) for r in range(rows)))


def stability_family(channels: int, geometry: ConvGeometry) -> str:
    """``"hull"`` when the per-position stability test of ``channels`` channels would cost more
    than :data:`HULL_WORK` multiply-adds, else ``"positions"``."""
    work = channels * geometry.positions * geometry.patch_size
    return "hull" if geometry.positions > 1 and work > HULL_WORK else "positions"


def _group_row_ranges(V: Any, lo: Vector, hi: Vector, groups: int) -> tuple[Vector, Vector]:
    """:func:`~exactnorm.constructions.common.row_ranges` of a kernel of ``groups`` groups over
    the whole patch's box: the rows of group ``k`` read the ``k``-th block of ``V.ncols()``
    patch coordinates (the block-diagonal kernel, :func:`~exactnorm.model.operators.window.
    block_product`), so each group's rows range over that block of the box only."""
    if groups == 1:
        return row_ranges(V, lo, hi)
    rows, d = V.nrows(), V.ncols()
    per, entries = rows // groups, V.entries()
    lows: list[fmpq] = []
    highs: list[fmpq] = []
    for k in range(groups):
        block = type(V)(per, d, entries[k * per * d:(k + 1) * per * d])
        mn, mx = row_ranges(block, lo[k * d:(k + 1) * d], hi[k * d:(k + 1) * d])
        lows.extend(mn)
        highs.extend(mx)
    return tuple(lows), tuple(highs)


def channel_shift(gamma: Vector, V: Any, geometry: ConvGeometry, lo: Vector, hi: Vector,
                  mode: str, stability: str = "positions",
                  hull: tuple[Vector, Vector] | None = None, groups: int = 1) -> Vector:
    """Per-channel shift β making ``γ_j (V_j·patch) + β_j ≥ 0`` on every box of the family
    ``stability`` (module doc): ``β_j = −γ_j·min`` (``γ_j ≥ 0``) or ``−γ_j·max`` of the exact
    ranges; ``mode`` as in :func:`~exactnorm.constructions.common.activating_shift`. ``hull``
    is :func:`hull_box` of the geometry and box when the caller has it already (it is the same
    for every block of a layer). ``V`` is the kernel of a convolution with ``groups`` groups."""
    if stability == "hull":
        hlo, hhi = hull if hull is not None else hull_box(geometry, lo, hi)
        lows, highs = _group_row_ranges(V, hlo, hhi, groups)
        return apply_shift_mode(tuple(-(g * (lows[j] if g >= 0 else highs[j]))
                                      for j, g in enumerate(gamma)), mode)
    if stability == "positions":
        fmin, fmax = Conv(geometry, V, groups).interval(lo, hi)  # C order: row j·P + p
    else:
        raise InputError(f"stability must be one of {', '.join(STABILITY_FAMILIES)}, got "
                         f"{stability!r}")
    P = geometry.positions
    out = []
    for j, g in enumerate(gamma):
        row = fmin[j * P:(j + 1) * P] if g >= 0 else fmax[j * P:(j + 1) * P]
        out.append(-(g * (min(row) if g >= 0 else max(row))))
    return apply_shift_mode(tuple(out), mode)


def realize_conv_blocks(layer: TargetLayer, box: tuple[Vector, Vector], *, block: int,
                        seed: int, index: int, input_node: int,
                        distribution: str | Distribution = DEFAULT_DISTRIBUTION,
                        retry: int = DEFAULT_RETRY, shift_mode: str = DEFAULT_CONV_SHIFT_MODE,
                        solver: str = "auto", solve_jobs: int = 1,
                        stability: str | None = None, jobs: int = 1, scheduler: Any = None
                        ) -> tuple[list[FrozenLayer], LayerReport]:
    """The ``2T + 1`` frozen convolutions of target layer ``index`` with blocks of ``block``
    input channels, the first reading node ``input_node`` (module doc). Block ``t`` stands at
    layers ``2t − 1, 2t`` of segment ``index`` and ``V_F`` last, so their matrices draw from the
    keys of those positions (docs/certificate-format.md §4). ``stability`` forces a family on
    every ReLU layer (``None``: :func:`stability_family` per layer). The last layer is the
    checkpoint. Given ``V_F`` the blocks are independent: ``jobs`` processes (or a Dask
    ``scheduler``) solve them (:func:`~exactnorm.exact.parallel.map_tasks`); the result does not
    depend on either. ``solve_jobs`` splits one block's lifting when ``jobs`` is 1.

    Raises
    ------
    SingularSystemError
        A block system or ``V_F`` singular after ``retry`` redraws (with its exact rank).
    """
    t0 = time.perf_counter()
    dist = parse_distribution(distribution)
    require_integer(block, "block", minimum=1)
    check_jobs(jobs)
    if stability is not None and stability not in STABILITY_FAMILIES:
        raise InputError(f"stability must be one of {', '.join(STABILITY_FAMILIES)}, got "
                         f"{stability!r}", parameter="stability")
    op = conv_of(layer, "the channel-block construction")
    if op.groups != 1:
        raise InputError("channel blocks realize an ungrouped convolution")
    W, g = op.weight, op.geometry
    c_out, patch = W.nrows(), W.ncols()
    C, (kh, kw) = g.input_shape[0], g.kernel_shape
    blocks = channel_blocks(C, block)
    T = len(blocks)
    singular: list[dict[str, Any]] = []
    V_F, record_F, attempt_F = final_matrix(seed, index, 2 * T + 1, c_out, dist, retry,
                                            singular)
    W_prime = left_divide(V_F, fmpq_mat(W))
    Ho, Wo = g.output_hw
    lo = [pack_q(x) for x in box[0]]
    hi = [pack_q(x) for x in box[1]]
    # the hull of the patch boxes is the layer's, not a block's: computed once
    hull = None
    if stability == "hull" or (stability is None and g.positions > 1):
        hlo, hhi = hull_box(g, *box)
        hull = ([pack_q(x) for x in hlo], [pack_q(x) for x in hhi])
    tasks = []
    for t, S in enumerate(blocks, 1):
        cols = block_columns(S, kh, kw)
        tasks.append({"t": t, "cols": cols, "patch": patch, "geometry": g, "lo": lo, "hi": hi,
                      "W": pack_matrix(fmpq_mat([[W_prime[r, c] for c in cols]
                                                 for r in range(c_out)])),
                      "seed": seed, "index": index, "distribution": dist.spec, "retry": retry,
                      "solver": solver, "solve_jobs": solve_jobs if jobs == 1 else 1,
                      "shift_mode": shift_mode, "stability": stability, "hull": hull})
    layers: list[FrozenLayer] = []
    shifts = [fmpq(0)] * c_out
    ranks: list[tuple[int, int]] = []
    witnesses: list[dict[str, Any]] = []
    gamma_bits = beta_bits = attempts = 0
    previous: int | None = None  # node of the previous block's output (the accumulator)
    ones = tuple(fmpq(1) for _ in range(c_out))
    for done in map_tasks(_solve_block, tasks, jobs=jobs, scheduler=scheduler):
        m = done["m"]
        gamma = _vector(done["gamma"])
        beta_in = _vector(done["beta_in"])
        hidden = FrozenLayer(input_node, Conv(g, unpack_matrix(done["stored_in"])), gamma,
                             beta_in, "relu", record=done["record_in"],
                             drawn_columns=tuple(done["cols"]), stability=done["family"])
        hidden_node = input_node + len(layers) + 1
        skips = () if previous is None else (
            Skip(previous, Route.identity(c_out * Ho * Wo), "identity"),)
        V_out = unpack_matrix(done["V_out"])
        c_t = _vector(done["c_t"])
        beta_out = cancelling_bias(V_out, beta_in, c_t)
        output = FrozenLayer(hidden_node, Conv(ConvGeometry(g.output_shape(m), (1, 1)), V_out),
                             ones, beta_out, "relu", skips,
                             kernel_record(done["record_out"], (c_out, m, 1, 1)),
                             stability=done["out_family"])
        layers.extend([hidden, output])
        previous = hidden_node + 1
        shifts = [s + c for s, c in zip(shifts, c_t)]
        ranks.append((m, m))
        gamma_bits = max(gamma_bits, done["gamma_bits"])
        beta_bits = max(beta_bits, max_bits(fmpq_mat([list(beta_in)])),
                        max_bits(fmpq_mat([list(beta_out)])))
        attempts += done["attempt"] + 1
        witnesses.append(done["witness"])
    assert previous is not None  # at least one block
    beta_F = cancelling_bias(V_F, shifts, layer.bias)
    final = FrozenLayer(previous, Conv(ConvGeometry((c_out, Ho, Wo), (1, 1)), V_F), ones, beta_F,
                        layer.activation, record=kernel_record(record_F, (c_out, c_out, 1, 1)))
    layers.append(final)
    beta_bits = max(beta_bits, max_bits(fmpq_mat([list(beta_F)])))
    witness = {"layer": index, "kind": CONV, "construction": "channel blocks",
               "block": block, "blocks": blocks, "final_matrix_rank": c_out,
               "final_attempt": attempt_F, "final_singular_draws": singular,
               "stability": [fl.stability for fl in layers[:-1]], "systems": witnesses}
    report = LayerReport(
        layer=index, d_in=patch, d_out=c_out, widths=tuple(fl.channels for fl in layers),
        systems=T, system_size=max(m for m, _ in ranks), rank=sum(r for r, _ in ranks),
        gamma_bits=gamma_bits, beta_bits=beta_bits, attempts=attempts + attempt_F + 1,
        seconds=time.perf_counter() - t0, witness=witness, system_ranks=tuple(ranks))
    return layers, report


def _vector(packed: list[tuple[int, int]]) -> Vector:
    return tuple(unpack_q(x) for x in packed)


def _solve_block(task: dict[str, Any]) -> dict[str, Any]:
    """Worker: block ``t``'s Khatri–Rao pair and both shifts, from integers (FLINT objects do not
    pickle; :mod:`~exactnorm.exact.parallel`). Returns the drawn matrices, records, γ, the
    hidden layer's shift ``β_t``, the block shift ``c_t`` and the witness."""
    g: ConvGeometry = task["geometry"]
    cols, patch, t = task["cols"], task["patch"], task["t"]
    W_t = unpack_matrix(task["W"])
    W_t = W_t if isinstance(W_t, fmpq_mat) else fmpq_mat(W_t)
    lo, hi = _vector(task["lo"]), _vector(task["hi"])
    solved = solve_pair(W_t, seed=task["seed"], layer=task["index"], offset=2 * t - 1,
                        distribution=task["distribution"], retry=task["retry"],
                        solver=task["solver"], solve_jobs=task["solve_jobs"],
                        columns=(patch, cols))
    pair = solved.pair
    m = pair.V_in.nrows()
    c_out = W_t.nrows()
    gamma = tuple(solved.gamma.entries())
    family = task["stability"] or stability_family(m, g)
    packed_hull = task.get("hull")
    hull = None if packed_hull is None else (_vector(packed_hull[0]), _vector(packed_hull[1]))
    beta_in = channel_shift(gamma, pair.stored_in, g, lo, hi, task["shift_mode"], family, hull)
    # the block's map on the whole patch: W'_t on its columns, structural zeros elsewhere
    W_full = fmpq_mat(c_out, patch)
    for r in range(c_out):
        for j, c in enumerate(cols):
            W_full[r, c] = W_t[r, j]
    out_family = task["stability"] or stability_family(c_out, g)
    c_t = channel_shift(tuple(fmpq(1) for _ in range(c_out)), W_full, g, lo, hi,
                        task["shift_mode"], out_family, hull)
    return {"m": m, "cols": cols, "stored_in": pack_matrix(pair.stored_in),
            "record_in": pair.record_in, "V_out": pack_matrix(pair.V_out),
            "record_out": pair.record_out, "gamma": [pack_q(x) for x in gamma],
            "beta_in": [pack_q(x) for x in beta_in], "c_t": [pack_q(x) for x in c_t],
            "family": family, "out_family": out_family, "attempt": solved.attempt,
            "gamma_bits": max_bits(solved.gamma),
            "witness": {"block": t, "channels": sorted({c // (patch // g.input_shape[0])
                                                        for c in cols}),
                        "system": "V_in^T khatri_rao V_out", "system_size": m, "rank": m,
                        "prime": solved.prime, "rank_mod_prime": solved.rank_mod_prime,
                        "stream_key": list(solved.stream.key),
                        "singular_draws": solved.failures}}
