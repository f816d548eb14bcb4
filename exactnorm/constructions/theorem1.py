"""Theorem 1: each target layer is realized by two frozen random layers (widths d_in·d_out, d_out).

Statement (Giannou, Rajput, Papailiopoulos, COLT 2023, Theorem 1; docs/model.md). Let ``g`` have
layers ``σ_i(W_i a + b_i)`` on a bounded box. For frozen random ``V_{2i-1}`` (m × d_{i-1}) and
``V_{2i}`` (d_i × m) with ``m = d_{i-1}·d_i`` there are γ, β such that the network with layers
``σ(γ ⊙ V h + β)`` equals ``g`` on the box. Construction, per target layer ``i``:

1. ``K = V_{2i-1}ᵀ ⊙ V_{2i}`` (m × m, column-wise Khatri–Rao); solve ``K γ = vec(W_i)`` exactly
   (column-major vec), so ``V_{2i} diag(γ) V_{2i-1} = W_i``. ``K`` is invertible for almost every
   draw (Lemma 6); a singular draw raises :class:`~exactnorm.errors.SingularSystemError` with its
   exact rank and a kernel vector, or is redrawn under a new, recorded stream key (by default up
   to ``DEFAULT_RETRY`` times; ``retry=0`` is strict).
2. ``β_{2i-1}`` is the smallest shift making every neuron of layer ``2i−1`` non-negative on the
   exact interval box ``B_{i-1}`` of ``a_{i-1}``, so its ReLU is the identity there.
3. ``Γ_{2i} = I`` and ``β_{2i} = b_i − V_{2i} β_{2i-1}``: then ``u_{2i} = W_i a_{i-1} + b_i``.

>>> from exactnorm.model.targets import demo_target
>>> c = certify_theorem1(demo_target(), seed=0)
>>> c.network.widths
(12, 4, 12, 3, 6, 2)
>>> x = (0, 0, 1)
>>> c.network.evaluate(x) == c.target.evaluate(x)
True
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from flint import fmpq, fmpq_mat, fmpz_mat

from exactnorm.constructions.common import (
    DEFAULT_RETRY,
    Construction,
    LayerReport,
    cancelling_bias,
    provenance,
    scaled_activating_shift,
)
from exactnorm.errors import InputError, PadicUnavailable, SingularSystemError, require_integer
from exactnorm.exact.generator import draw, exact_probability, redraw_refusal
from exactnorm.exact.linalg import (
    FlintMatrix,
    clear_denominators,
    int64_array,
    khatri_rao_system,
    max_bits,
    random_prime,
    rank_mod_prime,
    solve_exact,
    vec,
)
from exactnorm.exact.padic import AUTO_MIN_SIZE, solve_khatri_rao
from exactnorm.exact.parallel import map_tasks, pack_matrix, pack_q, unpack_matrix, unpack_q
from exactnorm.exact.sampling import (
    DEFAULT_DISTRIBUTION,
    Distribution,
    layer_rng,
    parse_distribution,
)
from exactnorm.exact.streams import WEIGHT, StreamKey
from exactnorm.model.network import FrozenLayer, FrozenNetwork, TargetNetwork, Vector
from exactnorm.model.operators.dense import Dense, dense_layers

__all__ = ["certify_theorem1", "realize_layer_theorem1", "draw_pair", "draw_frozen_pair",
           "FrozenPair", "SolvedPair", "solve_pair"]

ProgressHook = Callable[[int, int], None]


@dataclass(frozen=True)
class FrozenPair:
    """One Khatri–Rao pair as drawn: the system's ``V_in`` (m × d_in), ``V_out`` (d_out × m),
    the matrix the first layer stores (``V_in`` itself, or ``V_in`` on ``columns`` of a wider
    zero matrix) and both draw records."""

    V_in: FlintMatrix
    V_out: FlintMatrix
    stored_in: FlintMatrix
    record_in: dict[str, Any]
    record_out: dict[str, Any]


def draw_frozen_pair(seed: int, stream: StreamKey, d_in: int, d_out: int, m: int,
                     dist: Distribution, sparsity: Any = None, mask_side: str = "both",
                     columns: tuple[int, Sequence[int]] | None = None) -> FrozenPair:
    """The frozen pair whose first layer stands at ``stream`` (segment, offset, attempt), with
    its draw records.

    ``V_in`` draws from ``stream`` (the weight of its layer), ``V_out`` from the weight of the next
    layer of the segment, same attempt (:meth:`StreamKey.next_layer`); with ``sparsity = p`` (an
    exact keep probability; a float means its decimal value) the masked sides multiply by
    Bernoulli(p) masks drawn from their matrices' mask keys (docs/sparse.md). With
    ``columns = (d, S)`` the first matrix is an m × d draw whose columns outside ``S`` are
    structural zeros (masked routing); the system uses its columns ``S``.
    """
    if mask_side not in ("input", "output", "both"):
        raise InputError(f"mask_side must be input, output or both, got {mask_side!r}",
                         parameter="mask_side")
    p = exact_probability(sparsity) if sparsity is not None else None
    mask_in = p if p is not None and mask_side in ("input", "both") else None
    mask_out = p if p is not None and mask_side in ("output", "both") else None
    key_in = stream
    key_out = stream.next_layer()
    if columns is None:
        stored_in, rec_in = draw(seed, key_in.key, m, d_in, dist, mask_p=mask_in,
                                 mask_key=key_in.mask_key)
        V_in = stored_in
    else:
        width, S = columns
        stored_in, rec_in = draw(seed, key_in.key, m, width, dist, columns=list(S))
        sub: list[list[Any]] = [[row[c] for c in S] for row in stored_in.tolist()]
        V_in = type(stored_in)(sub) if m and len(S) else type(stored_in)(m, len(S))
    V_out, rec_out = draw(seed, key_out.key, d_out, m, dist, mask_p=mask_out,
                          mask_key=key_out.mask_key)
    return FrozenPair(V_in, V_out, stored_in, rec_in, rec_out)


def draw_pair(seed: int, layer: int, attempt: int, d_in: int, d_out: int, m: int,
              dist: Distribution, sparsity: Any = None,
              mask_side: str = "both") -> tuple[FlintMatrix, FlintMatrix]:
    """The frozen pair ``(V_in, V_out)`` of shapes m×d_in and d_out×m of target layer ``layer``.

    Exactly the matrices :func:`certify_theorem1` draws for that layer and attempt (streams
    ``StreamKey(layer, 1, WEIGHT, attempt)`` and its next layer, see :func:`draw_frozen_pair`).
    """
    pair = draw_frozen_pair(seed, StreamKey(layer, 1, WEIGHT, attempt), d_in, d_out, m, dist,
                            sparsity, mask_side)
    return pair.V_in, pair.V_out


def _solve_layer(V_in: FlintMatrix, V_out: FlintMatrix, rhs: FlintMatrix, prime: int,
                 prime_rng: np.random.Generator, prime_bits: int, *, stream: StreamKey,
                 is_integer: bool, witness_prime: bool, solver: str,
                 solve_jobs: int) -> tuple[fmpq_mat, int | None]:
    """``γ`` with ``K γ = rhs`` and the rank of ``K`` modulo ``prime`` (or ``None``).

    ``solver="padic"`` (or ``"auto"`` from m = 200 on): Dixon lifting on the Khatri–Rao structure
    (:mod:`~exactnorm.exact.padic`) for integer weights; ``K`` invertible modulo ``prime`` is part
    of that computation, so the rank-mod-p witness (``m``) costs nothing. Whenever the fast path
    does not apply (rational weights, large entries, ``K`` singular modulo ``prime``) the general
    FLINT solve decides, exactly as with ``solver="flint"`` — a singular draw raises
    :class:`SingularSystemError` with its exact rank and a kernel vector.
    """
    m = rhs.nrows()
    square = V_in.ncols() * V_out.nrows() == m == V_in.nrows()
    wanted = solver == "padic" or (solver == "auto" and m >= AUTO_MIN_SIZE)
    if wanted and is_integer and square and isinstance(V_in, fmpz_mat) \
            and isinstance(V_out, fmpz_mat) and m:
        rz, rden = clear_denominators(rhs)
        primes = [prime]
        if solve_jobs >= 2:
            second = random_prime(prime_bits, prime_rng)
            while second == prime:
                second = random_prime(prime_bits, prime_rng)
            primes.append(second)
        try:
            entries = solve_khatri_rao(int64_array(V_in), int64_array(V_out),
                                       [int(x) for x in rz.entries()], primes, jobs=solve_jobs)
        except (PadicUnavailable, OverflowError):
            pass
        else:
            gamma_col = fmpq_mat(m, 1, entries)
            if rden != 1:
                gamma_col = gamma_col * fmpq(1, int(rden))
            return gamma_col, m
    K = khatri_rao_system(V_in, V_out)
    gamma_col = solve_exact(K, rhs, layer=stream.segment, where=stream.where())
    witness = rank_mod_prime(K, prime) if is_integer and witness_prime else None
    return gamma_col, witness



@dataclass(frozen=True)
class SolvedPair:
    """A drawn Khatri–Rao pair with ``V_out·diag(γ)·V_in = W`` exactly (before any shift)."""

    pair: FrozenPair
    gamma: fmpq_mat
    attempt: int
    failures: list[dict[str, Any]]
    stream: StreamKey
    prime: int
    rank_mod_prime: int | None


def solve_pair(W: fmpq_mat, *, seed: int, layer: int, offset: int = 1,
               distribution: str | Distribution = DEFAULT_DISTRIBUTION,
               retry: int = DEFAULT_RETRY, sparsity: Any = None, mask_side: str = "both",
               prime_bits: int = 60, witness_prime: bool = True, solver: str = "auto",
               solve_jobs: int = 1,
               columns: tuple[int, Sequence[int]] | None = None) -> SolvedPair:
    """Draw the pair whose first layer is layer ``offset`` of segment ``layer`` and solve
    ``K γ = vec(W)``, redrawing a singular draw up to ``retry`` times (step 1 of
    :func:`realize_layer_theorem1`, which documents the parameters); the shifts are the
    caller's."""
    if solver not in ("auto", "padic", "flint"):
        raise InputError(f"solver must be auto, padic or flint, got {solver!r}",
                         parameter="solver")
    dist = parse_distribution(distribution)
    d_out, d_in = W.nrows(), W.ncols()
    m = d_in * d_out
    rhs = vec(W, "F")
    failures: list[dict[str, Any]] = []
    for attempt in range(retry + 1):
        stream = StreamKey(layer, offset, WEIGHT, attempt)
        pair = draw_frozen_pair(seed, stream, d_in, d_out, m, dist, sparsity, mask_side, columns)
        prime_rng = layer_rng(seed, *stream.prime_key)
        prime = random_prime(prime_bits, prime_rng)
        try:
            gamma_col, rank_mod_p = _solve_layer(
                pair.V_in, pair.V_out, rhs, prime, prime_rng, prime_bits, stream=stream,
                is_integer=dist.is_integer, witness_prime=witness_prime, solver=solver,
                solve_jobs=solve_jobs)
        except SingularSystemError as exc:
            failures.append({"attempt": attempt, "rank": exc.rank, "size": exc.size,
                             "key": list(stream.key), "kernel": exc.kernel})
            refusal = redraw_refusal(pair.record_in, pair.record_out,
                                     None if columns is None else columns[1])
            if refusal is not None:  # every attempt would be singular: no redraw is accepted
                exc.args = (f"{exc.args[0]} (seed {seed}); the pair {refusal}, so no redraw "
                            f"can help: change the mask or the distribution",)
                raise
            if attempt == retry:
                exc.args = (f"{exc.args[0]} after {retry + 1} draw(s) (seed {seed}); "
                            f"pass a larger --retry N to redraw with recorded stream keys",)
                raise
            continue
        return SolvedPair(pair, gamma_col, attempt, failures, stream, prime, rank_mod_p)
    raise InputError(f"retry must be non-negative, got {retry}", parameter="retry")


