"""Theorem 1 over channels: convolutional targets realized with per-channel γ, β only.

Construction (docs/certificate-format.md, "Convolutional layers"). A target convolution with
kernel matrix ``W`` (``c2 × d_in``, ``d_in = C·kh·kw``) and bias ``b`` becomes two frozen
convolutions:

1. ``V1``: a random convolution with ``c1 = d_in·c2`` output channels and the target's geometry
   (kernel by reference), per-channel ``γ1`` and ``β1``, ReLU;
2. ``V2``: a random pointwise (1×1) convolution ``c1 → c2``, ``γ2 = 1``, ``β2 = b − V2·β1``,
   the target's activation.

At every output position the composed map is ``V2·diag(γ1)·V1`` applied to the same patch, so
``V2 diag(γ1) V1 = W`` is exactly Theorem 1's Khatri–Rao system with ``V_in = V1`` (``c1 × d_in``)
and ``V_out = V2`` (``c2 × c1``), solved by
:func:`~exactnorm.constructions.theorem1.solve_pair` (redraws recorded). ``β1`` is one shift per
channel, the smallest making the pre-activation non-negative at **every position** of the box,
zero padding included, or its integer round-up (``shift_mode``); so the ReLU is the identity on
the box at every position and ``β2`` cancels the shift uniformly. Average poolings are copied as
declared fixed layers; each run of dense layers (the head after the implicit flatten) is
realized by the automatically chosen dense construction (:mod:`~exactnorm.constructions.choice`).

Reference: Giannou, Rajput, Papailiopoulos, COLT 2023 (Theorem 1); Burkholz, "Batch normalization
is sufficient for universal function approximation in CNNs", ICLR 2024.

>>> from exactnorm.model.conv import ConvGeometry, ConvTargetLayer, ConvTargetNetwork
>>> from flint import fmpq, fmpq_mat
>>> g = ConvGeometry((1, 3, 3), (2, 2), padding=(1, 1))
>>> t = ConvTargetNetwork((ConvTargetLayer(g, fmpq_mat([[1, -1, 2, 0]]), (fmpq(1),), "relu"),),
...                       (fmpq(0),) * 9, (fmpq(1),) * 9)
>>> c = certify_conv(t, seed=0)
>>> [layer.channels for layer in c.network.layers]
[4, 1]
>>> x = [fmpq(k, 9) for k in range(9)]
>>> c.network.evaluate(x) == t.evaluate(x)
True
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any

from flint import fmpq, fmpq_mat

from exactnorm.constructions.choice import THEOREM1_MAX_SYSTEM, choose_construction
from exactnorm.constructions.common import (
    DEFAULT_RETRY,
    LayerReport,
    _apply_mode,
    cancelling_bias,
    provenance,
)
from exactnorm.constructions.theorem1 import ProgressHook, certify_theorem1, solve_pair
from exactnorm.constructions.tradeoff import certify_tradeoff
from exactnorm.errors import InputError, require_integer
from exactnorm.exact.linalg import max_bits
from exactnorm.exact.sampling import DEFAULT_DISTRIBUTION, Distribution, parse_distribution
from exactnorm.model.conv import (
    AnyFrozenLayer,
    ConvFrozenNetwork,
    ConvGeometry,
    ConvTargetLayer,
    ConvTargetNetwork,
    FrozenConvLayer,
    FrozenPoolLayer,
    PoolTargetLayer,
    conv_range,
)
from exactnorm.model.network import FrozenLayer, Skip, TargetLayer, TargetNetwork, Vector

__all__ = ["ConvConstruction", "certify_conv", "realize_conv_layer", "kernel_record",
           "channel_shift", "DEFAULT_CONV_SHIFT_MODE"]

#: per-channel shifts rounded up to integers: β1 and β2 stay small integers next to Γ
DEFAULT_CONV_SHIFT_MODE = "integer"


@dataclass
class ConvConstruction:
    """A frozen network with convolutions realizing a convolutional target (cf.
    :class:`~exactnorm.constructions.common.Construction`)."""

    name: str
    target: ConvTargetNetwork
    network: ConvFrozenNetwork
    reports: list[LayerReport]
    provenance: dict[str, Any]
    witnesses: dict[str, Any]


def kernel_record(record: dict[str, Any], shape: tuple[int, int, int, int]) -> dict[str, Any]:
    """The draw record of a ``rows × C·kh·kw`` matrix rewritten with the kernel's 4-d shape
    ``[rows, C, kh, kw]``: the same words in the same order (C order)."""
    rows, cols = record["shape"]
    if rows != shape[0] or cols != shape[1] * shape[2] * shape[3] or "mask" in record:
        raise InputError(f"a draw record of shape {record['shape']} is not a kernel of shape "
                         f"{list(shape)}")
    return dict(record, shape=[int(v) for v in shape])


def channel_shift(gamma: Vector, V: Any, geometry: ConvGeometry, lo: Vector, hi: Vector,
                  mode: str) -> Vector:
    """Per-channel shift β making ``γ_j (V_j·patch_{y,x}(a)) + β_j ≥ 0`` for every position and
    every ``a`` in ``[lo, hi]`` (padding pixels 0): ``β_j = −γ_j·min`` (``γ_j ≥ 0``) or
    ``−γ_j·max`` over all positions' exact patch ranges; ``mode`` as in
    :func:`~exactnorm.constructions.common.activating_shift`."""
    mn, mx = conv_range(V, geometry, lo, hi)
    P = mn.ncols()
    fmin, fmax = mn.entries(), mx.entries()
    out = []
    for j, g in enumerate(gamma):
        row = fmin[j * P:(j + 1) * P] if g >= 0 else fmax[j * P:(j + 1) * P]
        out.append(-(g * (min(row) if g >= 0 else max(row))))
    return _apply_mode(tuple(out), mode)


def realize_conv_layer(layer: ConvTargetLayer, box: tuple[Vector, Vector], *, seed: int,
                       index: int, input_node: int,
                       distribution: str | Distribution = DEFAULT_DISTRIBUTION,
                       retry: int = DEFAULT_RETRY, shift_mode: str = DEFAULT_CONV_SHIFT_MODE,
                       solver: str = "auto", solve_jobs: int = 1
                       ) -> tuple[list[FrozenConvLayer], LayerReport]:
    """The two frozen convolutions of target layer ``index`` (module doc)."""
    t0 = time.perf_counter()
    W, g = layer.weight, layer.geometry
    c2, d_in = W.nrows(), W.ncols()
    c1 = d_in * c2
    solved = solve_pair(W, seed=seed, layer=index, distribution=distribution, retry=retry,
                        solver=solver, solve_jobs=solve_jobs)
    pair = solved.pair
    gamma = tuple(solved.gamma.entries())
    beta1 = channel_shift(gamma, pair.V_in, g, *box, mode=shift_mode)
    beta2 = cancelling_bias(pair.V_out, beta1, layer.bias)
    C, kh, kw = g.input_shape[0], *g.kernel_shape
    first = FrozenConvLayer(input_node, g, pair.V_in, gamma, beta1, "relu",
                            record=kernel_record(pair.record_in, (c1, C, kh, kw)))
    pointwise = ConvGeometry(first.output_shape, (1, 1))
    second = FrozenConvLayer(input_node + 1, pointwise, pair.V_out,
                             tuple(fmpq(1) for _ in range(c2)), beta2, layer.activation,
                             record=kernel_record(pair.record_out, (c2, c1, 1, 1)))
    witness = {"layer": index, "kind": "conv", "channels": c1,
               "system": "V_in^T khatri_rao V_out", "system_size": c1, "rank": c1,
               "prime": solved.prime, "rank_mod_prime": solved.rank_mod_prime,
               "stream_key": list(solved.stream.key), "singular_draws": solved.failures}
    report = LayerReport(
        layer=index, d_in=d_in, d_out=c2, widths=(c1, c2), systems=1, system_size=c1, rank=c1,
        gamma_bits=max_bits(solved.gamma),
        beta_bits=max(max_bits(fmpq_mat([list(beta1)])), max_bits(fmpq_mat([list(beta2)]))),
        attempts=solved.attempt + 1, seconds=time.perf_counter() - t0, witness=witness)
    return [first, second], report


def _shifted(layer: FrozenLayer, offset: int) -> FrozenLayer:
    return dataclasses.replace(
        layer, input=layer.input + offset,
        skips=tuple(Skip(s.source + offset, s.weight, s.kind, record=s.record)
                    for s in layer.skips))


def certify_conv(target: ConvTargetNetwork, *, seed: int = 0,
                 distribution: str | Distribution = DEFAULT_DISTRIBUTION,
                 retry: int = DEFAULT_RETRY, shift_mode: str = DEFAULT_CONV_SHIFT_MODE,
                 jobs: int = 1, solver: str = "auto", max_system: int = THEOREM1_MAX_SYSTEM,
                 scheduler: Any = None, progress: ProgressHook | None = None
                 ) -> ConvConstruction:
    """Realize a convolutional target (module doc).

    Parameters
    ----------
    target : ConvTargetNetwork
    seed, distribution, retry
        As in :func:`~exactnorm.constructions.theorem1.certify_theorem1`; convolution ``i``
        draws its pair at offsets 1 and 2 of segment ``i`` (``StreamKey(i, 1 | 2, WEIGHT,
        attempt)``); dense layers keep their own index ``i``.
    shift_mode : {"integer", "neuron", "layer"}
        Per-channel shifts (and those of the dense head).
    jobs, scheduler
        Processes (or a Dask cluster) for the dense head's systems; a convolution's lifting
        is split over ``min(jobs, 2)`` processes. The certificate does not depend on them.
    max_system : int
        Budget of the dense head's automatic choice (:func:`choose_construction`).
    progress : callable(done, total), optional
        Called after each target layer.

    Returns
    -------
    ConvConstruction
    """
    dist = parse_distribution(distribution)
    require_integer(retry, "retry")
    require_integer(jobs, "jobs", minimum=1)
    boxes = target.interval_boxes()
    layers: list[AnyFrozenLayer] = []
    checkpoints: list[int] = []
    reports: list[LayerReport] = []
    heads: list[dict[str, Any]] = []
    witnesses: list[Any] = []
    i = 1
    while i <= target.depth:
        tl = target.layers[i - 1]
        start = len(layers)
        if isinstance(tl, ConvTargetLayer):
            pair, report = realize_conv_layer(
                tl, boxes[i - 1], seed=seed, index=i, input_node=start, distribution=dist,
                retry=retry, shift_mode=shift_mode, solver=solver, solve_jobs=min(jobs, 2))
            layers.extend(pair)
            reports.append(report)
            witnesses.append(report.witness)
            checkpoints.append(len(layers))
            i += 1
        elif isinstance(tl, PoolTargetLayer):
            layers.append(FrozenPoolLayer(start, tl.geometry))
            C = tl.geometry.input_shape[0]
            reports.append(LayerReport(i, C, C, (C,), 0, 0, 0, 0, 0, 0,
                                       witness={"layer": i, "kind": "avgpool"}))
            witnesses.append(reports[-1].witness)
            checkpoints.append(len(layers))
            i += 1
        else:
            run: list[TargetLayer] = [tl]
            while i - 1 + len(run) < target.depth:
                nxt = target.layers[i - 1 + len(run)]
                if not isinstance(nxt, TargetLayer):
                    break
                run.append(nxt)
            lo, hi = boxes[i - 1]
            head = TargetNetwork(tuple(run), lo, hi)
            choice = choose_construction(head, dist, jobs=jobs, max_system=max_system)
            if choice.name == "theorem1":
                sub = certify_theorem1(head, seed=seed, distribution=dist, retry=retry,
                                       shift_mode=shift_mode, jobs=jobs, solver=solver,
                                       first_layer=i)
            else:
                sub = certify_tradeoff(head, block=choice.block or 1, seed=seed,
                                       distribution=dist, retry=retry, shift_mode=shift_mode,
                                       jobs=jobs, scheduler=scheduler, first_layer=i)
            for fl in sub.network.layers:
                layers.append(_shifted(fl, start))
            checkpoints.extend(start + c for c in sub.network.checkpoints)
            reports.extend(sub.reports)
            witnesses.extend(sub.witnesses["layers"])
            heads.append({"layers": [i, i + len(run) - 1], "construction": choice.name,
                          "block": choice.block, "reason": choice.reason})
            i += len(run)
        if progress is not None:
            progress(min(i - 1, target.depth), target.depth)
    network = ConvFrozenNetwork(len(target.lower), tuple(layers), tuple(checkpoints))
    return ConvConstruction(
        name="conv", target=target, network=network, reports=reports,
        provenance=provenance("conv", seed, dist.spec, shift_mode=shift_mode, retry=retry,
                              dense_runs=heads),
        witnesses={"layers": witnesses})


def require_conv(target: Any) -> ConvTargetNetwork:
    """``target`` as a :class:`ConvTargetNetwork`, or a clear error."""
    if not isinstance(target, ConvTargetNetwork):
        raise InputError("certify_conv needs a convolutional target network")
    return target
