"""Width/depth trade-off: layers of width about d_out·k, input blocks of size k (SPEC §2.3).

The source gives only keywords ("input partitioned into blocks of size k", "blocks passed to
different layers through skip connections", "random matrix A_i projects input", "final linear
layer"); the layout below is exactnorm's design. For target layer ``i`` (``d_in → d_out``) split
the input coordinates into blocks ``S_1 … S_T`` of size ``k`` (the last may be shorter):

1. Draw a final frozen ``V_F`` (d_out × d_out) and prove it invertible exactly; the blocks then
   realize ``W'_t = V_F⁻¹ W[:, S_t]``.
2. For each block ``t`` a Theorem-1 pair
   (:func:`~exactnorm.constructions.theorem1.realize_layer_theorem1`) on the Khatri–Rao system of
   size ``d_out·|S_t|`` realizes ``relu(W'_t a_{S_t} + c_t)``, with ``c_t`` the smallest shift
   making it non-negative on the box (so the ReLU is the identity there), plus a declared
   ``identity`` skip from the previous block's output: an accumulator
   ``O_t = Σ_{u ≤ t} (W'_u a_{S_u} + c_u)``. The pair must see ``a_{S_t}`` only, so that its
   system has ``d_out·|S_t|`` unknowns; two ways (``routing``):

   * ``"selection"`` (default): a *routing* layer of width ``|S_t|`` before the pair, whose own
     ``γ = β = 0`` (output 0, a stable ReLU) and whose declared 0/1 ``selection`` skip copies
     ``a_{S_t}`` out of the previous checkpoint. Every frozen ``V`` is a dense random matrix.
     Depth ``3T + 1``.
   * ``"mask"``: the pair's hidden layer reads the previous checkpoint directly through a frozen
     random ``V`` whose columns outside ``S_t`` are structural zeros (a block mask, declared in
     the witnesses). No routing layers: depth ``2T + 1``.
3. The checkpoint layer reads ``O_T`` through ``V_F`` with ``γ = 1`` and
   ``β = b − V_F Σ_t c_t``: its pre-activation is ``V_F V_F⁻¹ W a + b = W a + b``.

Width ``max(d_out·k, d_out)``. With ``k ≥ d_in`` there is one block and the construction *is*
Theorem 1 (two layers, widths ``d_in·d_out, d_out``).

>>> from exactnorm.model.targets import random_target
>>> g = random_target((5, 2), seed=0, activations=["identity"])
>>> c = certify_tradeoff(g, block=2, seed=0)
>>> c.network.widths
(2, 4, 2, 2, 4, 2, 1, 2, 2, 2)
>>> c.network.evaluate((1, 0, -1, 0, 1)) == g.evaluate((1, 0, -1, 0, 1))
True
>>> certify_tradeoff(g, block=2, seed=0, routing="mask").network.widths
(4, 2, 4, 2, 2, 2, 2)
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from flint import fmpq, fmpq_mat, fmpz_mat

from exactnorm.constructions.common import DEFAULT_RETRY, Construction, LayerReport, provenance
from exactnorm.constructions.theorem1 import ProgressHook, realize_layer_theorem1
from exactnorm.errors import InputError, SingularSystemError
from exactnorm.exact.generator import draw
from exactnorm.exact.linalg import FlintMatrix, exact_rank, max_bits, solve_exact
from exactnorm.exact.sampling import DEFAULT_DISTRIBUTION, Distribution, parse_distribution
from exactnorm.exact.streams import WHOLE_LAYER, Part, StreamKey
from exactnorm.model.network import FrozenLayer, FrozenNetwork, Skip, TargetNetwork, affine_interval

__all__ = ["input_blocks", "certify_tradeoff", "ROUTINGS"]

#: how a block's Khatri–Rao pair is made to see only its block of inputs (see module doc)
ROUTINGS = ("selection", "mask")


def input_blocks(d_in: int, k: int) -> list[list[int]]:
    """Consecutive blocks of size ``k`` covering ``0 … d_in−1``; the last may be shorter.

    >>> input_blocks(5, 2)
    [[0, 1], [2, 3], [4]]
    """
    if k < 1:
        raise InputError(f"block size must be at least 1, got {k}")
    return [list(range(s, min(s + k, d_in))) for s in range(0, d_in, k)]


def _selection(rows: list[int], d: int) -> fmpz_mat:
    return fmpz_mat([[1 if c == r else 0 for c in range(d)] for r in rows])


def _final_matrix(seed: int, layer: int, d_out: int, dist: Distribution,
                  retry: int) -> tuple[FlintMatrix, dict[str, Any], int]:
    """``V_F`` of target layer ``layer``, its draw record and the attempt that was invertible."""
    for attempt in range(retry + 1):
        stream = StreamKey(layer, WHOLE_LAYER, Part.FINAL, attempt)
        V, record = draw(seed, stream.key, d_out, d_out, dist)
        if exact_rank(V) == d_out:
            return V, record, attempt
    rank = exact_rank(V)
    raise SingularSystemError(f"final frozen matrix of target layer {layer} is singular: exact "
                              f"rank {rank} < {d_out} after {retry + 1} draw(s)",
                              rank=rank, size=d_out, layer=layer)


def certify_tradeoff(target: TargetNetwork, *, block: int, seed: int = 0,
                     distribution: str | Distribution = DEFAULT_DISTRIBUTION,
                     retry: int = DEFAULT_RETRY, shift_mode: str = "neuron",
                     routing: str = "selection",
                     progress: ProgressHook | None = None) -> Construction:
    """Realize ``target`` with blocks of ``block`` inputs per Khatri–Rao system (see module doc).

    Parameters
    ----------
    target : TargetNetwork
    block : int
        Block size ``k``; ``k ≥ d_in`` gives Theorem 1 for that layer.
    seed, distribution, retry, shift_mode
        As in :func:`~exactnorm.constructions.theorem1.certify_theorem1`; block ``t`` of target
        layer ``i`` draws from :class:`~exactnorm.exact.streams.StreamKey` ``(i, t, part,
        attempt)`` (``t`` from 1; ``V_F`` is block 0, part ``FINAL``).
    routing : {"selection", "mask"}
        How a block's pair sees only its inputs: a routing layer with a declared ``selection``
        skip (depth ``3T + 1``), or a block-masked frozen ``V`` (depth ``2T + 1``).

    Returns
    -------
    Construction
    """
    dist = parse_distribution(distribution)
    if isinstance(block, bool) or not isinstance(block, int) or block < 1:
        raise InputError(f"--block must be a positive integer, got {block!r}")
    if routing not in ROUTINGS:
        raise InputError(f"routing must be one of {', '.join(ROUTINGS)}, got {routing!r}")
    if isinstance(retry, bool) or not isinstance(retry, int) or retry < 0:
        raise InputError(f"--retry must be a non-negative integer, got {retry!r}")
    boxes = target.interval_boxes()
    layers: list[FrozenLayer] = []
    reports: list[LayerReport] = []
    checkpoints: list[int] = []
    for i, tl in enumerate(target.layers, 1):
        t0 = time.perf_counter()
        d_out, d_in = tl.shape
        lo, hi = boxes[i - 1]
        start = len(layers)  # node index of the previous checkpoint
        blocks = input_blocks(d_in, block)
        if len(blocks) == 1:
            pair, rep = realize_layer_theorem1(
                tl.weight, tl.bias, tl.activation, (lo, hi), seed=seed, layer=i, block=1,
                input_node=start, distribution=dist, retry=retry, shift_mode=shift_mode)
            layers.extend(pair)
            checkpoints.append(len(layers))
            reports.append(dataclasses.replace(rep, layer=i, seconds=time.perf_counter() - t0))
            if progress is not None:
                progress(i, target.depth)
            continue
        V_F, final_record, final_attempt = _final_matrix(seed, i, d_out, dist, retry)
        W_prime = solve_exact(V_F, tl.weight)  # V_F⁻¹ W, exact
        shifts_total = [fmpq(0)] * d_out
        accumulator: int | None = None
        sub_reports = []
        structural_zeros = 0
        for t, S in enumerate(blocks, 1):
            Wt = fmpq_mat([[W_prime[r, c] for c in S] for r in range(d_out)])
            box_S = (tuple(lo[c] for c in S), tuple(hi[c] for c in S))
            mins, _ = affine_interval(Wt, [fmpq(0)] * d_out, *box_S)
            c_t = tuple(-m for m in mins)
            if routing == "selection":
                zeros = tuple(fmpq(0) for _ in S)
                routing_V, routing_record = draw(seed, StreamKey(i, t, Part.ROUTING).key,
                                                 len(S), d_in, dist)
                layers.append(FrozenLayer(start, routing_V, zeros, zeros, "relu",
                                          (Skip(start, _selection(S, d_in), "selection"),),
                                          record=routing_record))
                pair_input = len(layers)  # the routing node equals a_{S_t}
            else:
                pair_input = start
            pair, rep = realize_layer_theorem1(
                Wt, c_t, "relu", box_S, seed=seed, layer=i, block=t,
                input_node=pair_input, distribution=dist, retry=retry, shift_mode=shift_mode,
                columns=(d_in, S) if routing == "mask" else None)
            hidden, out = pair
            if routing == "mask":
                # the hidden V is an m × d_in draw whose columns outside S_t are structural zeros
                # (declared in its record); they add nothing to the pre-activation, so γ and the
                # shift are those of the m × |S_t| system
                structural_zeros += hidden.width * (d_in - len(S))
            out = dataclasses.replace(out, input=len(layers) + 1)
            if accumulator is not None:
                out = dataclasses.replace(out, skips=(Skip(accumulator, fmpz_mat(
                    [[1 if r == c else 0 for c in range(d_out)] for r in range(d_out)]),
                    "identity"),))
            layers.extend([hidden, out])
            accumulator = len(layers)
            shifts_total = [s + c for s, c in zip(shifts_total, c_t)]
            sub_reports.append(rep)
        Vc = V_F * fmpq_mat([[s] for s in shifts_total])
        beta_F = tuple(tl.bias[r] - Vc[r, 0] for r in range(d_out))
        ones = tuple(fmpq(1) for _ in range(d_out))
        layers.append(FrozenLayer(accumulator, V_F, ones, beta_F, tl.activation,
                                  record=final_record))
        checkpoints.append(len(layers))
        widths = tuple(layer.width for layer in layers[start:])
        reports.append(LayerReport(
            layer=i, d_in=d_in, d_out=d_out, widths=widths, systems=len(sub_reports),
            system_size=max(r.system_size for r in sub_reports),
            rank=sum(r.rank for r in sub_reports),
            gamma_bits=max(r.gamma_bits for r in sub_reports),
            beta_bits=max(max(r.beta_bits for r in sub_reports),
                          max_bits(fmpq_mat([list(beta_F)]))),
            attempts=sum(r.attempts for r in sub_reports) + final_attempt + 1,
            seconds=time.perf_counter() - t0,
            witness={"layer": i, "block": block, "routing": routing,
                     "blocks": [list(S) for S in blocks], "structural_zeros": structural_zeros,
                     "final_matrix_rank": d_out, "final_attempt": final_attempt,
                     "systems": [r.witness for r in sub_reports]}))
        if progress is not None:
            progress(i, target.depth)
    network = FrozenNetwork(target.widths[0], tuple(layers), tuple(checkpoints))
    extra: dict[str, Any] = {"block": block, "routing": routing, "shift_mode": shift_mode,
                             "retry": retry}
    return Construction(
        name="tradeoff", target=target, network=network, reports=reports,
        provenance=provenance("tradeoff", seed, dist.spec, **extra),
        witnesses={"layers": [r.witness for r in reports]},
    )