def realize_layer_theorem1(
    W: fmpq_mat, b: Sequence[fmpq], activation: str, box: tuple[Vector, Vector], *,
    seed: int, layer: int, input_node: int, distribution: str | Distribution = DEFAULT_DISTRIBUTION,
    retry: int = DEFAULT_RETRY, shift_mode: str = "neuron", sparsity: Any = None,
    mask_side: str = "both", prime_bits: int = 60, witness_prime: bool = True,
    solver: str = "auto", solve_jobs: int = 1, offset: int = 1,
    columns: tuple[int, Sequence[int]] | None = None,
) -> tuple[list[FrozenLayer], LayerReport]:
    """Two frozen layers equal to ``σ(W a + b)`` for every ``a`` in ``box`` (Lemma 7).

    Returns the two :class:`FrozenLayer` objects (reading from ``input_node``, each carrying the
    draw record of its frozen matrix) and a report with the exact rank, a rank-mod-prime witness
    and bit sizes. ``layer`` is the target layer (the segment) and ``offset`` the position of
    the pair's first frozen layer in that segment (:mod:`~exactnorm.exact.streams`); attempt ``t``
    draws from ``StreamKey(layer, offset, WEIGHT, t)`` and the next layer's key. ``columns`` is
    passed to :func:`draw_frozen_pair` (masked routing).

    ``solver`` chooses how ``K γ = vec(W)`` is solved: ``"auto"`` (p-adic lifting on the
    Khatri–Rao structure for integer weights and m ≥ 200, FLINT otherwise), ``"padic"`` (p-adic
    whenever it applies) or ``"flint"`` (``fmpz_mat.solve`` always). The solution is unique, so
    the choice never changes the result.
    ``solve_jobs = 2`` splits the lifting over two processes. ``witness_prime = False`` skips the
    separate rank-mod-p elimination on the FLINT path (recorded as ``null``); the p-adic path
    proves full rank modulo the prime as part of the solve.
    """
    if solver not in ("auto", "padic", "flint"):
        raise InputError(f"solver must be auto, padic or flint, got {solver!r}",
                         parameter="solver")
    t0 = time.perf_counter()
    d_out, d_in = W.nrows(), W.ncols()
    m = d_in * d_out
    solved = solve_pair(W, seed=seed, layer=layer, offset=offset, distribution=distribution,
                        retry=retry, sparsity=sparsity, mask_side=mask_side,
                        prime_bits=prime_bits, witness_prime=witness_prime, solver=solver,
                        solve_jobs=solve_jobs, columns=columns)
    pair, gamma_col, attempt, failures = solved.pair, solved.gamma, solved.attempt, \
        solved.failures
    V_in, V_out, stream, prime, rank_mod_p = pair.V_in, pair.V_out, solved.stream, \
        solved.prime, solved.rank_mod_prime
    gamma = tuple(gamma_col.entries())
    beta_in = scaled_activating_shift(gamma, V_in, *box, mode=shift_mode)
    beta_out = cancelling_bias(V_out, beta_in, b)
    ones = tuple(fmpq(1) for _ in range(d_out))
    first = FrozenLayer(input_node, Dense(pair.stored_in), gamma, beta_in, "relu",
                        record=pair.record_in)
    second = FrozenLayer(input_node + 1, Dense(V_out), ones, beta_out, activation,
                         record=pair.record_out)
    witness = {
        "layer": layer,
        "offset": offset,
        "system": "V_in^T khatri_rao V_out",
        "system_size": m,
        "rank": m,
        "prime": prime,
        "rank_mod_prime": rank_mod_p,
        "stream_key": list(stream.key),
        "singular_draws": failures,
    }
    report = LayerReport(
        layer=layer, d_in=d_in, d_out=d_out, widths=(m, d_out), systems=1, system_size=m,
        rank=m, gamma_bits=max_bits(gamma_col),
        beta_bits=max(max_bits(fmpq_mat([list(beta_in)])), max_bits(fmpq_mat([list(beta_out)]))),
        attempts=attempt + 1, seconds=time.perf_counter() - t0, witness=witness,
    )
    return [first, second], report


