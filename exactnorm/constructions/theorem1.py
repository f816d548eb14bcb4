"""Theorem 1: each target layer is realized by two frozen random layers (widths d_in·d_out, d_out).

Statement (Giannou, Rajput, Papailiopoulos, COLT 2023, Theorem 1; SPEC §2.1). Let ``g`` have
layers ``σ_i(W_i a + b_i)`` on a bounded box. For frozen random ``V_{2i-1}`` (m × d_{i-1}) and
``V_{2i}`` (d_i × m) with ``m = d_{i-1}·d_i`` there are γ, β such that the network with layers
``σ(γ ⊙ V h + β)`` equals ``g`` on the box. Construction, per target layer ``i``:

1. ``K = V_{2i-1}ᵀ ⊙ V_{2i}`` (m × m, column-wise Khatri–Rao); solve ``K γ = vec(W_i)`` exactly
   (column-major vec), so ``V_{2i} diag(γ) V_{2i-1} = W_i``. ``K`` is invertible for almost every
   draw (Lemma 6); a singular draw raises :class:`~exactnorm.errors.SingularSystemError` with its
   exact rank and a kernel vector, or is redrawn under a new, recorded spawn key if ``retry > 0``.
2. ``β_{2i-1}`` is the smallest shift making every neuron of layer ``2i−1`` non-negative on the
   exact interval box ``B_{i-1}`` of ``a_{i-1}``, so its ReLU is the identity there.
3. ``Γ_{2i} = I`` and ``β_{2i} = b_i − V_{2i} β_{2i-1}``: then ``u_{2i} = W_i a_{i-1} + b_i``.

>>> from exactnorm.io import demo_target
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
from typing import Any

import numpy as np
from flint import fmpq, fmpq_mat

from exactnorm.constructions.common import (
    Construction,
    LayerReport,
    cancelling_bias,
    provenance,
    scaled_activating_shift,
)
from exactnorm.errors import InputError, SingularSystemError
from exactnorm.linalg import (
    FlintMatrix,
    khatri_rao,
    max_bits,
    random_prime,
    rank_mod_prime,
    solve_exact,
    vec,
)
from exactnorm.network import FrozenLayer, FrozenNetwork, TargetNetwork, Vector
from exactnorm.sampling import (
    DEFAULT_DISTRIBUTION,
    Distribution,
    bernoulli_mask,
    layer_rng,
    parse_distribution,
    sample_matrix,
)

__all__ = ["certify_theorem1", "realize_layer_theorem1", "khatri_rao_system", "draw_pair"]

ProgressHook = Callable[[int, int], None]


def draw_pair(seed: int, layer: int, attempt: int, d_in: int, d_out: int, m: int,
              dist: Distribution, sparsity: float | None = None,
              mask_side: str = "both") -> tuple[FlintMatrix, FlintMatrix]:
    """The frozen pair ``(V_in, V_out)`` of shapes m×d_in and d_out×m for one target layer.

    Drawn from ``layer_rng(seed, layer, attempt)``; with ``sparsity = p`` the entries are
    multiplied by Bernoulli(p) masks on the input side, output side or both (SPEC §2.4).
    """
    rng = layer_rng(seed, layer, attempt)
    V_in = sample_matrix(rng, m, d_in, dist)
    V_out = sample_matrix(rng, d_out, m, dist)
    if sparsity is not None:
        mask_in = bernoulli_mask(rng, m, d_in, sparsity)
        mask_out = bernoulli_mask(rng, d_out, m, sparsity)
        if mask_side in ("input", "both"):
            V_in = _apply_mask(V_in, mask_in)
        if mask_side in ("output", "both"):
            V_out = _apply_mask(V_out, mask_out)
        if mask_side not in ("input", "output", "both"):
            raise InputError(f"mask side must be input, output or both, got {mask_side!r}")
    return V_in, V_out


def _apply_mask(V: FlintMatrix, mask: np.ndarray) -> FlintMatrix:
    rows = V.tolist()
    out = [[x if mask[i, j] else 0 for j, x in enumerate(row)] for i, row in enumerate(rows)]
    return type(V)(out)


def khatri_rao_system(V_in: FlintMatrix, V_out: FlintMatrix) -> FlintMatrix:
    """``K = V_inᵀ ⊙ V_out`` so that ``vec(V_out diag(γ) V_in, "F") = K γ`` (Lemma 2)."""
    return khatri_rao(V_in.transpose(), V_out)


def realize_layer_theorem1(
    W: fmpq_mat, b: Sequence[fmpq], activation: str, box: tuple[Vector, Vector], *,
    seed: int, layer: int, input_node: int, distribution: str | Distribution = DEFAULT_DISTRIBUTION,
    retry: int = 0, shift_mode: str = "neuron", sparsity: float | None = None,
    mask_side: str = "both", prime_bits: int = 60,
) -> tuple[list[FrozenLayer], LayerReport]:
    """Two frozen layers equal to ``σ(W a + b)`` for every ``a`` in ``box`` (Lemma 7).

    Returns the two :class:`FrozenLayer` objects (reading from ``input_node``) and a report with
    the exact rank, a rank-mod-prime witness and bit sizes.
    """
    t0 = time.perf_counter()
    dist = parse_distribution(distribution)
    d_out, d_in = W.nrows(), W.ncols()
    m = d_in * d_out
    rhs = vec(W, "F")
    failures: list[dict[str, Any]] = []
    for attempt in range(retry + 1):
        V_in, V_out = draw_pair(seed, layer, attempt, d_in, d_out, m, dist, sparsity, mask_side)
        K = khatri_rao_system(V_in, V_out)
        try:
            gamma_col = solve_exact(K, rhs, layer=layer)
        except SingularSystemError as exc:
            failures.append({"attempt": attempt, "rank": exc.rank, "size": exc.size})
            if attempt == retry:
                exc.args = (f"{exc.args[0]} after {retry + 1} draw(s) (seed {seed}); "
                            f"pass --retry N to redraw with recorded spawn keys",)
                raise
            continue
        break
    gamma = tuple(gamma_col.entries())
    beta_in = scaled_activating_shift(gamma, V_in, *box, mode=shift_mode)
    beta_out = cancelling_bias(V_out, beta_in, b)
    ones = tuple(fmpq(1) for _ in range(d_out))
    first = FrozenLayer(input_node, V_in, gamma, beta_in, "relu")
    second = FrozenLayer(input_node + 1, V_out, ones, beta_out, activation)
    prime = random_prime(prime_bits, layer_rng(seed, layer, attempt, 2**31))
    witness = {
        "layer": layer,
        "system": "V_in^T khatri_rao V_out",
        "system_size": m,
        "rank": m,
        "prime": prime,
        "rank_mod_prime": rank_mod_prime(K, prime) if dist.is_integer else None,
        "spawn_key": [seed, layer, attempt],
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
                     distribution: str | Distribution = DEFAULT_DISTRIBUTION, retry: int = 0,
                     shift_mode: str = "neuron", sparsity: float | None = None,
                     mask_side: str = "both",
                     progress: ProgressHook | None = None) -> Construction:
    """Realize ``target`` by Theorem 1: depth 2L, widths d_{i-1}·d_i and d_i alternating.

    Parameters
    ----------
    target : TargetNetwork
    seed : int
        Frozen weights of target layer ``i``, attempt ``t`` come from ``layer_rng(seed, i, t)``.
    distribution : str
        Entry distribution of the frozen weights (see :mod:`exactnorm.sampling`).
    retry : int
        How many redraws a singular system may get (each recorded in the certificate).
    shift_mode : {"neuron", "layer"}
        Per-neuron smallest shifts or one constant per layer.
    sparsity : float, optional
        Keep probability ``p`` of Bernoulli masks on the frozen weights (SPEC §2.4).

    Returns
    -------
    Construction

    Raises
    ------
    SingularSystemError
        When a layer's Khatri–Rao system stays singular after ``retry`` redraws.
    """
    dist = parse_distribution(distribution)
    if retry < 0:
        raise InputError("--retry must be non-negative")
    boxes = target.interval_boxes()
    layers: list[FrozenLayer] = []
    reports: list[LayerReport] = []
    for i, tl in enumerate(target.layers, 1):
        pair, report = realize_layer_theorem1(
            tl.weight, tl.bias, tl.activation, boxes[i - 1], seed=seed, layer=i,
            input_node=len(layers), distribution=dist, retry=retry, shift_mode=shift_mode,
            sparsity=sparsity, mask_side=mask_side)
        layers.extend(pair)
        reports.append(report)
        if progress is not None:
            progress(i, target.depth)
    network = FrozenNetwork(target.widths[0], tuple(layers),
                            tuple(2 * i for i in range(1, target.depth + 1)))
    extra: dict[str, Any] = {"shift_mode": shift_mode, "retry": retry}
    if sparsity is not None:
        extra.update(sparsity=sparsity, mask_side=mask_side)
    return Construction(
        name="theorem1", target=target, network=network, reports=reports,
        provenance=provenance("theorem1", seed, dist.spec, **extra),
        witnesses={"layers": [r.witness for r in reports]},
    )
