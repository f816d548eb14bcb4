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

**Grouped convolutions** (``G`` groups, a depthwise one ``G = C``): the target's kernel is
block-diagonal, output group ``k`` (``c_g = c_out/G`` channels) reading input group ``k``
(``d_g = (C/G)·kh·kw`` patch coordinates). Each group is realized independently, and the two
frozen convolutions are grouped alike: ``V1`` with ``G`` groups of ``m_g = c_g·d_g`` channels,
``V2`` a pointwise convolution with ``G`` groups ``m_g → c_g``; group ``k``'s block of
``V2 diag(γ1) V1`` is ``V2_k diag(γ1_k) V1_k``, so ``G`` Khatri–Rao systems of size ``m_g``
(9 for a depthwise 3×3) replace one of size ``c_out·C·kh·kw``, and the zeros off the diagonal
blocks hold by construction, not by solving. Both kernels are single draws (one stream key per
position) whose row blocks are the groups' matrices. A singular group is not redrawn (format 3
proves redraws of whole Khatri–Rao pairs only): it is refused with its exact rank.

Reference: Giannou, Rajput, Papailiopoulos, COLT 2023 (Theorem 1); Burkholz, "Batch normalization
is sufficient for universal function approximation in CNNs", ICLR 2024.

>>> from flint import fmpq, fmpq_mat
>>> from exactnorm.model.layers import TargetLayer
>>> from exactnorm.model.operators import Conv, ConvGeometry
>>> g = ConvGeometry((1, 3, 3), (2, 2), padding=(1, 1))
>>> layer = TargetLayer(Conv(g, fmpq_mat([[1, -1, 2, 0]])), (fmpq(1),), "relu")
>>> pair, report = realize_conv_layer(layer, ((fmpq(0),) * 9, (fmpq(1),) * 9), seed=0,
...                                   index=1, input_node=0)
>>> [frozen.channels for frozen in pair], report.system_size
([4, 1], 4)
>>> depthwise = TargetLayer(Conv(ConvGeometry((2, 3, 3), (2, 2)),
...                              fmpq_mat([[1, -1, 2, 0], [0, 1, 1, 3]]), groups=2),
...                         (fmpq(1), fmpq(0)), "relu")
>>> pair, report = realize_grouped(depthwise, ((fmpq(0),) * 18, (fmpq(1),) * 18), seed=0,
...                                index=1, input_node=0)
>>> [(fl.channels, fl.operator.groups) for fl in pair], report.systems, report.system_size
([(8, 2), (2, 2)], 2, 4)
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

from flint import fmpq, fmpq_mat

from exactnorm.constructions.choice import (
    choose_channel_blocks,
    combined_estimate,
    estimate_channel_blocks,
)
from exactnorm.constructions.common import DEFAULT_RETRY, LayerReport, cancelling_bias
from exactnorm.constructions.convblocks import (
    DEFAULT_CONV_SHIFT_MODE,
    channel_shift,
    kernel_record,
    realize_conv_blocks,
)
from exactnorm.constructions.kinds.base import Box, Options, Realized, RunPlan
from exactnorm.constructions.theorem1 import solve_pair
from exactnorm.errors import LimitExceededError, SingularSystemError
from exactnorm.exact.generator import draw
from exactnorm.exact.linalg import (
    khatri_rao_system,
    max_bits,
    random_prime,
    rank_mod_prime,
    solve_exact,
    vec,
)
from exactnorm.exact.sampling import (
    DEFAULT_DISTRIBUTION,
    Distribution,
    layer_rng,
    parse_distribution,
)
from exactnorm.exact.streams import WEIGHT, StreamKey
from exactnorm.model.layers import FrozenLayer, TargetLayer
from exactnorm.model.operators import conv
from exactnorm.model.operators.conv import Conv, conv_of
from exactnorm.model.operators.window import ConvGeometry, block_product
from exactnorm.model.values import column

__all__ = ["ConvRealizer", "REALIZER", "realize_conv_layer", "realize_grouped", "kernel_record",
           "channel_shift", "DEFAULT_CONV_SHIFT_MODE", "conv_choice"]