def certify_theorem1(target: TargetNetwork, *, seed: int = 0,
                     distribution: str | Distribution = DEFAULT_DISTRIBUTION,
                     retry: int = DEFAULT_RETRY, shift_mode: str = "neuron", sparsity: Any = None,
                     mask_side: str = "both",
                     progress: ProgressHook | None = None, jobs: int = 1,
                     solver: str = "auto", witness_prime: bool = True,
                     first_layer: int = 1) -> Construction:
    """Realize ``target`` by Theorem 1: depth 2L, widths d_{i-1}·d_i and d_i alternating.

    Parameters
    ----------
    target : TargetNetwork
    seed : int
        Frozen weights of target layer ``i``, attempt ``t`` come from the streams
        ``StreamKey(i, 1, WEIGHT, t)`` and ``StreamKey(i, 2, WEIGHT, t)`` (their positions) of
        generator ``exactnorm.shake256.v1``.
    distribution : str
        Entry distribution of the frozen weights (see :mod:`~exactnorm.exact.sampling`).
    retry : int
        How many redraws a singular system may get (each recorded in the certificate);
        ``0`` is the strict behaviour (the first singular draw is an error).
    shift_mode : {"neuron", "layer", "integer"}
        Per-neuron smallest shifts, one constant per layer, or per-neuron shifts rounded up to
        integers (:func:`~exactnorm.constructions.common.activating_shift`).
    sparsity : float, str or Fraction, optional
        Keep probability ``p`` of Bernoulli masks on the frozen weights (docs/sparse.md), exact (a
        float means its decimal value, ``0.3`` is ``3/10``).
    jobs : int
        Processes to use. Given the target's interval boxes the layers' systems are independent,
        so with several target layers they are solved in parallel (rebuilt in each worker from
        integers, since FLINT objects do not pickle); with one layer the p-adic lifting is split
        over two processes. The certificate is byte-identical for every ``jobs``.
    solver, witness_prime
        See :func:`realize_layer_theorem1`.
    first_layer : int
        Number of ``target``'s first layer in the stream keys and reports (``target`` is then
        the tail of a longer network, e.g. the dense head of a convolutional one).

    Returns
    -------
    Construction

    Raises
    ------
    SingularSystemError
        When a layer's Khatri–Rao system stays singular after ``retry`` redraws.
    """
    dist = parse_distribution(distribution)
    require_integer(retry, "retry")
    require_integer(jobs, "jobs", minimum=1)
    dense = dense_layers(target.layers, "construction theorem1")
    boxes = target.interval_boxes()
    layers: list[FrozenLayer] = []
    if progress is not None:
        progress(0, target.depth)  # the total from the start, before the first long layer
    reports: list[LayerReport] = []
    options = dict(distribution=dist.spec, retry=retry, shift_mode=shift_mode, sparsity=sparsity,
                   mask_side=mask_side, solver=solver, witness_prime=witness_prime)
    if jobs >= 2 and target.depth >= 2:
        tasks = [_layer_task(tl, boxes[i - first_layer], seed, i, options,
                             2 * (i - first_layer))
                 for i, tl in enumerate(dense, first_layer)]
        for i, packed in enumerate(map_tasks(_realize_packed, tasks, jobs=jobs), 1):
            pair, report = _unpack_layers(packed)
            layers.extend(pair)
            reports.append(report)
            if progress is not None:
                progress(i, target.depth)
    else:
        for i, tl in enumerate(dense, first_layer):
            pair, report = realize_layer_theorem1(
                tl.weight, tl.bias, tl.activation, boxes[i - first_layer], seed=seed, layer=i,
                input_node=len(layers), solve_jobs=min(jobs, 2), **options)
            layers.extend(pair)
            reports.append(report)
            if progress is not None:
                progress(i - first_layer + 1, target.depth)
    network = FrozenNetwork(target.widths[0], tuple(layers),
                            tuple(2 * i for i in range(1, target.depth + 1)))
    extra: dict[str, Any] = {"shift_mode": shift_mode, "retry": retry}
    if sparsity is not None:
        # a JSON float would make the saved certificate unreadable: record the exact fraction
        extra.update(sparsity=str(exact_probability(sparsity)), mask_side=mask_side)
    return Construction(
        name="theorem1", target=target, network=network, reports=reports,
        provenance=provenance("theorem1", seed, dist.spec, **extra),
        witnesses={"layers": [r.witness for r in reports]},
    )


