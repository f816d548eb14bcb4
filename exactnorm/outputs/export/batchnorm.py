"""BatchNorm-style parameters of a certificate's frozen network: the exact conversion both
ways, the per-layer statistics, and the float copy every float export starts from.

Shared by the export formats (the modules of :mod:`exactnorm.outputs.export`), so that no format
module imports another. The correctness argument is that of :mod:`exactnorm.outputs.export`:
``γ̂ (v − μ)/s + β̂ = Γ v + β`` for every ``v`` exactly when ``γ̂ = Γ·s`` and ``β̂ = β + Γ·μ``.
The statistics are per tuned entry: per neuron of a dense layer, per channel of a convolution
(one normalization for all positions, as BatchNorm2d); a fixed map (a pooling) has none.

>>> from fractions import Fraction as F
>>> gh, bh = to_batchnorm((F(1, 3),), (F(-2),), (F(5),), (F(1, 2),))
>>> gh, bh
((1/6,), (-1/3,))
>>> from_batchnorm(gh, bh, (F(5),), (F(1, 2),))
((1/3,), (-2,))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from flint import fmpq, fmpz

from exactnorm.certificate import float_network, read_frozen
from exactnorm.errors import InputError, ShapeError
from exactnorm.exact.rationals import parse_option_number
from exactnorm.model.network import FloatNetwork, FrozenNetwork
from exactnorm.model.operators.base import rounded
from exactnorm.outputs.stages import ProgressHook

__all__ = ["EXPORT_FORMAT", "EXPORT_VERSION", "DEFAULT_EPS", "FLOAT_WARNING", "ONNX_OPSET",
           "FLOAT_DTYPES", "to_batchnorm", "from_batchnorm", "certificate_network",
           "layer_stats", "float_layers", "floats", "float_view", "Stats"]

EXPORT_FORMAT = "exactnorm.batchnorm"
EXPORT_VERSION = 1
#: PyTorch's BatchNorm default; ``running_var = s² − eps`` so that ``sqrt(var + eps) = s``.
DEFAULT_EPS = 1e-5
FLOAT_WARNING = ("float export: gamma, beta, V, running_mean and running_var are rounded "
                 "floats and NOT certified; the exact parameters are in the certificate or the "
                 "JSON export (running_var = scale^2 - eps)")

Vector = tuple[fmpq, ...]


def _q(x: Any, what: str) -> fmpq:
    if isinstance(x, fmpq):
        return x
    if isinstance(x, fmpz):
        return fmpq(x)
    if isinstance(x, float):
        raise InputError(f"{what}: float {x!r} is not exact; pass an int, Fraction or 'p/q'")
    f = parse_option_number(x, where=what)  # "1e-3" is 1/1000 here, as on the command line
    return fmpq(f.numerator, f.denominator)


def _per_neuron(value: Any, n: int, what: str) -> Vector:
    """A scalar (broadcast) or a sequence of ``n`` exact numbers."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)):
        return (_q(value, what),) * n
    vals = tuple(_q(x, what) for x in value)
    if len(vals) != n:
        raise ShapeError(f"{what} has length {len(vals)}, expected {n}")
    return vals


def _positive(scale: Vector) -> None:
    for k, s in enumerate(scale):
        if s <= 0:
            raise InputError(f"scale[{k}] = {s} must be positive (s > 0)")


def to_batchnorm(gamma: Sequence[Any], beta: Sequence[Any], mean: Any,
                 scale: Any) -> tuple[Vector, Vector]:
    """``(Γ, β)`` → BatchNorm affine ``(γ̂, β̂) = (Γ·s, β + Γ·μ)``, exactly (docs/model.md,
    "Normalization layers").

    ``mean`` and ``scale`` are scalars or per-neuron sequences; ``scale`` must be positive.
    """
    n = len(gamma)
    if len(beta) != n:
        raise ShapeError(f"gamma has length {n}, beta {len(beta)}")
    mu = _per_neuron(mean, n, "mean")
    s = _per_neuron(scale, n, "scale")
    _positive(s)
    G = tuple(_q(x, "gamma") for x in gamma)
    B = tuple(_q(x, "beta") for x in beta)
    return (tuple(g * sk for g, sk in zip(G, s)),
            tuple(b + g * m for g, b, m in zip(G, B, mu)))


