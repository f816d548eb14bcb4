"""Reading the ``dense`` kind: ONNX ``Gemm`` and ``MatMul``, the state-dict token ``linear``.

``Gemm(A, B, C)`` computes ``α·A·op(B) + β·C`` with ``op(B) = Bᵀ`` iff ``transB = 1``; in the
``(out, in)`` convention of a target layer that is ``W = α·op(B)ᵀ``, ``b = β·C``, both exact
(``α, β`` are float32 attributes, converted exactly; a scalar ``C`` is broadcast). ``MatMul(X,
B)`` is ``W = Bᵀ``, ``b = 0`` (a following ``Add`` is its bias, folded by the chain). A
``Linear`` module's ``weight`` is ``W`` and its ``bias`` is ``b`` (0 without one). A dense layer
reads a flat value and takes an element-wise affine map of its input (``fold_before``).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
from flint import fmpq, fmpq_mat

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
from exactnorm.model.onnx_common import exact_values, node_label
from exactnorm.model.operators import dense
from exactnorm.model.operators.dense import Dense

__all__ = ["NAME", "ONNX_OPS", "TORCH_TOKENS", "linear"]

NAME = dense.NAME


def _build(raw: Raw) -> TargetLayer:
    assert raw.weight is not None and raw.bias is not None
    return TargetLayer(Dense(raw.weight), rational_row(raw.bias), raw.activation)


def _rows(B: np.ndarray, what: str) -> fmpq_mat:
    if B.ndim != 2:
        raise ShapeError(f"{what}: weight has shape {B.shape}, expected 2-D")
    if B.dtype.kind == "f" and B.dtype.itemsize > 8:
        raise InputError(f"{what} weight has dtype {B.dtype}; save it as float64 or integers")
    if B.dtype.kind not in "iuf":
        raise InputError(f"{what} weight has dtype {B.dtype}, not a number type")
    if B.dtype.kind == "f" and not np.all(np.isfinite(B)):
        raise InputError(f"{what} weight has a NaN or infinite entry")
    return exact_weight(B, f"{what} weight")


def linear(chain: Chain, W: fmpq_mat, b: list[Fraction], what: str) -> None:
    """Append ``W a + b`` (an exact matrix) reading the current flat value."""
    if W.nrows() == 0 or W.ncols() == 0:
        raise ShapeError(f"{what}: an empty weight matrix")
    if len(b) != W.nrows():
        raise ShapeError(f"{what}: bias has {len(b)} entries for {W.nrows()} outputs")
    chain.flat(what, W.ncols())
    chain.add(Raw(NAME, _build, what, W, b, fold_before=True), (W.nrows(),))


def _gemm(chain: Chain, node: Any, attrs: dict[str, Any], consts: Constants) -> None:
    what = node_label(node)
    if attrs.get("transA", 0):
        raise InputError(f"{what}: transA = 1 is not an MLP layer on a batch")
    B = consts.get(node, 1)
    alpha = Fraction(float(np.float32(attrs.get("alpha", 1.0))))
    beta = Fraction(float(np.float32(attrs.get("beta", 1.0))))
    W = _rows(B if attrs.get("transB", 0) else B.T, what)
    if alpha != 1:
        W = W * fmpq(alpha.numerator, alpha.denominator)
    if len(node.input) > 2 and node.input[2]:
        c = exact_values(consts.get(node, 2), f"{what} bias")
        c = c * W.nrows() if len(c) == 1 else c  # ONNX broadcasts a scalar C
        b = [beta * x for x in c]
    else:
        b = [Fraction(0)] * W.nrows()
    linear(chain, W, b, what)


def _matmul(chain: Chain, node: Any, attrs: dict[str, Any], consts: Constants) -> None:
    W = _rows(consts.get(node, 1).T, node_label(node))
    linear(chain, W, [Fraction(0)] * W.nrows(), node_label(node))


def _linear_token(chain: Chain, entry: Entry) -> None:
    W = entry.get("weight")
    if W.ndim != 2:
        raise ShapeError(f"state dict {entry.prefix}.weight must be 2-D, got shape {W.shape}")
    rows = exact_weight(W, f"{entry.prefix}.weight")
    b = exact_vector(entry.get("bias"), f"{entry.prefix}.bias") if entry.has("bias") \
        else [Fraction(0)] * rows.nrows()
    linear(chain, rows, b, entry.label)


#: (domain, op type) → handler(chain, node, attributes, constants)
ONNX_OPS = {("", "Gemm"): _gemm, ("", "MatMul"): _matmul}
#: architecture token → (handler(chain, entry), whether the module has parameters)
TORCH_TOKENS = {"linear": (_linear_token, True)}
