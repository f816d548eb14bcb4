"""Reading the ``conv`` kind: ONNX ``Conv`` (``group`` ≥ 1: grouped and depthwise convolutions
too) and the state-dict tokens ``conv(stride=, padding=, dilation=, groups=)`` (a ``Conv2d``)
and ``block(c[, stride=s][, proj])`` (a residual ``BasicBlock`` of two convolutions with their
BatchNorms and a shortcut: the identity, or ``proj`` a 1×1 convolution with the stride and its
BatchNorm; the block's sum is :meth:`Chain.residual
<exactnorm.model.interop.chain.Chain.residual>`).

A convolution with ``G`` groups and kernel ``K`` of shape ``[c, C/G, kh, kw]`` is the kernel
matrix whose row ``o`` is ``K[o]`` in C order (patch entry ``t = c·kh·kw + u·kw + v`` of its
group's ``C/G`` channels), with symmetric zero padding (:mod:`exactnorm.model.operators.conv`);
its bias is ``b`` (0 without one). It reads an image of known shape; a per-channel affine map
after it (a ``BatchNormalization`` of the target, an ``Add``…) folds into its rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from exactnorm.errors import InputError, ShapeError
from exactnorm.model.interop.chain import (
    Chain,
    Constants,
    Entry,
    Raw,
    exact_vector,
    exact_weight,
    rational_row,
)
from exactnorm.model.layers import TargetLayer
from exactnorm.model.onnx_common import node_label
from exactnorm.model.operators import conv
from exactnorm.model.operators.conv import Conv
from exactnorm.model.operators.window import ConvGeometry

__all__ = ["NAME", "ONNX_OPS", "TORCH_TOKENS"]

NAME = conv.NAME


def _build(raw: Raw) -> TargetLayer:
    assert raw.weight is not None and raw.bias is not None
    g, groups = raw.spec
    return TargetLayer(Conv(g, raw.weight, groups), rational_row(raw.bias), raw.activation)


def _convolution(chain: Chain, W4: np.ndarray, b: list[Fraction] | None,
                 kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
                 dilation: Sequence[int], what: str, groups: int = 1) -> None:
    shape = chain.image(what)
    if type(groups) is not int or groups < 1 or shape[0] % groups:
        raise ShapeError(f"{what}: group = {groups} does not divide the {shape[0]} channels")
    if W4.ndim != 4 or W4.shape[1] * groups != shape[0] or W4.shape[0] % groups:
        raise ShapeError(f"{what}: kernel of shape {W4.shape} does not read {shape[0]} channels "
                         f"in {groups} group(s)")
    g = ConvGeometry(shape, tuple(kernel), tuple(stride), tuple(padding),  # type: ignore[arg-type]
                     tuple(dilation))  # type: ignore[arg-type]
    c = W4.shape[0]
    rows = exact_weight(W4.reshape(c, -1), f"{what} weight")
    bias = b if b is not None else [Fraction(0)] * c
    if len(bias) != c:
        raise ShapeError(f"{what}: bias has {len(bias)} entries for {c} channels")
    chain.add(Raw(NAME, _build, what, rows, bias, spec=(g, groups)), g.output_shape(c))


def _conv(chain: Chain, node: Any, attrs: dict[str, Any], consts: Constants) -> None:
    what = node_label(node)
    if attrs.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        raise InputError(f"{what}: auto_pad is not supported; give explicit pads")
    chain.image(what)
    W4 = consts.get(node, 1)
    pads = list(attrs.get("pads", [0, 0, 0, 0]))
    if len(pads) != 4 or pads[0] != pads[2] or pads[1] != pads[3]:
        raise InputError(f"{what}: pads {pads} are not symmetric")
    b = exact_vector(consts.get(node, 2), f"{what} bias") \
        if len(node.input) > 2 and node.input[2] else None
    _convolution(chain, W4, b, attrs.get("kernel_shape", list(W4.shape[2:])),
                 attrs.get("strides", [1, 1]), pads[:2], attrs.get("dilations", [1, 1]), what,
                 int(attrs.get("group", 1)))


def _conv_token(chain: Chain, entry: Entry) -> None:
    W4 = entry.get("weight")
    b = exact_vector(entry.get("bias"), f"{entry.prefix}.bias") if entry.has("bias") else None
    o = entry.options
    s, p, d = o.get("stride", 1), o.get("padding", 0), o.get("dilation", 1)
    _convolution(chain, W4, b, W4.shape[2:], (s, s), (p, p), (d, d), entry.label,
                 o.get("groups", 1))


def _block_modules(options: dict[str, int]) -> int:
    """Modules with parameters of a ``block``: conv1, bn1, conv2, bn2 (+ the projection's conv
    and bn)."""
    return 6 if options.get("proj") else 4


def _block(chain: Chain, entry: Entry) -> None:
    """A torchvision-style ``BasicBlock``: ``relu(bn2(conv2(relu(bn1(conv1(x))))) +
    shortcut(x))``, ``conv1`` 3×3 with the block's stride, ``conv2`` 3×3, both padded by half
    their kernel; the shortcut the identity or (``proj``) a 1×1 convolution with the stride and
    its BatchNorm, its own target layer (identity activation). Every stored float is read
    exactly, each BatchNorm folded into its convolution."""
    o = entry.options
    if "proj" in o and "identity" in o:
        raise InputError(f"{entry.label}: a shortcut is either proj or identity")
    stride = o.get("stride", 1)
    start = chain.state()

    def convolution(k: int, s: int, half: bool) -> None:
        W = np.asarray(entry.arrays.get(f"{entry.prefixes[k]}.weight", np.zeros((0,))))
        if W.ndim != 4:
            raise InputError(f"{entry.label}: {entry.prefixes[k]}.weight is not a Conv2d "
                             f"kernel (shape {list(W.shape)}); a block's modules are conv1, "
                             f"bn1, conv2, bn2 (and the shortcut's conv and bn) in this order")
        if "channels" in o and W.shape[0] != o["channels"]:
            raise ShapeError(f"{entry.label}: {entry.prefixes[k]}.weight has {W.shape[0]} "
                             f"output channels, the block declares {o['channels']}")
        _conv_token(chain, entry.part(k, NAME, {"stride": s,
                                                "padding": W.shape[2] // 2 if half else 0}))
        chain.batchnorm(entry.part(k + 1, "bn", {"eps": o["eps"]} if "eps" in o else {}))

    convolution(0, stride, True)
    chain.relu(entry.label)
    convolution(2, 1, True)
    main = chain.state()
    shortcut = start
    if o.get("proj"):
        chain.load(start)
        convolution(4, stride, False)
        shortcut = chain.state()
    chain.residual(main, shortcut, (True, True), entry.label)
    chain.relu(entry.label)


#: (domain, op type) → handler(chain, node, attributes, constants)
ONNX_OPS = {("", "Conv"): _conv}
#: architecture token → (handler(chain, entry), whether the module has parameters: a bool, or
#: the number of modules from the token's options)
TORCH_TOKENS: dict[str, tuple[Any, Any]] = {"conv": (_conv_token, True),
                                            "block": (_block, _block_modules)}
