"""Width/depth trade-off: layers of width about d_out·k, input blocks of size k
(docs/constructions.md).

The source gives only keywords ("input partitioned into blocks of size k", "blocks passed to
different layers through skip connections", "random matrix A_i projects input", "final linear
layer"); the layout below is exactnorm's design. For target layer ``i`` (``d_in → d_out``) split
the input coordinates into blocks ``S_1 … S_T`` of size ``k`` (the last may be shorter):

1. Draw a final frozen ``V_F`` (d_out × d_out) and prove it invertible exactly; the blocks then
   realize ``W'_t = V_F⁻¹ W[:, S_t]``.
2. For each block ``t`` a Theorem-1 pair
   (:func:`~exactnorm.constructions.theorem1.realize_layer_theorem1`) on the Khatri–Rao system of
   size ``d_out·|S_t|`` realizes ``relu(W'_t a_{S_t} + c_t)``, with ``c_t`` a shift making it
   non-negative on the box (so the ReLU is the identity there; by default the smallest integer
   one, see ``shift_mode``), plus a declared
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
import functools
import time
from typing import Any

from flint import fmpq, fmpq_mat, fmpz_mat

from exactnorm.constructions.common import (
    DEFAULT_RETRY,
    Construction,
    LayerReport,
    activating_shift,
    cancelling_bias,
    provenance,
)
from exactnorm.constructions.theorem1 import ProgressHook, realize_layer_theorem1
from exactnorm.errors import InputError, SingularSystemError, require_integer
from exactnorm.exact.generator import draw, redraw_refusal
from exactnorm.exact.linalg import (
    FlintMatrix,
    clear_denominators,
    exact_rank,
    kernel_vector,
    max_bits,
)
from exactnorm.exact.parallel import (
    check_jobs,
    map_tasks,
    pack_matrix,
    pack_q,
    unpack_matrix,
    unpack_q,
)
from exactnorm.exact.sampling import (
    DEFAULT_DISTRIBUTION,
    Distribution,
    parse_distribution,
)
from exactnorm.exact.streams import WEIGHT, StreamKey
from exactnorm.model.network import FrozenLayer, FrozenNetwork, Skip, TargetNetwork
from exactnorm.model.operators.dense import Dense, dense_layers

__all__ = ["input_blocks", "certify_tradeoff", "final_matrix", "left_divide", "ROUTINGS",
           "DEFAULT_SHIFT_MODE"]

#: how a block's Khatri–Rao pair is made to see only its block of inputs (see module doc)
ROUTINGS = ("selection", "mask")
#: block shifts are internal (the final layer cancels their sum): integers keep them small
DEFAULT_SHIFT_MODE = "integer"


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


def final_matrix(seed: int, layer: int, offset: int, d_out: int, dist: Distribution,
                  retry: int, singular: list[dict[str, Any]]
                  ) -> tuple[FlintMatrix, dict[str, Any], int]:
    """``V_F`` of target layer ``layer`` (the last frozen layer of its segment, at ``offset``),
    its draw record and the attempt that was invertible; every singular attempt before it is
    appended to ``singular`` with a kernel vector (the checker accepts a redraw only after draws
    shown singular)."""
    for attempt in range(retry + 1):
        stream = StreamKey(layer, offset, WEIGHT, attempt)
        V, record = draw(seed, stream.key, d_out, d_out, dist)
        if exact_rank(V) == d_out:
            return V, record, attempt
        singular.append({"attempt": attempt, "key": list(stream.key),
                         "kernel": kernel_vector(V)})
        refusal = redraw_refusal(record)
        if refusal is not None:  # every attempt would be singular: no redraw is accepted
            rank = exact_rank(V)
            raise SingularSystemError(f"final frozen matrix of target layer {layer} is singular: "
                                      f"exact rank {rank} < {d_out}; it {refusal}, so no "
                                      f"redraw can help: change the distribution",
                                      rank=rank, size=d_out, layer=layer)
    rank = exact_rank(V)
    raise SingularSystemError(f"final frozen matrix of target layer {layer} is singular: exact "
                              f"rank {rank} < {d_out} after {retry + 1} draw(s)",
                              rank=rank, size=d_out, layer=layer)


def certify_tradeoff(target: TargetNetwork, *, block: int, seed: int = 0,
                     distribution: str | Distribution = DEFAULT_DISTRIBUTION,
                     retry: int = DEFAULT_RETRY, shift_mode: str = DEFAULT_SHIFT_MODE,
                     routing: str = "selection", progress: ProgressHook | None = None,
                     jobs: int = 1, scheduler: Any = None,
                     first_layer: int = 1) -> Construction:
    """Realize ``target`` with blocks of ``block`` inputs per Khatri–Rao system (see module doc).

    Parameters
    ----------
    target : TargetNetwork
    block : int
        Block size ``k``; ``k ≥ d_in`` gives Theorem 1 for that layer.
    shift_mode : {"integer", "neuron", "layer"}
        How the activating shifts of the blocks' hidden layers and the block shifts ``c_t`` are
        chosen (:func:`~exactnorm.constructions.common.activating_shift`). The default
        ``"integer"`` rounds them up to integers: every β of a block except the hidden layer's
        Γ-sized scale is then a small integer, which at 784-128-10 makes the certificate 3 times
        smaller and its check faster (docs/performance.md); ``"neuron"`` gives the smallest
        exact shifts.
    seed, distribution, retry
        As in :func:`~exactnorm.constructions.theorem1.certify_theorem1`; block ``t`` of target
        layer ``i`` draws from :class:`~exactnorm.exact.streams.StreamKey` ``(i, offset, role,
        attempt)`` of their positions: block ``t`` (from 1) stands at offsets ``3t − 2 … 3t``
        of the segment (``2t − 1, 2t`` with masked routing) and ``V_F`` last.
    routing : {"selection", "mask"}
        How a block's pair sees only its inputs: a routing layer with a declared ``selection``
        skip (depth ``3T + 1``), or a block-masked frozen ``V`` (depth ``2T + 1``).
    progress : callable(done, total), optional
        Called after each block system (all target layers together).
    jobs : int
        Processes solving block systems. Given the target's interval boxes and ``V_F⁻¹ W``, every
        block of every layer is independent (:mod:`~exactnorm.exact.parallel`); the
        certificate is byte-identical for every ``jobs`` and backend.
    scheduler : str or distributed.Client, optional
        Solve the blocks as Dask tasks on this cluster instead of local processes.
    first_layer : int
        Number of ``target``'s first layer in the stream keys and reports (``target`` is then
        the tail of a longer network, e.g. the dense head of a convolutional one).

    Returns
    -------
    Construction

    Raises
    ------
    SingularSystemError
        When a block system or a final matrix stays singular after ``retry`` redraws.
    """
    dist = parse_distribution(distribution)
    require_integer(block, "block", minimum=1)
    if routing not in ROUTINGS:
        raise InputError(f"routing must be one of {', '.join(ROUTINGS)}, got {routing!r}",
                         parameter="routing")
    require_integer(retry, "retry")
    check_jobs(jobs)
    dense = dense_layers(target.layers, "construction tradeoff")
    boxes = target.interval_boxes()
    options = {"seed": seed, "distribution": dist.spec, "retry": retry,
               "shift_mode": shift_mode, "routing": routing}
    # every block of every layer as an integer task; the final matrices are solved here first
    tasks: list[dict[str, Any]] = []
    finals: list[tuple[FlintMatrix, dict[str, Any], int, list[dict[str, Any]]] | None] = []
    for i, tl in enumerate(dense, first_layer):
        d_out, d_in = tl.shape
        lo, hi = boxes[i - first_layer]
        blocks = input_blocks(d_in, block)
        per = 3 if routing == "selection" else 2
        if len(blocks) == 1:
            finals.append(None)
            tasks.append({"layer": i, "block": 1, "offset": 1, "W": pack_matrix(tl.weight),
                          "b": [pack_q(x) for x in tl.bias], "activation": tl.activation,
                          "S": blocks[0], "d_in": d_in, "lo": [pack_q(x) for x in lo],
                          "hi": [pack_q(x) for x in hi], "whole": True, **options})
            continue
        final_singular: list[dict[str, Any]] = []
        V_F, final_record, final_attempt = final_matrix(seed, i, per * len(blocks) + 1, d_out,
                                                         dist, retry, final_singular)
        finals.append((V_F, final_record, final_attempt, final_singular))
        W_prime = left_divide(V_F, tl.weight)  # V_F⁻¹ W, exact
        for t, S in enumerate(blocks, 1):
            tasks.append({"layer": i, "block": t, "offset": per * (t - 1) + 1, "d_in": d_in,
                          "S": S, "whole": False,
                          "W": pack_matrix(fmpq_mat([[W_prime[r, c] for c in S]
                                                      for r in range(d_out)])),
                          "lo": [pack_q(lo[c]) for c in S], "hi": [pack_q(hi[c]) for c in S],
                          **options})
    if progress is not None:
        progress(0, len(tasks))  # the total from the start, before the first block
    results = map_tasks(_realize_block, tasks, jobs=jobs, scheduler=scheduler)
    layers: list[FrozenLayer] = []
    reports: list[LayerReport] = []
    checkpoints: list[int] = []
    done = 0
    for i, tl in enumerate(dense, first_layer):
        t0 = time.perf_counter()
        d_out, d_in = tl.shape
        start = len(layers)  # node index of the previous checkpoint
        blocks = input_blocks(d_in, block)
        final = finals[i - first_layer]
        if final is None:
            packed = next(results)
            pair = _unpack_block_layers(packed, start)
            layers.extend(pair)
            checkpoints.append(len(layers))
            rep = packed["report"]
            reports.append(dataclasses.replace(rep, layer=i, seconds=rep.seconds))
            done += 1
            if progress is not None:
                progress(done, len(tasks))
            continue
        V_F, final_record, final_attempt, final_singular = final
        shifts_total = [fmpq(0)] * d_out
        accumulator: int | None = None
        sub_reports = []
        structural_zeros = 0
        solve_seconds = 0.0
        for _t, _S in enumerate(blocks, 1):
            packed = next(results)
            new = _unpack_block_layers(packed, start)
            hidden, out = new[-2], new[-1]
            if routing == "selection":
                layers.append(new[0])
                pair_input = len(layers)  # the routing node equals a_{S_t}
            else:
                pair_input = start
                structural_zeros += hidden.width * (d_in - len(_S))
            hidden = dataclasses.replace(hidden, input=pair_input)
            out = dataclasses.replace(out, input=len(layers) + 1)
            if accumulator is not None:
                out = dataclasses.replace(out, skips=(Skip(accumulator, _identity(d_out),
                                                           "identity"),))
            layers.extend([hidden, out])
            accumulator = len(layers)
            c_t = _unpack_vector(packed["shift"])
            shifts_total = [s + c for s, c in zip(shifts_total, c_t)]
            sub_reports.append(packed["report"])
            solve_seconds += packed["report"].seconds
            done += 1
            if progress is not None:
                progress(done, len(tasks))
        beta_F = cancelling_bias(V_F, shifts_total, tl.bias)
        ones = tuple(fmpq(1) for _ in range(d_out))
        # at least two blocks ran (one block is the whole-layer case), so the accumulator exists
        assert accumulator is not None
        layers.append(FrozenLayer(accumulator, Dense(V_F), ones, beta_F, tl.activation,
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
            seconds=solve_seconds + time.perf_counter() - t0,
            system_ranks=tuple(p for r in sub_reports for p in r.per_system),
            witness={"layer": i, "block": block, "routing": routing,
                     "blocks": [list(S) for S in blocks], "structural_zeros": structural_zeros,
                     "final_matrix_rank": d_out, "final_attempt": final_attempt,
                     "final_singular_draws": final_singular,
                     "systems": [r.witness for r in sub_reports]}))
    network = FrozenNetwork(target.widths[0], tuple(layers), tuple(checkpoints))
    extra: dict[str, Any] = {"block": block, "routing": routing, "shift_mode": shift_mode,
                             "retry": retry}
    return Construction(
        name="tradeoff", target=target, network=network, reports=reports,
        provenance=provenance("tradeoff", seed, dist.spec, **extra),
        witnesses={"layers": [r.witness for r in reports]},
    )


@functools.lru_cache(maxsize=8)
def _identity(d: int) -> fmpz_mat:
    # one shared object per width: frozen matrices are never modified after construction
    return fmpz_mat([[1 if r == c else 0 for c in range(d)] for r in range(d)])


def _pack_vector(v: Any) -> tuple[list[int], int]:
    """Exact vector → (integer numerators, common denominator): one gcd pass in FLINT instead
    of a numerator/denominator pair per entry (the vectors of a block share most factors)."""
    if not v:
        return [], 1
    numer, den = clear_denominators(fmpq_mat([list(v)]))
    return [int(x) for x in numer.entries()], int(den)


def _unpack_vector(packed: tuple[list[int], int]) -> tuple[fmpq, ...]:
    nums, den = packed
    if not nums:
        return ()
    return tuple((fmpq_mat(fmpz_mat([nums])) / den).entries())


def left_divide(V: FlintMatrix, W: fmpq_mat) -> fmpq_mat:
    """``V⁻¹ W`` for an invertible integer ``V``: one inverse, then one integer product.

    ``V⁻¹ = A / a`` and ``W = N / n`` with integer ``A``, ``N``, so ``V⁻¹ W = (A N) / (a n)``;
    FLINT multiplies integer matrices fast, where a solve with hundreds of rational right-hand
    sides would lift each of them. Equal to ``solve_exact(V, W)`` (tested).
    """
    A, a = clear_denominators(fmpq_mat(V).inv())
    N, n = clear_denominators(W)
    return fmpq_mat(A * N) / (a * n)


# ------------------------------------------------------------ one block, in any process
# Tasks and results are integers (FLINT objects do not pickle); see exact.parallel.

def _realize_block(task: dict[str, Any]) -> dict[str, Any]:
    """Worker: one block system (or a whole single-block layer), rebuilt from integers.

    Returns the frozen layers with node indices relative to the previous checkpoint (the
    assembling process renumbers them), the block's activating shift ``c_t`` and its report.
    """
    dist = parse_distribution(task["distribution"])
    i, S, d_in, offset = task["layer"], task["S"], task["d_in"], task["offset"]
    W = unpack_matrix(task["W"])
    W = W if isinstance(W, fmpq_mat) else fmpq_mat(W)
    box = (tuple(unpack_q(x) for x in task["lo"]), tuple(unpack_q(x) for x in task["hi"]))
    out: list[FrozenLayer] = []
    if task["whole"]:
        pair, rep = realize_layer_theorem1(
            W, tuple(unpack_q(x) for x in task["b"]), task["activation"], box,
            seed=task["seed"], layer=i, offset=1, input_node=0, distribution=dist,
            retry=task["retry"], shift_mode=task["shift_mode"])
        return {"layers": [_pack_layer(fl) for fl in pair], "shift": ([], 1), "report": rep}
    c_t = activating_shift(W, *box, mode=task["shift_mode"])
    if task["routing"] == "selection":
        zeros = tuple(fmpq(0) for _ in S)
        routing_V, routing_record = draw(task["seed"], StreamKey(i, offset).key, len(S), d_in,
                                         dist)
        offset += 1
        out.append(FrozenLayer(0, Dense(routing_V), zeros, zeros, "relu",
                               (Skip(0, _selection(S, d_in), "selection"),),
                               record=routing_record))
    pair, rep = realize_layer_theorem1(
        W, c_t, "relu", box, seed=task["seed"], layer=i, offset=offset, input_node=0,
        distribution=dist, retry=task["retry"], shift_mode=task["shift_mode"],
        columns=(d_in, S) if task["routing"] == "mask" else None)
    hidden, second = pair
    if task["routing"] == "mask":
        # the hidden V is an m × d_in draw whose columns outside S_t are structural zeros
        # (declared in its record); they add nothing to the pre-activation, so γ and the
        # shift are those of the m × |S_t| system
        hidden = dataclasses.replace(hidden, drawn_columns=tuple(S))
    out.extend([hidden, second])
    return {"layers": [_pack_layer(fl) for fl in out], "shift": _pack_vector(c_t),
            "report": rep}


def _pack_layer(fl: FrozenLayer) -> dict[str, Any]:
    # draw records are plain JSON-like dicts: they travel between processes as they are
    return {"input": fl.input, "weight": pack_matrix(fl.weight),
            "gamma": _pack_vector(fl.gamma), "beta": _pack_vector(fl.beta),
            "activation": fl.activation, "record": fl.record, "drawn_columns": fl.drawn_columns,
            "skips": [(s.source, pack_matrix(s.weight), s.kind, s.record) for s in fl.skips]}


def _unpack_block_layers(packed: dict[str, Any], offset: int) -> list[FrozenLayer]:
    """The block's layers with node indices shifted by ``offset`` (the previous checkpoint)."""
    return [FrozenLayer(d["input"] + offset,
                        unpack_matrix(d["weight"]),
                        _unpack_vector(d["gamma"]), _unpack_vector(d["beta"]), d["activation"],
                        tuple(Skip(src + offset, unpack_matrix(w), kind, record=record)
                              for src, w, kind, record in d["skips"]),
                        record=d["record"], drawn_columns=d["drawn_columns"])
            for d in packed["layers"]]