def from_batchnorm(gamma_hat: Sequence[Any], beta_hat: Sequence[Any], mean: Any,
                   scale: Any) -> tuple[Vector, Vector]:
    """BatchNorm affine ``(γ̂, β̂)`` → ``(Γ, β) = (γ̂/s, β̂ − γ̂ μ/s)``, exactly (docs/model.md,
    "Normalization layers")."""
    n = len(gamma_hat)
    if len(beta_hat) != n:
        raise ShapeError(f"gamma_hat has length {n}, beta_hat {len(beta_hat)}")
    mu = _per_neuron(mean, n, "mean")
    s = _per_neuron(scale, n, "scale")
    _positive(s)
    GH = tuple(_q(x, "gamma_hat") for x in gamma_hat)
    BH = tuple(_q(x, "beta_hat") for x in beta_hat)
    G = tuple(g / sk for g, sk in zip(GH, s))
    return G, tuple(b - g * m for g, b, m in zip(G, BH, mu))


def certificate_network(cert_doc: dict[str, Any]) -> FrozenNetwork:
    """The exact frozen network of a certificate document of any kinds (parse only)."""
    if not isinstance(cert_doc, dict):
        raise InputError("expected a certificate document (a JSON object)")
    return read_frozen(cert_doc)


def float_view(source: Any, progress: ProgressHook | None = None) -> FloatNetwork:
    """The float copy of a certificate document (read without any exact matrix:
    :func:`~exactnorm.certificate.float_network`), of a frozen network, or of a construction."""
    if isinstance(source, FloatNetwork):
        return source
    network = getattr(source, "network", source)
    if isinstance(network, FrozenNetwork):
        return network.float_copy()
    if isinstance(source, dict):
        return float_network(source, progress=progress)
    raise InputError("expected a certificate document, a construction or a frozen network")


def layer_stats(mean: Any, scale: Any, net: Any) -> list[tuple[Vector, Vector]]:
    """Per-layer ``(μ, s)``: a scalar for every tuned entry, or one entry (scalar/sequence) per
    layer; ``net`` is anything with ``depth`` and ``layers[j].gamma`` (the tuned entries: one per
    neuron, per channel, none for a fixed map)."""
    def per_layer(value: Any) -> list[Any]:
        if isinstance(value, (list, tuple)) and len(value) == net.depth and net.depth > 0 \
                and any(isinstance(v, (list, tuple)) for v in value):
            return list(value)
        return [value] * net.depth

    means, scales = per_layer(mean), per_layer(scale)
    out = []
    layers: Sequence[Any] = net.layers
    for j, (layer, m, s) in enumerate(zip(layers, means, scales), 1):
        n = len(layer.gamma)  # a fixed map (a pooling) tunes nothing
        mu = _per_neuron(m, n, f"layer {j} mean") if n else ()
        sc = _per_neuron(s, n, f"layer {j} scale") if n else ()
        _positive(sc)
        out.append((mu, sc))
    return out


#: ONNX opset of the ONNX export (``BatchNormalization`` in inference form since opset 15).
ONNX_OPSET = 15
FLOAT_DTYPES = {"float32": np.float32, "float64": np.float64}


class Stats(dict[str, np.ndarray]):
    """A layer's float normalization: ``gamma_hat``, ``beta_hat``, ``mean``, ``var`` (the
    framework's ``running_var = s² − eps``), ``gamma``, ``beta`` (the tuned values), float64."""


def float_layers(source: Any, mean: Any, scale: Any, eps: float, *,
                 progress: ProgressHook | None = None
                 ) -> tuple[FloatNetwork, list[Stats | None]]:
    """The float copy (:func:`float_view`) and, per layer with tuned entries, its float
    normalization (:class:`Stats`); ``None`` for a fixed map."""
    if not (isinstance(eps, (int, float)) and eps >= 0):
        raise InputError(f"eps must be a non-negative number, got {eps!r}")
    # straight to float64 arrays: no exact matrix is needed for a rounded copy (the 784-128-10
    # ONNX export took minutes through the exact network)
    net = float_view(source, progress)
    out: list[Stats | None] = []
    for j, (layer, (mu, s)) in enumerate(zip(net.layers, layer_stats(mean, scale, net)), 1):
        if not layer.gamma:
            out.append(None)
            continue
        gh, bh = to_batchnorm(layer.gamma, layer.beta, mu, s)
        var = np.array([float(x) for x in s], dtype=np.float64) ** 2 - eps
        if np.any(var <= 0):
            raise InputError(f"layer {j}: scale² − eps ≤ 0; a framework needs running_var > 0 "
                             f"(use a larger scale or a smaller eps)")
        out.append(Stats(gamma_hat=floats(gh), beta_hat=floats(bh), mean=floats(mu), var=var,
                         gamma=floats(layer.gamma), beta=floats(layer.beta)))
    return net, out


def floats(v: Sequence[fmpq]) -> np.ndarray:
    """Exact numbers rounded to float64, each correctly (Python's ``int / int`` is, as
    ``float(Fraction)`` is, and fast at any size)."""
    return rounded(v)
