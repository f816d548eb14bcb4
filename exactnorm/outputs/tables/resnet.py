"""T10: a ResNet-8-shaped target realized with channel blocks where Theorem 1 is too large
(fixed seeds, no timings).

The target (:func:`resnet8`) is a seeded random ResNet-8 on a small image: a 3×3 stem
``1 → c1``, a BasicBlock ``c1 → c1`` with an identity shortcut, BasicBlocks ``c1 → c2`` and
``c2 → c3`` of stride 2 with projection shortcuts (a 1×1 stride-2 convolution, identity
activation, its own target layer, added before the block's last ReLU), a global average pooling
and a dense ``c3 → classes`` head; weights ``k/8`` with ``k ∈ [−8, 8]`` from ``random.Random``,
box ``[0, 1]^{H·W}``. It is realized by :func:`~exactnorm.constructions.plan.construct` with
default options: each convolution by one Theorem 1 pair or by channel blocks
(:mod:`~exactnorm.constructions.convblocks`), whichever the cost model estimates faster among
those the checker accepts (the pair only while its Khatri–Rao system ``c_out·C·kh·kw`` is within
``max_system``, 4,096). Each row is one target
layer: what it reads and adds, channels, the construction, block count, system sizes and exact
ranks, bit sizes, frozen depth, and the cost model's time estimate for the plain pair and for
what was built (deterministic, unlike a measured time: measured times, memory and bytes are
printed by ``benchmarks/bench_resnet.py``). Every frozen checkpoint is compared exactly with its
target node at the box's corners and two interior points.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from flint import fmpq, fmpq_mat

from exactnorm.constructions.choice import estimate_pair
from exactnorm.constructions.plan import construct
from exactnorm.model.network import TargetLayer, TargetNetwork, Wiring
from exactnorm.model.operators import Conv, ConvGeometry, GlobalAvgPool
from exactnorm.model.routes import Route, Skip
from exactnorm.outputs.tables.proof_table import ProofTable

__all__ = ["table_t10", "resnet8", "T10_SIDE"]

#: the image side of T10's target (8×8: stages of 8×8, 4×4 and 2×2 positions)
T10_SIDE = 8


def resnet8(side: int, widths: Sequence[int] = (8, 16, 32), *, classes: int = 10,
            seed: int = 0, weights: dict[str, Any] | None = None) -> TargetNetwork:
    """A ResNet-8 on a ``1 × side × side`` image (module doc) with channel widths ``(c1, c2,
    c3)``: 11 target layers (stem; block 1: two convolutions; blocks 2 and 3: convolution,
    projection, convolution; global pooling; dense head).

    ``weights`` (optional) maps the layer names ``stem, b1c1, b1c2, b2c1, b2p, b2c2, b3c1, b3p,
    b3c2, fc`` to ``(W, b)`` exact matrices (``c_out × C·kh·kw`` and a vector), e.g. read from a
    trained model; missing names are drawn from ``random.Random(seed)``.

    >>> t = resnet8(8, (2, 3, 4), classes=2)
    >>> t.depth, t.widths[-1], [t.wire(i).input for i in (5, 6)], t.wire(6).skip.source
    (11, 2, [3, 4], 5)
    """
    rng = random.Random(seed)
    given = weights or {}

    def conv(name: str, shape: tuple[int, int, int], c: int, k: int, s: int,
             act: str) -> TargetLayer:
        p = k // 2
        g = ConvGeometry(shape, (k, k), (s, s), (p, p))
        if name in given:
            W, b = given[name]
        else:
            W = fmpq_mat(c, g.patch_size, [fmpq(rng.randint(-8, 8), 8)
                                           for _ in range(c * g.patch_size)])
            b = tuple(fmpq(rng.randint(-8, 8), 8) for _ in range(c))
        return TargetLayer(Conv(g, W), tuple(b), act)

    c1, c2, c3 = widths
    h2, h3 = (side + 1) // 2, ((side + 1) // 2 + 1) // 2
    L = [conv("stem", (1, side, side), c1, 3, 1, "relu"),
         conv("b1c1", (c1, side, side), c1, 3, 1, "relu"),
         conv("b1c2", (c1, side, side), c1, 3, 1, "relu"),
         conv("b2c1", (c1, side, side), c2, 3, 2, "relu"),
         conv("b2p", (c1, side, side), c2, 1, 2, "identity"),
         conv("b2c2", (c2, h2, h2), c2, 3, 1, "relu"),
         conv("b3c1", (c2, h2, h2), c3, 3, 2, "relu"),
         conv("b3p", (c2, h2, h2), c3, 1, 2, "identity"),
         conv("b3c2", (c3, h3, h3), c3, 3, 1, "relu")]
    pool = TargetLayer(GlobalAvgPool((c3, h3, h3)))
    if "fc" in given:
        W, b = given["fc"]
    else:
        W = fmpq_mat(classes, c3, [fmpq(rng.randint(-8, 8), 8) for _ in range(classes * c3)])
        b = tuple(fmpq(rng.randint(-8, 8), 8) for _ in range(classes))
    head = TargetLayer(W, tuple(b), "identity")

    def identity(node: int, layer: TargetLayer) -> Skip:
        return Skip(node, Route.identity(layer.width), "identity")

    wiring = (Wiring(0), Wiring(1), Wiring(2, identity(1, L[2])), Wiring(3), Wiring(3),
              Wiring(4, identity(5, L[5])), Wiring(6), Wiring(6), Wiring(7, identity(8, L[8])),
              Wiring(9), Wiring(10))
    n = side * side
    return TargetNetwork((*L, pool, head), (fmpq(0),) * n, (fmpq(1),) * n, wiring=wiring)


#: T10's row names of the ResNet-8's target layers
NAMES = ("stem", "block 1 conv 1", "block 1 conv 2", "block 2 conv 1", "block 2 projection",
         "block 2 conv 2", "block 3 conv 1", "block 3 projection", "block 3 conv 2",
         "global pool", "fc")


def _reads(target: TargetNetwork, i: int) -> str:
    w = target.wire(i)
    return f"a{w.input}" + (f" + a{w.skip.source}" if w.skip is not None else "")


def _sizes(report: Any) -> str:
    runs: list[list[Any]] = []
    for _, m in report.per_system:
        if runs and runs[-1][0] == m:
            runs[-1][1] += 1
        else:
            runs.append([m, 1])
    return ", ".join(f"{m}" + (f" ×{n}" if n > 1 else "") for m, n in runs)


def _points(n: int) -> list[list[Fraction]]:
    rng = random.Random(0)
    return [[Fraction(0)] * n, [Fraction(1)] * n,
            *([Fraction(rng.randint(0, 16), 16) for _ in range(n)] for _ in range(2))]


def table_t10() -> ProofTable:
    """T10: per target layer of a ResNet-8 on a 1×8×8 image, channel blocks where needed."""
    target = resnet8(T10_SIDE)
    c = construct(target, seed=0)
    points = _points(len(target.lower))
    agree = 0
    for x in points:
        want = target.evaluate_nodes(x)[1:]
        agree += c.network.evaluate_checkpoints(x) == list(want)
    rows = []
    start = 0
    shapes = [(1, T10_SIDE, T10_SIDE)] + [layer.output_shape for layer in target.layers]
    for i, (layer, r, cp) in enumerate(zip(target.layers, c.reports, c.network.checkpoints), 1):
        depth = cp - start
        start = cp
        kind, plain = layer.kind, r.system_size
        if not r.systems:  # a fixed map: nothing is solved
            channels, built = f"{layer.input_size}→{layer.width}", "fixed map"
        elif len(layer.output_shape) == 1:  # a matrix on the flattened value
            channels, built = f"{layer.input_size}→{layer.width}", "Theorem 1"
        else:
            kind = " ".join(layer.operator.describe().split(" ")[:3])  # conv k×k sS
            channels = f"{shapes[target.wire(i).input][0]}→{r.d_out}"
            built = (f"{r.systems} blocks of {r.witness['block']}" if r.systems > 1
                     else "Theorem 1 pair")
            plain = r.d_out * r.d_in  # Theorem 1's one system: c_out·C·kh·kw
        est_plain = estimate_pair(plain).seconds if plain else 0.0
        est_built = sum(estimate_pair(m).seconds for _, m in r.per_system) if r.systems else 0.0
        rows.append([i, NAMES[i - 1], kind, _reads(target, i), channels, built,
                     _sizes(r) if r.systems else "–", r.rank_text() if r.systems else "–",
                     r.gamma_bits or "–", r.beta_bits or "–", depth,
                     f"{est_plain:.1f}" if plain else "–",
                     f"{est_built:.1f}" if r.systems else "–"])
    return ProofTable(
        key="T10", slug="resnet8_channel_blocks",
        title="A ResNet-8 with identity and projection shortcuts, channel blocks where "
              "Theorem 1 is too large, per target layer",
        command="exactnorm tables --only T10",
        columns=["layer", "name", "kind", "reads", "channels", "construction",
                 "system sizes", "exact rank", "γ bits", "β bits", "frozen layers",
                 "est. s (one pair)", "est. s (built)"],
        rows=rows,
        notes=[
            f"Target: resnet8({T10_SIDE}) (exactnorm.outputs.tables.resnet): 1×{T10_SIDE}×"
            f"{T10_SIDE} image, widths 8/16/32, weights k/8 with k ∈ [−8, 8] from "
            "random.Random(0), box [0, 1]^64; reads: aP + aQ is the node read plus the "
            "shortcut added before the ReLU (identity from the block input or from the "
            "projection's node).",
            "Construction: construct(target, seed=0), default options: a convolution is one "
            "Theorem 1 pair or channel blocks, whichever the cost model estimates faster among "
            "those the checker accepts (the pair only while c_out·C·kh·kw ≤ max_system = "
            "4096; exactnorm.constructions.convblocks: per block a "
            "masked k×k convolution and a 1×1 convolution, an identity skip accumulating the "
            "blocks, the final V_F as checkpoint); the checkpoint of a layer with a shortcut "
            "carries it as its residual.",
            "system sizes / exact rank: unknowns of every Khatri–Rao system (×n: n equal "
            "systems) and exact rank / unknowns; γ/β bits: largest numerator or denominator "
            "bit size; frozen layers: the segment's depth.",
            "est. s: the cost model's estimate (exactnorm.constructions.choice, one process) "
            "for Theorem 1's one pair of size c_out·C·kh·kw and for the systems built; "
            "measured times are in benchmarks/bench_resnet.py.",
            f"Exact evaluation: every frozen checkpoint equals its target node at "
            f"{agree} of {len(points)} points (the box's two corners and two interior points).",
        ],
    )
