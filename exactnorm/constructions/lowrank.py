"""Low-rank targets: width factor r instead of d (docs/constructions.md).

Statement (source, "Main results": a target whose weight matrices have rank r needs width
O(r·d)). If ``W_i = U_i P_i`` with ``P_i`` (r × d_{i-1}) and ``U_i`` (d_i × r), realize
``a ↦ P_i a + t`` and then ``z ↦ U_i z + b_i − U_i t`` with two Theorem-1 pairs
(:func:`~exactnorm.constructions.theorem1.realize_layer_theorem1`), widths ``r·d_{i-1}, r`` and
``r·d_i, d_i``:

* ``t`` is the smallest shift making the intermediate node ``z = P_i a + t`` non-negative on the box
  ``B_{i-1}``, so its ReLU is the identity there;
* the second pair's bias ``b_i − U_i t`` cancels ``t`` exactly, so the checkpoint pre-activation is
  ``U_i (P_i a + t) + b_i − U_i t = W_i a + b_i``.

The factors come from the exact column-rank factorization ``W = W[:, pivots] · rref(W)[:r]``, or
from the target file, checked exactly (``U P = W``): either ``"factors": {"U": …, "P": …}`` inside
a target layer, or one top-level list ``"factors": [{"U": …, "P": …} | null, …]`` with one entry
per target layer (``null``: find the factors). Given factors need not have the minimal inner
dimension; the construction uses whatever ``r`` they have (width ``r·d``).
A zero matrix has rank 0; it is realized with ``r = 1`` and zero factors (a one-neuron
intermediate node that is constantly 0), because a node of width 0 has nothing to normalize.

>>> from exactnorm.model.network import TargetNetwork
>>> g = TargetNetwork.from_lists([[[1, 2, 3], [2, 4, 6]]], [[0, 1]], ["identity"],
...                              lower=[-1, -1, -1], upper=[1, 1, 1])
>>> c = certify_lowrank(g, seed=0, distribution="nonzero:8")
>>> c.network.widths, c.reports[0].rank
((3, 1, 2, 2), 1)
>>> c.network.evaluate((1, 0, -1)) == g.evaluate((1, 0, -1))
True
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

from flint import fmpq, fmpq_mat, fmpz_mat

from exactnorm.constructions.common import (
    DEFAULT_RETRY,
    Construction,
    LayerReport,
    cancelling_bias,
    provenance,
)
from exactnorm.constructions.theorem1 import ProgressHook, realize_layer_theorem1
from exactnorm.errors import InputError, ShapeError, require_integer
from exactnorm.exact.linalg import exact_rank, to_fmpq_mat
from exactnorm.exact.rationals import parse_number, strict_json_loads
from exactnorm.exact.sampling import DEFAULT_DISTRIBUTION, Distribution, parse_distribution
from exactnorm.model.network import FrozenLayer, FrozenNetwork, TargetNetwork, affine_interval
from exactnorm.model.operators.dense import dense_layers

__all__ = ["rank_factorization", "certify_lowrank", "factors_from_target_file",
           "factors_from_dict"]

Factors = tuple[fmpq_mat, fmpq_mat]


def rank_factorization(W: fmpq_mat) -> Factors:
    """Exact ``(U, P)`` with ``W = U P``, ``P = rref(W)[:r]``, ``U = W[:, pivots]``, ``r = rank W``.

    For ``W = 0`` returns ``r = 1`` zero factors so that the construction keeps one neuron.

    >>> U, P = rank_factorization(fmpq_mat([[1, 2], [2, 4]]))
    >>> (U.nrows(), U.ncols(), P.nrows()), U * P == fmpq_mat([[1, 2], [2, 4]])
    ((2, 1, 1), True)
    """
    R, r = W.rref()
    if r == 0:
        return fmpq_mat(W.nrows(), 1), fmpq_mat(1, W.ncols())
    pivots = []
    for i in range(r):
        pivots.append(next(j for j in range(W.ncols()) if R[i, j] != 0))
    P = fmpq_mat([[R[i, j] for j in range(W.ncols())] for i in range(r)])
    U = fmpq_mat([[W[i, j] for j in pivots] for i in range(W.nrows())])
    return U, P


def _check_factors(W: fmpq_mat, U: fmpq_mat, P: fmpq_mat, layer: int) -> None:
    if U.ncols() != P.nrows() or U.nrows() != W.nrows() or P.ncols() != W.ncols():
        raise ShapeError(f"target layer {layer}: factor shapes U {U.nrows()}×{U.ncols()}, "
                         f"P {P.nrows()}×{P.ncols()} do not fit W {W.nrows()}×{W.ncols()}")
    if U * P != W:
        raise InputError(f"target layer {layer}: the given factors do not satisfy U·P = W")


def _factor_matrix(rows: Any, name: str, layer: int) -> fmpq_mat:
    if isinstance(rows, (fmpq_mat, fmpz_mat)):
        return fmpq_mat(rows)
    if not isinstance(rows, (list, tuple)) or not rows \
            or not all(isinstance(r, (list, tuple)) for r in rows):
        raise ShapeError(f"target layer {layer}: factor {name} must be a non-empty list of rows")
    where = f"layer {layer} factor {name}"
    return to_fmpq_mat([[parse_number(x, where=where) if isinstance(x, str) else x
                         for x in r] for r in rows], where)


def _factor_pair(entry: Any, layer: int) -> Factors | None:
    if entry is None:
        return None
    if isinstance(entry, dict):
        if set(entry) != {"U", "P"}:
            raise InputError(f"target layer {layer}: 'factors' must have exactly the keys U and P")
        U, P = entry["U"], entry["P"]
    elif isinstance(entry, (list, tuple)) and len(entry) == 2:
        U, P = entry
    else:
        raise InputError(f"target layer {layer}: factors must be {{'U': …, 'P': …}} or (U, P)")
    return _factor_matrix(U, "U", layer), _factor_matrix(P, "P", layer)


def factors_from_dict(doc: dict[str, Any]) -> list[Factors | None]:
    """Optional factorizations ``W_i = U_i P_i`` stated in a target document.

    Either per layer (``"factors": {"U": …, "P": …}`` inside ``target.layers[i]``) or as one
    top-level list ``"factors": [entry | null, …]`` with one entry per layer; not both. Numbers
    as in target files (integers, ``"p/q"``, decimals). Shapes and ``U·P = W`` are checked when
    the construction runs.

    >>> factors_from_dict({"target": {"layers": [{"weight": [[2, 4]], "bias": [0]}]},
    ...                    "factors": [{"U": [[2]], "P": [[1, 2]]}]})[0][1]
    [1, 2]
    """
    try:
        layers = doc["target"]["layers"]
    except (KeyError, TypeError):
        raise InputError("the target document has no target layers") from None
    if not isinstance(layers, list):
        raise InputError("target layers must be a list")
    per_layer = [layer.get("factors") if isinstance(layer, dict) else None for layer in layers]
    top = doc.get("factors")
    if top is not None:
        if any(f is not None for f in per_layer):
            raise InputError("factors are given both per layer and as a top-level list")
        if not isinstance(top, list) or len(top) != len(layers):
            raise InputError(f"top-level 'factors' must be a list of {len(layers)} entries "
                             f"(one per target layer, null to find them)")
        per_layer = top
    return [_factor_pair(entry, i) for i, entry in enumerate(per_layer, 1)]


def factors_from_target_file(path: str | os.PathLike[str]) -> list[Factors | None]:
    """Read the optional factorizations of a JSON target file (see :func:`factors_from_dict`)."""
    with open(path, "rb") as fh:
        doc = strict_json_loads(fh.read(), what=str(path))
    if not isinstance(doc, dict):
        raise InputError(f"{path} is not a JSON object")
    return factors_from_dict(doc)


def certify_lowrank(target: TargetNetwork, *, seed: int = 0,
                    distribution: str | Distribution = DEFAULT_DISTRIBUTION,
                    retry: int = DEFAULT_RETRY,
                    factors: Sequence[Any] | None = None, rank: int | None = None,
                    shift_mode: str = "neuron",
                    progress: ProgressHook | None = None) -> Construction:
    """Realize ``target`` with four frozen layers per target layer (r·d_in, r, r·d_out, d_out).

    Parameters
    ----------
    target : TargetNetwork
    seed, distribution, retry, shift_mode
        As in :func:`~exactnorm.constructions.theorem1.certify_theorem1`; the ``P`` pair of
        target layer ``i`` stands at offsets 1 and 2 of its segment, the ``U`` pair at 3 and 4,
        and each matrix draws from the :class:`~exactnorm.exact.streams.StreamKey` of its
        position.
    factors : list of (U, P), {"U": …, "P": …} or None, optional
        Given factorizations per layer (``fmpq_mat`` or rows of exact numbers), checked exactly
        (``U·P = W``); ``None`` entries are found exactly by :func:`rank_factorization`.
    rank : int, optional
        A promised bound: every layer's inner dimension ``r`` must be at most ``rank``
        (otherwise :class:`~exactnorm.errors.InputError` names the layer and its exact rank).

    Returns
    -------
    Construction
    """
    dist = parse_distribution(distribution)
    if factors is not None and len(factors) != target.depth:
        raise InputError(f"{len(factors)} factorizations for {target.depth} target layers")
    if rank is not None:
        require_integer(rank, "rank", minimum=1)
    require_integer(retry, "retry")
    boxes = target.interval_boxes()
    layers: list[FrozenLayer] = []
    reports: list[LayerReport] = []
    checkpoints = []
    if progress is not None:
        progress(0, target.depth)  # the total from the start
    for i, tl in enumerate(dense_layers(target.layers, "construction lowrank"), 1):
        t0 = time.perf_counter()
        given = _factor_pair(factors[i - 1], i) if factors is not None else None
        if given is not None:
            _check_factors(tl.weight, *given, i)
            U, P = given
        else:
            U, P = rank_factorization(tl.weight)
        r = P.nrows()
        if rank is not None and r > rank:
            raise InputError(f"target layer {i}: rank {exact_rank(tl.weight)} (factors of inner "
                             f"dimension {r}) exceeds the promised --rank {rank}")
        lo, hi = boxes[i - 1]
        zero = [fmpq(0)] * r
        pmin, pmax = affine_interval(P, zero, lo, hi)
        shift = tuple(-x for x in pmin)  # z = P a + shift ≥ 0 on the box, exact minimum 0
        z_box = (tuple(fmpq(0) for _ in range(r)), tuple(x - y for x, y in zip(pmax, pmin)))
        bias_u = cancelling_bias(U, shift, tl.bias)
        first, rep1 = realize_layer_theorem1(
            P, shift, "relu", (lo, hi), seed=seed, layer=i, offset=1,
            input_node=len(layers), distribution=dist, retry=retry, shift_mode=shift_mode)
        layers.extend(first)
        second, rep2 = realize_layer_theorem1(
            U, bias_u, tl.activation, z_box, seed=seed, layer=i, offset=3,
            input_node=len(layers), distribution=dist, retry=retry, shift_mode=shift_mode)
        layers.extend(second)
        checkpoints.append(len(layers))
        reports.append(LayerReport(
            layer=i, d_in=tl.shape[1], d_out=tl.shape[0], widths=rep1.widths + rep2.widths,
            systems=2, system_size=rep1.system_size + rep2.system_size,
            rank=r, gamma_bits=max(rep1.gamma_bits, rep2.gamma_bits),
            beta_bits=max(rep1.beta_bits, rep2.beta_bits),
            attempts=rep1.attempts + rep2.attempts, seconds=time.perf_counter() - t0,
            system_ranks=rep1.per_system + rep2.per_system,
            witness={"layer": i, "rank": r, "factors": "given" if given is not None else "rref",
                     "systems": [rep1.witness, rep2.witness]}))
        if progress is not None:
            progress(i, target.depth)
    network = FrozenNetwork(target.widths[0], tuple(layers), tuple(checkpoints))
    return Construction(
        name="lowrank", target=target, network=network, reports=reports,
        provenance=provenance("lowrank", seed, dist.spec, shift_mode=shift_mode, retry=retry,
                              pairs="P pair at offsets 1-2, U pair at offsets 3-4"),
        witnesses={"layers": [r.witness for r in reports]},
    )
