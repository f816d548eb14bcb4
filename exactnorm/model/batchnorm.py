"""A given network's normalization: the BatchNorm record of a frozen layer, and the network with
another tuning (``exactnorm capacity``).

Contract
--------
A *given* network is a :class:`~exactnorm.model.network.FrozenNetwork` whose frozen matrices
``V_j`` are the stored weights (explicit, declared ``fixed``) and whose ``normalizations`` hold,
per layer, the :class:`BatchNorm` that followed its linear map in the model file, or ``None``.
Its tuned parameters are one scale and one shift per neuron after each linear layer: layer ``j``
computes ``h_j = σ_j(γ_j ⊙ (V_j h_{j−1}) + β_j)`` and nothing else changes. Where the layer has a
``BatchNormalization``, what is tuned is that layer's own scale and bias ``(γ_bn, β_bn)``; its
frozen running statistics ``μ, σ²`` (and ``ε``), together with the linear bias ``c``, only
reparametrize them:

    ``γ_bn (V h + c − μ)/√(σ² + ε) + β_bn = γ ⊙ (V h) + β`` with ``γ = γ_bn/√(σ² + ε)`` and
    ``β = β_bn + γ ⊙ (c − μ)``,

a bijection of ``(γ_bn, β_bn)`` onto ``(γ, β)`` (``√(σ² + ε) > 0``). So a target is reachable by
re-tuning the BatchNorms if and only if it is reachable by ``(γ, β)``; the exact ``(γ, β)``
exactnorm finds correspond to ``γ_bn = γ√(σ² + ε)``, ``β_bn = β − γ ⊙ (c − μ)``
(:func:`batchnorm_parameters`: irrational in general, so returned as floats, never certified).
A layer without normalization is tuned as if one were inserted after it (its linear bias ``c`` is
``β``).

Exactness. Every field of a record is the exact rational the model file stores (a float32 ``ε``
of ``1e-5`` is the dyadic rational that float denotes, not 1/100000), so a document states it
exactly (:meth:`BatchNorm.as_json`). The network's *own* γ is
``γ_bn/√(σ² + ε)`` rounded once to float64, the same rounding as the target readers' fold of a
``BatchNormalization`` (:func:`~exactnorm.model.onnx_common.fold_batchnorm`), so a given network
and the same file read as a target compute the same function (tested).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from flint import fmpq

from exactnorm.errors import InputError, ShapeError
from exactnorm.exact.linalg import to_fmpq_mat
from exactnorm.exact.rationals import format_number
from exactnorm.model.box import Box
from exactnorm.model.layers import FrozenLayer
from exactnorm.model.network import FrozenNetwork, TargetNetwork, Wiring
from exactnorm.model.operators.dense import dense_frozen

__all__ = ["BatchNorm", "REPARAMETRIZATION", "retuned", "as_target", "batchnorm_parameters",
           "given_chain", "with_tuning"]

#: the reparametrization a document states next to each BatchNorm record
REPARAMETRIZATION = "γ = γ_bn/√(σ² + ε), β = β_bn + γ(c − μ)"


def _fraction(x: Any) -> Fraction:
    return x if isinstance(x, Fraction) else Fraction(int(x.p), int(x.q)) \
        if isinstance(x, fmpq) else Fraction(x)


@dataclass(frozen=True)
class BatchNorm:
    """A frozen ``BatchNormalization`` after a linear layer ``V h + c``, every number exact:
    its own scale ``gamma`` and shift ``beta`` (``γ_bn``, ``β_bn``), its running statistics
    ``mean`` and ``var`` (``μ``, ``σ²``), ``eps`` (``ε``) and the linear bias ``bias`` (``c``)
    it follows."""

    gamma: tuple[Fraction, ...]
    beta: tuple[Fraction, ...]
    mean: tuple[Fraction, ...]
    var: tuple[Fraction, ...]
    eps: Fraction
    bias: tuple[Fraction, ...]

    def __post_init__(self) -> None:
        for name in ("gamma", "beta", "mean", "var", "bias"):
            object.__setattr__(self, name, tuple(_fraction(x) for x in getattr(self, name)))
        object.__setattr__(self, "eps", _fraction(self.eps))
        n = len(self.gamma)
        if any(len(getattr(self, k)) != n for k in ("beta", "mean", "var", "bias")):
            raise ShapeError(f"a BatchNormalization of {n} channels has statistics or a bias of "
                             f"another length")
        if self.eps < 0 or any(v + self.eps <= 0 for v in self.var):
            raise InputError("a BatchNormalization needs σ² + ε > 0 for every channel")

    @property
    def width(self) -> int:
        return len(self.gamma)

    def scale(self) -> list[Fraction]:
        """``γ_bn/√(σ² + ε)`` rounded once to float64, converted exactly (module docstring)."""
        g = np.array([float(x) for x in self.gamma], dtype=np.float64)
        v = np.array([float(x) for x in self.var], dtype=np.float64)
        s = g / np.sqrt(v + np.float64(float(self.eps)))
        return [Fraction(float(x)) for x in s]

    def own_tuning(self) -> tuple[list[Fraction], list[Fraction]]:
        """The ``(γ, β)`` of the stored network: ``γ = scale()``, ``β = β_bn + γ(c − μ)``."""
        s = self.scale()
        return s, [t + k * (c - m) for k, c, m, t in zip(s, self.bias, self.mean, self.beta)]

    def parameters(self, gamma: Sequence[Any], beta: Sequence[Any]) -> tuple[np.ndarray,
                                                                              np.ndarray]:
        """Float ``(γ_bn, β_bn)`` that realize the exact ``(γ, β)``: ``γ_bn = γ√(σ² + ε)``,
        ``β_bn = β − γ(c − μ)``. Floats: not certified."""
        g = np.array([float(x) for x in gamma])
        b = np.array([float(x) for x in beta])
        c = np.array([float(x) for x in self.bias])
        mu = np.array([float(x) for x in self.mean])
        s = np.sqrt(np.array([float(x) for x in self.var]) + float(self.eps))
        return g * s, b - g * (c - mu)

    def as_json(self) -> dict[str, Any]:
        """What a document states about the record: ``ε`` exactly, and the reparametrization."""
        return {"epsilon": format_number(self.eps), "reparametrization": REPARAMETRIZATION}


def given_chain(net: FrozenNetwork) -> str | None:
    """Why ``net`` is not a chain of dense layers (each reads the layer before it, adds
    nothing), or ``None`` when it is one: what ``capacity`` decides."""
    residuals = dict(net.residuals)
    for j, layer in enumerate(dense_frozen(net.layers, "a given network"), 1):
        if layer.input != j - 1:
            return f"layer {j} reads node {layer.input}, not the layer before it"
        if layer.skips or j in residuals:
            return f"layer {j} adds a skip connection"
    return None


def retuned(net: FrozenNetwork, gammas: Sequence[Sequence[Any]], betas: Sequence[Sequence[Any]],
            box: Box) -> TargetNetwork:
    """The function of a network of dense layers with tuning ``(γ, β)`` as a target on ``box``:
    layer ``j`` is ``σ_j(diag(γ_j) V_j a + β_j)`` exactly, reading the node it reads, a
    checkpoint's residual added before its activation (the target's skip)."""
    if len(gammas) != net.depth or len(betas) != net.depth:
        raise ShapeError(f"{len(gammas)}/{len(betas)} γ/β vectors for {net.depth} layers")
    weights, biases, acts, wiring = [], [], [], []
    residuals = dict(net.residuals)
    for j, (layer, g, b) in enumerate(zip(dense_frozen(net.layers, "a given network"),
                                          gammas, betas), 1):
        if layer.skips:
            raise InputError(f"frozen layer {j} adds a skip after its activation; its function "
                             f"is no target network")
        rows: list[list[Any]] = layer.weight.tolist()
        if len(g) != len(rows) or len(b) != len(rows):
            raise ShapeError(f"layer {j}: γ/β of length {len(g)}/{len(b)} for {len(rows)} "
                             f"neurons")
        gq = to_fmpq_mat([list(g)], f"γ of layer {j}").entries()
        weights.append([[gk * v for v in row] for gk, row in zip(gq, rows)])
        biases.append(list(b))
        acts.append(layer.activation)
        wiring.append(Wiring(layer.input, residuals.get(j)))
    lower, upper = box.bounds(net.input_dim)
    target = TargetNetwork.from_lists(weights, biases, acts, lower=lower, upper=upper,
                                      max_width=max(net.node_dims))
    chain = all(w == Wiring(i) for i, w in enumerate(wiring))
    return target if chain else dataclasses.replace(target, wiring=tuple(wiring))


def as_target(net: FrozenNetwork, box: Box) -> TargetNetwork:
    """The network's own function on ``box``: its layers' γ and β (for a given network, its
    BatchNorm folded with one float64 rounding of the scale)."""
    layers = dense_frozen(net.layers, "a given network")
    return retuned(net, [layer.gamma for layer in layers], [layer.beta for layer in layers], box)


def batchnorm_parameters(net: FrozenNetwork, j: int, gamma: Sequence[Any],
                         beta: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """Float ``(γ_bn, β_bn)`` of layer ``j`` (from 1) that realize the exact ``(γ, β)``
    (:meth:`BatchNorm.parameters`); without a BatchNormalization, the ``(γ, β)`` of one inserted
    with mean 0, variance 1, ε 0. Floats: not certified."""
    norms = net.normalizations or (None,) * net.depth
    norm = norms[j - 1]
    if norm is None:
        return np.array([float(x) for x in gamma]), np.array([float(x) for x in beta])
    return norm.parameters(gamma, beta)


def with_tuning(layer: FrozenLayer, gamma: Sequence[Any], beta: Sequence[Any]) -> FrozenLayer:
    """``layer`` with another ``(γ, β)`` (exact)."""
    return dataclasses.replace(layer, gamma=tuple(to_fmpq_mat([list(gamma)]).entries()),
                               beta=tuple(to_fmpq_mat([list(beta)]).entries()))