# Tasks and results cross the process boundary as integers (exact.parallel.pack_matrix).

def _layer_task(tl: Any, box: tuple[Vector, Vector], seed: int, layer: int,
                options: dict[str, Any], input_node: int | None = None) -> dict[str, Any]:
    lo, hi = box
    return {"W": pack_matrix(tl.weight), "b": [pack_q(x) for x in tl.bias],
            "activation": tl.activation, "lo": [pack_q(x) for x in lo],
            "hi": [pack_q(x) for x in hi], "seed": seed, "layer": layer, "options": options,
            "input_node": 2 * (layer - 1) if input_node is None else input_node}


def _realize_packed(task: dict[str, Any]) -> dict[str, Any]:
    """Worker: rebuild one target layer, realize it, return plain integers."""
    W = unpack_matrix(task["W"])
    W = W if isinstance(W, fmpq_mat) else fmpq_mat(W)
    box = (tuple(unpack_q(x) for x in task["lo"]), tuple(unpack_q(x) for x in task["hi"]))
    pair, report = realize_layer_theorem1(
        W, tuple(unpack_q(x) for x in task["b"]), task["activation"], box, seed=task["seed"],
        layer=task["layer"], input_node=task["input_node"], **task["options"])
    return {"layers": [{"input": fl.input, "weight": pack_matrix(fl.weight),
                        "gamma": [pack_q(x) for x in fl.gamma],
                        "beta": [pack_q(x) for x in fl.beta], "activation": fl.activation,
                        "record": fl.record}
                       for fl in pair],
            "report": report}


def _unpack_layers(packed: dict[str, Any]) -> tuple[list[FrozenLayer], LayerReport]:
    pair = [FrozenLayer(d["input"], unpack_matrix(d["weight"]),
                        tuple(unpack_q(x) for x in d["gamma"]),
                        tuple(unpack_q(x) for x in d["beta"]), d["activation"],
                        record=d["record"])
            for d in packed["layers"]]
    return pair, packed["report"]
