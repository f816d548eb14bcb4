"""T9: convolutional targets by Theorem 1 over channels, per target layer (fixed seeds, no
timings).

Two small deterministic CNNs (rational weights from a seeded ``random.Random``, box
``[0, 1]^{C·H·W}``) are certified by :func:`~exactnorm.constructions.plan.construct` with
default options; each row is one target layer: its kind and geometry, channels, the Khatri–Rao
system's size and exact rank, and the bit sizes of γ and β. Every certificate is written,
read back and cross-checked by exact evaluation of both networks at the box's corners and two
interior points (:func:`~exactnorm.certificate.exact_agreement`).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from flint import fmpq, fmpq_mat

from exactnorm.certificate import certificate_document, exact_agreement
from exactnorm.constructions.plan import construct
from exactnorm.model.network import TargetLayer, TargetNetwork
from exactnorm.model.operators import AvgPool, Conv, ConvGeometry
from exactnorm.outputs.tables.proof_table import ProofTable

__all__ = ["table_t9", "t9_targets"]


Builder = Callable[[tuple[int, ...], Callable[[int, int], fmpq_mat],
                    Callable[[int], tuple[fmpq, ...]]], Any]


def _conv(c: int, k: int, s: int = 1, p: int = 0, d: int = 1) -> Builder:
    """A ReLU convolution of ``c`` channels, square ``k×k`` kernel, stride, padding, dilation."""
    def build(shape: tuple[int, ...], mat: Any, vec: Any) -> TargetLayer:
        g = ConvGeometry(shape, (k, k), (s, s), (p, p), (d, d))  # type: ignore[arg-type]
        return TargetLayer(Conv(g, mat(c, g.patch_size)), vec(c), "relu")
    return build


def _pool() -> Builder:
    """A 2×2 average pooling of stride 2."""
    def build(shape: tuple[int, ...], mat: Any, vec: Any) -> TargetLayer:
        return TargetLayer(AvgPool(ConvGeometry(shape, (2, 2), (2, 2))))  # type: ignore[arg-type]
    return build


def _linear(out: int) -> Builder:
    """A linear layer (identity activation) reading the flattened value."""
    def build(shape: tuple[int, ...], mat: Any, vec: Any) -> TargetLayer:
        d = 1
        for v in shape:
            d *= v
        return TargetLayer(mat(out, d), vec(out), "identity")
    return build


def _cnn(name: str, seed: int, input_shape: tuple[int, int, int],
         spec: list[Builder]) -> tuple[str, TargetNetwork]:
    rng = random.Random(seed)

    def mat(r: int, c: int) -> fmpq_mat:
        return fmpq_mat(r, c, [fmpq(rng.randint(-16, 16), 16) for _ in range(r * c)])

    def vec(n: int) -> tuple[fmpq, ...]:
        return tuple(fmpq(rng.randint(-16, 16), 16) for _ in range(n))

    shape: tuple[int, ...] = input_shape
    layers: list[Any] = []
    for build in spec:
        layer = build(shape, mat, vec)
        layers.append(layer)
        shape = layer.output_shape
    n = input_shape[0] * input_shape[1] * input_shape[2]
    return name, TargetNetwork(tuple(layers), (fmpq(0),) * n, (fmpq(1),) * n)


#: the two CNNs of T9: name, seed, input image, layers
_T9: tuple[tuple[str, int, tuple[int, int, int], list[Builder]], ...] = (
    ("cnn-8", 9, (1, 8, 8), [_conv(c=2, k=3, p=1), _pool(), _conv(c=3, k=3), _linear(out=2)]),
    ("cnn-12", 12, (1, 12, 12), [_conv(c=3, k=5, s=1), _pool(), _conv(c=4, k=2, d=2),
                                 _linear(out=4), _linear(out=2)]),
)


def t9_targets() -> list[tuple[str, TargetNetwork]]:
    """The two CNNs of T9: 1×8×8 (padding, pooling, a dense head) and 1×12×12 (stride,
    dilation, two pointwise-head layers)."""
    return [_cnn(*spec) for spec in _T9]


def _row_labels(layer: TargetLayer, shape: Sequence[int], widths: Sequence[int]
                ) -> tuple[str, str, str, str]:
    """The kind, input, channels and frozen-width columns of one target layer reading a value
    of tensor shape ``shape``, from what the layer has (its map's description, an image out,
    tuned parameters), not from its kind's name."""
    words = layer.operator.describe().split(",")[0].split(" ")  # kind, window, s, p, d
    if len(layer.output_shape) == 1:  # a matrix on the flattened value
        return (layer.kind, str(layer.input_size), f"{layer.input_size}→{layer.width}",
                ", ".join(map(str, widths[:3])) + (" …" if len(widths) > 3 else ""))
    image = "×".join(map(str, shape))
    if not layer.channels:  # a fixed map: nothing is solved
        return " ".join(words[:3]), image, f"{layer.output_shape[0]}", "fixed map"
    return " ".join(words), image, f"{shape[0]}→{layer.channels}", f"{widths[0]}, {widths[1]}"


def table_t9() -> ProofTable:
    """T9: per target layer of two small CNNs certified by Theorem 1 over channels."""
    rows = []
    for (name, target), (_, _, image, _) in zip(t9_targets(), _T9):
        c = construct(target, seed=0)
        doc = certificate_document(c)
        points = exact_agreement(doc, points=4, seed=0)
        shape: Sequence[int] = image
        for r, layer in zip(c.reports, target.layers):
            kind, reads, channels, frozen = _row_labels(layer, shape, r.widths)
            shape = layer.output_shape
            rows.append([name, r.layer, kind, reads, channels, frozen, r.systems,
                         r.system_size or "–", r.rank_text() if r.systems else "–",
                         r.gamma_bits or "–", r.beta_bits or "–",
                         f"equal at {points} points"])
    return ProofTable(
        key="T9", slug="conv_theorem1_channels",
        title="Convolutional targets: Theorem 1 over channels, per target layer",
        command="exactnorm tables --only T9",
        columns=["network", "layer", "kind", "input", "channels", "frozen channels/widths",
                 "systems", "m", "exact rank", "γ bits", "β bits", "exact evaluation"],
        rows=rows,
        notes=[
            "Targets: t9_targets() (exactnorm.outputs.tables.conv), weights k/16 with "
            "k ∈ [−16, 16] from random.Random(9) and random.Random(12), ReLU after every "
            "convolution, identity after the dense layers, box [0, 1]^{C·H·W}.",
            "Construction: certify_conv(seed=0) with default options; a convolution with "
            "C·kh·kw = d_in patch entries and c output channels becomes a frozen convolution of "
            "d_in·c channels (same geometry, per-channel γ and integer shift β) and a pointwise "
            "one of c channels; m = d_in·c is the size of Theorem 1's Khatri–Rao system.",
            "Dense layers after the flatten: the automatic choice (Theorem 1 here); pooling is "
            "a declared fixed map, nothing is solved for it.",
            "exact rank: exact rank / unknowns of every system; γ/β bits: largest numerator or "
            "denominator bit size.",
            "exact evaluation: both networks evaluated exactly at the two corners of the box "
            "and two interior points; every checkpoint equals its target layer (a dense "
            "cross-check; the checkers' convolution rules are specified in "
            "docs/certificate-format.md).",
        ],
    )
