"""The ``conv`` kind's realizer: Theorem 1 over channels, one convolution at a time.

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
the box at every position and ``β2`` cancels the shift uniformly.

Reference: Giannou, Rajput, Papailiopoulos, COLT 2023 (Theorem 1); Burkholz, "Batch normalization
is sufficient for universal function approximation in CNNs", ICLR 2024.

>>> from flint import fmpq, fmpq_mat
>>> from exactnorm.model.kinds import ConvGeometry, ConvTargetLayer
>>> g = ConvGeometry((1, 3, 3), (2, 2), padding=(1, 1))
>>> layer = ConvTargetLayer(g, fmpq_mat([[1, -1, 2, 0]]), (fmpq(1),), "relu")
>>> pair, report = realize_conv_layer(layer, ((fmpq(0),) * 9, (fmpq(1),) * 9), seed=0,
...                                   index=1, input_node=0)
>>> [frozen.channels for frozen in pair], report.system_size
([4, 1], 4)
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from flint import fmpq, fmpq_mat

from exactnorm.constructions.choice import choose_channel_blocks
from exactnorm.constructions.common import DEFAULT_RETRY, LayerReport, cancelling_bias
from exactnorm.constructions.convblocks import (
    DEFAULT_CONV_SHIFT_MODE,
    channel_shift,
    kernel_record,
    realize_conv_blocks,
)
from exactnorm.constructions.kinds.base import Box, Options, Realized, RunPlan
from exactnorm.constructions.theorem1 import solve_pair
from exactnorm.errors import InputError
from exactnorm.exact.linalg import max_bits
from exactnorm.exact.sampling import DEFAULT_DISTRIBUTION, Distribution
from exactnorm.model.kinds import conv
from exactnorm.model.kinds.base import TargetKind
from exactnorm.model.kinds.conv import ConvTargetLayer, FrozenConvLayer
from exactnorm.model.kinds.window import ConvGeometry

__all__ = ["ConvRealizer", "REALIZER", "realize_conv_layer", "kernel_record", "channel_shift",
           "DEFAULT_CONV_SHIFT_MODE", "conv_choice"]

def realize_conv_layer(layer: ConvTargetLayer, box: Box, *, seed: int, index: int,
                       input_node: int, distribution: str | Distribution = DEFAULT_DISTRIBUTION,
                       retry: int = DEFAULT_RETRY, shift_mode: str = DEFAULT_CONV_SHIFT_MODE,
                       solver: str = "auto", solve_jobs: int = 1
                       ) -> tuple[list[FrozenConvLayer], LayerReport]:
    """The two frozen convolutions of target layer ``index``, reading node ``input_node``
    (module doc). They are layers 1 and 2 of segment ``index`` (its checkpoint follows them),
    so their kernels draw from the stream keys of those positions, ``StreamKey(index, 1 | 2,
    WEIGHT, attempt)`` (docs/certificate-format.md §4)."""
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
    witness = {"layer": index, "kind": conv.NAME, "channels": c1,
               "system": "V_in^T khatri_rao V_out", "system_size": c1, "rank": c1,
               "prime": solved.prime, "rank_mod_prime": solved.rank_mod_prime,
               "stream_key": list(solved.stream.key), "singular_draws": solved.failures}
    report = LayerReport(
        layer=index, d_in=d_in, d_out=c2, widths=(c1, c2), systems=1, system_size=c1, rank=c1,
        gamma_bits=max_bits(solved.gamma),
        beta_bits=max(max_bits(fmpq_mat([list(beta1)])), max_bits(fmpq_mat([list(beta2)]))),
        attempts=solved.attempt + 1, seconds=time.perf_counter() - t0, witness=witness)
    return [first, second], report


def _layer(run: Sequence[TargetKind]) -> ConvTargetLayer:
    (layer,) = run
    if not isinstance(layer, ConvTargetLayer):
        raise InputError(f"the {conv.NAME} realizer got a {layer.kind} layer")
    return layer


def conv_choice(layer: ConvTargetLayer, options: Options, distribution: str
                ) -> dict[str, Any]:
    """Plain Theorem 1 over channels or channel blocks, and how many channels per block: the
    least estimated time among those the checker will accept
    (:func:`~exactnorm.constructions.choice.choose_channel_blocks`; the plain pair only while
    its system ``c_out·C·kh·kw`` is within ``max_system``). ``options.block`` (input channels
    per block) overrides: a block of every channel is the plain pair.

    >>> from flint import fmpq, fmpq_mat
    >>> from exactnorm.model.kinds import ConvGeometry, ConvTargetLayer
    >>> wide = ConvTargetLayer(ConvGeometry((32, 4, 4), (3, 3), padding=(1, 1)),
    ...                        fmpq_mat(32, 288), (fmpq(0),) * 32, "relu")
    >>> c = conv_choice(wide, Options(), "nonzero:8")
    >>> c["mode"], c["block"], c["estimate"].system_size
    ('blocks', 1, 288)
    """
    W, g = layer.weight, layer.geometry
    mode, block, estimate, why = choose_channel_blocks(
        W.nrows(), g.input_shape[0], g.kernel_shape[0] * g.kernel_shape[1], weight=W,
        positions=g.positions, distribution=distribution, max_system=options.max_system,
        block=options.block)
    return {"mode": mode, "block": block, "estimate": estimate, "why": why}


class ConvRealizer:
    """Realizer of the ``conv`` kind (module doc): one convolution per run, as one Theorem 1
    pair or by channel blocks (:mod:`~exactnorm.constructions.convblocks`)."""

    kind = conv.NAME
    whole_options: tuple[str, ...] = ()
    #: options of :class:`Options` this kind takes in a run (``block``: channels per block)
    run_options: tuple[str, ...] = ("block",)
    constructions: dict[str, Any] = {}

    def claim(self, layers: Sequence[TargetKind], i: int) -> int:
        return 1

    def plan(self, run: Sequence[TargetKind], box: Box, first: int, options: Options,
             distribution: str) -> RunPlan:
        layer = _layer(run)
        choice = conv_choice(layer, options, distribution)
        m = layer.weight.nrows() * layer.weight.ncols()
        est = choice["estimate"]
        if choice["mode"] == "plain":
            return RunPlan(self.kind, first, 1, "theorem1 over channels", est,
                           f"target layer {first} {self.kind}: Theorem 1 over channels, m = {m}",
                           choice={"mode": "plain"})
        T = est.systems
        return RunPlan(self.kind, first, 1, "channel blocks", est,
                       f"target layer {first} {self.kind}: {T} channel blocks of "
                       f"{choice['block']}, systems of size ≤ {est.system_size} instead of "
                       f"m = {m} ({choice['why']})",
                       choice={"mode": "blocks", "block": choice["block"]})

    def realize(self, run: Sequence[TargetKind], box: Box, plan: RunPlan, *, start: int,
                options: dict[str, Any]) -> Realized:
        common = dict(seed=options["seed"], index=plan.first, input_node=start,
                      distribution=options["distribution"], retry=options["retry"],
                      shift_mode=options["shift_mode"], solver=options["solver"],
                      solve_jobs=min(options["jobs"], 2))
        layers: list[FrozenConvLayer]
        if plan.choice.get("mode") == "blocks":
            layers, report = realize_conv_blocks(_layer(run), box, block=plan.choice["block"],
                                                 jobs=options["jobs"],
                                                 scheduler=options.get("scheduler"), **common)
        else:
            layers, report = realize_conv_layer(_layer(run), box, **common)
        return Realized(list(layers), [start + len(layers)], [report], [report.witness])

    def provenance_defaults(self) -> dict[str, Any]:
        return {}

    def plan_whole(self, target: Any, options: Options) -> None:
        return None


REALIZER = ConvRealizer()