def realize_conv_layer(layer: TargetLayer, box: Box, *, seed: int, index: int,
                       input_node: int, distribution: str | Distribution = DEFAULT_DISTRIBUTION,
                       retry: int = DEFAULT_RETRY, shift_mode: str = DEFAULT_CONV_SHIFT_MODE,
                       solver: str = "auto", solve_jobs: int = 1
                       ) -> tuple[list[FrozenLayer], LayerReport]:
    """The two frozen convolutions of target layer ``index``, reading node ``input_node``
    (module doc). They are layers 1 and 2 of segment ``index`` (its checkpoint follows them),
    so their kernels draw from the stream keys of those positions, ``StreamKey(index, 1 | 2,
    WEIGHT, attempt)`` (docs/certificate-format.md §4)."""
    t0 = time.perf_counter()
    W, g = layer.weight, _conv(layer).geometry
    c2, d_in = W.nrows(), W.ncols()
    c1 = d_in * c2
    solved = solve_pair(W, seed=seed, layer=index, distribution=distribution, retry=retry,
                        solver=solver, solve_jobs=solve_jobs)
    pair = solved.pair
    gamma = tuple(solved.gamma.entries())
    beta1 = channel_shift(gamma, pair.V_in, g, *box, mode=shift_mode)
    beta2 = cancelling_bias(pair.V_out, beta1, layer.bias)
    C, kh, kw = g.input_shape[0], *g.kernel_shape
    first = FrozenLayer(input_node, Conv(g, pair.V_in), gamma, beta1, "relu",
                        record=kernel_record(pair.record_in, (c1, C, kh, kw)))
    pointwise = ConvGeometry(g.output_shape(c1), (1, 1))
    second = FrozenLayer(input_node + 1, Conv(pointwise, pair.V_out),
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


def _grouped_pair(layer: TargetLayer, seed: int, index: int,
                  distribution: str | Distribution) -> dict[str, Any]:
    """The draws of a grouped layer's two frozen convolutions (stream keys of layers 1 and 2 of
    segment ``index``, attempt 0) and each group's exact γ, or :class:`SingularSystemError`
    naming the first singular group (with its exact rank)."""
    op = _conv(layer)
    W, G = op.weight, op.groups
    c_out, d = W.nrows(), W.ncols()
    c_g = c_out // G
    m = c_g * d  # one group's system
    dist = parse_distribution(distribution)
    stream = StreamKey(index, 1, WEIGHT, 0)
    V1, record1 = draw(seed, stream.key, G * m, d, dist)
    V2, record2 = draw(seed, stream.next_layer().key, c_out, m, dist)
    prime = random_prime(60, layer_rng(seed, *stream.prime_key))
    gammas: list[Any] = []
    ranks = []
    w1: list[Any] = V1.entries()
    w2: list[Any] = V2.entries()
    ww: list[Any] = fmpq_mat(W).entries()
    kinds: Any = (type(V1), type(V2))
    for k in range(G):
        K = khatri_rao_system(kinds[0](m, d, w1[k * m * d:(k + 1) * m * d]),
                              kinds[1](c_g, m, w2[k * c_g * m:(k + 1) * c_g * m]))
        gamma = solve_exact(K, vec(fmpq_mat(c_g, d, ww[k * c_g * d:(k + 1) * c_g * d]), "F"),
                            layer=index, where=f"{stream.where()}, group {k + 1} of {G}")
        gammas.extend(gamma.entries())
        ranks.append(rank_mod_prime(K, prime) if dist.is_integer else None)
    return {"V1": V1, "V2": V2, "records": (record1, record2), "gamma": tuple(gammas),
            "m": m, "prime": prime, "ranks": ranks, "key": list(stream.key)}


def realize_grouped(layer: TargetLayer, box: Box, *, seed: int, index: int, input_node: int,
                    distribution: str | Distribution = DEFAULT_DISTRIBUTION,
                    shift_mode: str = DEFAULT_CONV_SHIFT_MODE
                    ) -> tuple[list[FrozenLayer], LayerReport]:
    """The two grouped frozen convolutions of a grouped target layer ``index`` (module doc),
    reading node ``input_node``.

    Raises
    ------
    SingularSystemError
        A group's system singular at attempt 0 (the plan then chose the ungrouped kernel).
    """
    t0 = time.perf_counter()
    op = _conv(layer)
    g, G, c_out = op.geometry, op.groups, op.channels
    pair = _grouped_pair(layer, seed, index, distribution)
    V1, V2, m, gamma1 = pair["V1"], pair["V2"], pair["m"], pair["gamma"]
    beta1 = channel_shift(gamma1, V1, g, *box, mode=shift_mode, groups=G)
    shifted = block_product(V2, column(beta1), G)
    beta2 = tuple(fmpq(layer.bias[r]) - shifted[r, 0] for r in range(c_out))
    C, (kh, kw) = g.input_shape[0], g.kernel_shape
    first = FrozenLayer(input_node, Conv(g, V1, G), gamma1, beta1, "relu",
                        record=kernel_record(pair["records"][0], (G * m, C // G, kh, kw)))
    second = FrozenLayer(input_node + 1, Conv(ConvGeometry(g.output_shape(G * m), (1, 1)), V2, G),
                         tuple(fmpq(1) for _ in range(c_out)), beta2, layer.activation,
                         record=kernel_record(pair["records"][1], (c_out, m, 1, 1)))
    witness = {"layer": index, "kind": conv.NAME, "channels": G * m, "groups": G,
               "system": "V_in^T khatri_rao V_out, one per group", "system_size": m,
               "rank": m, "prime": pair["prime"], "ranks_mod_prime": pair["ranks"],
               "stream_key": pair["key"], "singular_draws": []}
    report = LayerReport(
        layer=index, d_in=op.weight.ncols(), d_out=c_out, widths=(G * m, c_out), systems=G,
        system_size=m, rank=G * m, gamma_bits=max_bits(fmpq_mat([list(gamma1)])),
        beta_bits=max(max_bits(fmpq_mat([list(beta1)])), max_bits(fmpq_mat([list(beta2)]))),
        attempts=1, seconds=time.perf_counter() - t0, witness=witness,
        system_ranks=tuple((m, m) for _ in range(G)))
    return [first, second], report


def _whole_patch(layer: TargetLayer) -> TargetLayer:
    """A grouped convolution as the ungrouped convolution of the same map: its kernel over the
    whole patch, each group's block on the diagonal (the layer itself when it has one group)."""
    op = _conv(layer)
    if op.groups == 1:
        return layer
    W, G = fmpq_mat(op.weight), op.groups
    per, d = W.nrows() // G, W.ncols()
    whole = fmpq_mat(W.nrows(), d * G)
    for r in range(W.nrows()):
        for t in range(d):
            whole[r, (r // per) * d + t] = W[r, t]
    return TargetLayer(Conv(op.geometry, whole), layer.bias, layer.activation)


def _conv(layer: TargetLayer) -> Conv:
    return conv_of(layer, f"the {conv.NAME} realizer")


def _layer(run: Sequence[TargetLayer]) -> TargetLayer:
    (layer,) = run
    _conv(layer)
    return layer


def conv_choice(layer: TargetLayer, options: Options, distribution: str, index: int = 1
                ) -> dict[str, Any]:
    """Plain Theorem 1 over channels or channel blocks, and how many channels per block: the
    least estimated time among those the checker will accept
    (:func:`~exactnorm.constructions.choice.choose_channel_blocks`; the plain pair only while
    its system ``c_out·C·kh·kw`` is within ``max_system``). ``options.block`` (input channels
    per block) overrides: a block of every channel is the plain pair.

    A grouped convolution (target layer ``index``) is realized group by group
    (:func:`realize_grouped`): ``G`` systems of size ``c_g·d_g``, solved here at attempt 0.
    Format 3 redraws whole Khatri–Rao pairs only, so when a group's system is singular, or
    beyond ``max_system``, the layer is realized as the ungrouped convolution of the same map
    (its block-diagonal kernel, :func:`_whole_patch`) by the choice below, and the reason says
    so.

    >>> from flint import fmpq, fmpq_mat
    >>> from exactnorm.model.layers import TargetLayer
    >>> from exactnorm.model.operators import Conv, ConvGeometry
    >>> wide = TargetLayer(Conv(ConvGeometry((32, 4, 4), (3, 3), padding=(1, 1)),
    ...                         fmpq_mat(32, 288)), (fmpq(0),) * 32, "relu")
    >>> c = conv_choice(wide, Options(), "nonzero:8")
    >>> c["mode"], c["block"], c["estimate"].system_size
    ('blocks', 1, 288)
    """
    op = _conv(layer)
    grouped = ""
    if op.groups > 1:
        c_g = op.channels // op.groups
        m = c_g * op.weight.ncols()
        try:
            if m > options.max_system:
                raise LimitExceededError(f"m = {m} > max_system {options.max_system}")
            _grouped_pair(layer, options.seed, index, distribution)
        except (SingularSystemError, LimitExceededError) as exc:
            grouped = f"its {op.groups} groups not realized apart ({str(exc)[:160]}); "
            op = _conv(_whole_patch(layer))
        else:
            g = op.geometry
            C_g = g.input_shape[0] // op.groups
            # one group's plain pair; the whole kernel's bits bound every group's
            one = estimate_channel_blocks(c_g, C_g, g.kernel_shape[0] * g.kernel_shape[1], C_g,
                                          weight=op.weight, positions=g.positions,
                                          distribution=distribution)
            return {"mode": "grouped", "block": None, "why": f"{op.groups} groups",
                    "estimate": dataclasses.replace(combined_estimate([one] * op.groups),
                                                    depth=2)}
    W, g = op.weight, op.geometry
    mode, block, estimate, why = choose_channel_blocks(
        W.nrows(), g.input_shape[0], g.kernel_shape[0] * g.kernel_shape[1], weight=W,
        positions=g.positions, distribution=distribution, max_system=options.max_system,
        block=options.block)
    return {"mode": mode, "block": block, "estimate": estimate, "why": grouped + why}


class ConvRealizer:
    """Realizer of the ``conv`` kind (module doc): one convolution per run, as one Theorem 1
    pair or by channel blocks (:mod:`~exactnorm.constructions.convblocks`)."""

    kind = conv.NAME
    whole_options: tuple[str, ...] = ()
    #: options of :class:`Options` this kind takes in a run (``block``: channels per block)
    run_options: tuple[str, ...] = ("block",)
    constructions: dict[str, Any] = {}

    def claim(self, layers: Sequence[TargetLayer], i: int) -> int:
        return 1

    def plan(self, run: Sequence[TargetLayer], box: Box, first: int, options: Options,
             distribution: str) -> RunPlan:
        layer = _layer(run)
        choice = conv_choice(layer, options, distribution, first)
        whole = _whole_patch(layer).weight
        m = whole.nrows() * whole.ncols()
        est = choice["estimate"]
        if choice["mode"] == "grouped":
            return RunPlan(self.kind, first, 1, "theorem1 per group", est,
                           f"target layer {first} {self.kind}: Theorem 1 per group, "
                           f"{choice['why']} of m = {est.system_size}",
                           choice={"mode": "grouped"})
        if choice["mode"] == "plain":
            why = f" ({choice['why']})" if _conv(layer).groups > 1 else ""
            return RunPlan(self.kind, first, 1, "theorem1 over channels", est,
                           f"target layer {first} {self.kind}: Theorem 1 over channels, m = {m}"
                           + why, choice={"mode": "plain"})
        T = est.systems
        return RunPlan(self.kind, first, 1, "channel blocks", est,
                       f"target layer {first} {self.kind}: {T} channel blocks of "
                       f"{choice['block']}, systems of size ≤ {est.system_size} instead of "
                       f"m = {m} ({choice['why']})",
                       choice={"mode": "blocks", "block": choice["block"]})

    def realize(self, run: Sequence[TargetLayer], box: Box, plan: RunPlan, *, start: int,
                options: dict[str, Any]) -> Realized:
        common = dict(seed=options["seed"], index=plan.first, input_node=start,
                      distribution=options["distribution"], retry=options["retry"],
                      shift_mode=options["shift_mode"], solver=options["solver"],
                      solve_jobs=min(options["jobs"], 2))
        layers: list[FrozenLayer]
        if plan.choice.get("mode") == "grouped":
            layers, report = realize_grouped(_layer(run), box, seed=options["seed"],
                                             index=plan.first, input_node=start,
                                             distribution=options["distribution"],
                                             shift_mode=options["shift_mode"])
        elif plan.choice.get("mode") == "blocks":  # a grouped layer's groups not apart
            layers, report = realize_conv_blocks(_whole_patch(_layer(run)), box,
                                                 block=plan.choice["block"], jobs=options["jobs"],
                                                 scheduler=options.get("scheduler"), **common)
        else:
            layers, report = realize_conv_layer(_whole_patch(_layer(run)), box, **common)
        return Realized(list(layers), [start + len(layers)], [report], [report.witness])

    def provenance_defaults(self) -> dict[str, Any]:
        return {}

    def plan_whole(self, target: Any, options: Options) -> None:
        return None


REALIZER = ConvRealizer()
