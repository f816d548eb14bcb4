"""Normalization parameters out: BatchNorm-style export of a certificate's ``γ, β`` (SPEC §1).

A normalization layer with frozen statistics (mean ``μ``, scale ``s > 0``) and affine parameters
``γ̂, β̂`` computes ``γ̂ (v − μ)/s + β̂``. That equals our ``Γ v + β`` exactly when

    ``γ̂ = Γ·s``,  ``β̂ = β + Γ·μ``   (and back: ``Γ = γ̂/s``, ``β = β̂ − γ̂ μ/s``),

both directions exact for rational ``μ, s`` (:func:`to_batchnorm`, :func:`from_batchnorm`).

Two file formats:

* JSON (:func:`export_json`, format ``exactnorm.batchnorm`` version 1): exact, numbers as ``"p/q"``;
  :func:`load_exported_json` recovers the certified :class:`~exactnorm.model.network.FrozenNetwork`
  exactly.
* ``.npz`` (:func:`export_npz`): float64 arrays ``V{j}``, ``gamma{j}`` (γ̂), ``beta{j}`` (β̂),
  ``running_mean{j}`` (μ), ``running_var{j}`` for layer ``j`` (from 1). A framework's BatchNorm
  divides by ``sqrt(running_var + eps)``, so ``running_var = s² − eps`` (``eps`` defaults to 1e-5,
  PyTorch's default). **These floats are rounded and not certified**; the file carries a string
  array ``WARNING_floats_not_certified`` saying so.

>>> from fractions import Fraction as F
>>> gh, bh = to_batchnorm((F(1, 3),), (F(-2),), (F(5),), (F(1, 2),))
>>> gh, bh
((1/6,), (-1/3,))
>>> from_batchnorm(gh, bh, (F(5),), (F(1, 2),))
((1/3,), (-2,))
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from flint import fmpq, fmpz

from exactnorm.certificate import network_from_dict, network_to_dict
from exactnorm.errors import ExactnormError, InputError, ShapeError
from exactnorm.exact.files import atomic_write_bytes, npz_bytes
from exactnorm.exact.linalg import to_numpy
from exactnorm.exact.rationals import (
    DEFAULT_MAX_DIGITS,
    format_number,
    parse_number,
    strict_json_loads,
    unlimited_int_digits,
)
from exactnorm.model.network import FrozenNetwork

__all__ = [
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "DEFAULT_EPS",
    "FLOAT_WARNING",
    "to_batchnorm",
    "from_batchnorm",
    "export_npz",
    "export_json",
    "export_document",
    "load_exported_json",
    "evaluate_exported_json",
]

EXPORT_FORMAT = "exactnorm.batchnorm"
EXPORT_VERSION = 1
#: PyTorch's BatchNorm default; ``running_var = s² − eps`` so that ``sqrt(var + eps) = s``.
DEFAULT_EPS = 1e-5
FLOAT_WARNING = ("float64 export: gamma, beta, V, running_mean and running_var are rounded "
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
    f = parse_number(x, where=what)
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
    """``(Γ, β)`` → BatchNorm affine ``(γ̂, β̂) = (Γ·s, β + Γ·μ)``, exactly (SPEC §1).

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
    """BatchNorm affine ``(γ̂, β̂)`` → ``(Γ, β) = (γ̂/s, β̂ − γ̂ μ/s)``, exactly (SPEC §1)."""
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


def _network(cert_doc: dict[str, Any]) -> FrozenNetwork:
    if not isinstance(cert_doc, dict):
        raise InputError("expected a certificate document (a JSON object)")
    return network_from_dict(cert_doc)


def _layer_stats(mean: Any, scale: Any, net: FrozenNetwork) -> list[tuple[Vector, Vector]]:
    """Per-layer ``(μ, s)``: a scalar for all neurons, or one entry (scalar/sequence) per layer."""
    def per_layer(value: Any) -> list[Any]:
        if isinstance(value, (list, tuple)) and len(value) == net.depth and net.depth > 0 \
                and any(isinstance(v, (list, tuple)) for v in value):
            return list(value)
        return [value] * net.depth

    means, scales = per_layer(mean), per_layer(scale)
    out = []
    for j, (layer, m, s) in enumerate(zip(net.layers, means, scales), 1):
        mu = _per_neuron(m, layer.width, f"layer {j} mean")
        sc = _per_neuron(s, layer.width, f"layer {j} scale")
        _positive(sc)
        out.append((mu, sc))
    return out


def export_document(cert_doc: dict[str, Any], mean: Any = 0, scale: Any = 1) -> dict[str, Any]:
    """The exact ``exactnorm.batchnorm`` document for a certificate's network."""
    net = _network(cert_doc)
    frozen = network_to_dict(net)
    layers = []
    for layer, entry, (mu, s) in zip(net.layers, frozen["layers"],
                                     _layer_stats(mean, scale, net)):
        gh, bh = to_batchnorm(layer.gamma, layer.beta, mu, s)
        out = {k: v for k, v in entry.items() if k not in ("gamma", "beta")}
        out.update({
            "gamma_hat": [format_number(x) for x in gh],
            "beta_hat": [format_number(x) for x in bh],
            "mean": [format_number(x) for x in mu],
            "scale": [format_number(x) for x in s],
        })
        layers.append(out)
    return {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "convention": "u = gamma_hat * (V h - mean) / scale + beta_hat; "
                      "framework running_var = scale^2 - eps",
        "domain": cert_doc.get("domain"),
        "layers": layers,
        "checkpoints": frozen["checkpoints"],
    }


def export_json(cert_doc: dict[str, Any], path: str | os.PathLike[str], mean: Any = 0,
                scale: Any = 1) -> dict[str, Any]:
    """Write the exact BatchNorm-style export as JSON (atomic); return the document."""
    doc = export_document(cert_doc, mean, scale)
    with unlimited_int_digits():
        data = (json.dumps(doc, sort_keys=True, indent=1) + "\n").encode()
    atomic_write_bytes(path, lambda fh: fh.write(data))
    return doc


def load_exported_json(path: str | os.PathLike[str], *,
                       max_digits: int = DEFAULT_MAX_DIGITS) -> FrozenNetwork:
    """Read an :func:`export_json` file back; ``Γ, β`` are recovered exactly by
    :func:`from_batchnorm`, so ``FrozenNetwork.evaluate`` gives the certified ``f`` exactly."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {p}: {exc}") from None
    doc = strict_json_loads(raw, what=str(p), max_digits=max_digits)
    if not isinstance(doc, dict) or doc.get("format") != EXPORT_FORMAT:
        raise InputError(f"{p} is not an {EXPORT_FORMAT} document")
    if doc.get("version") != EXPORT_VERSION:
        raise InputError(f"{p}: unsupported {EXPORT_FORMAT} version {doc.get('version')!r}")
    try:
        layers = []
        for j, L in enumerate(doc["layers"], 1):
            num = {k: [parse_number(x, max_digits=max_digits, where=f"layer {j} {k}")
                       for x in L[k]] for k in ("gamma_hat", "beta_hat", "mean", "scale")}
            G, B = from_batchnorm(num["gamma_hat"], num["beta_hat"], num["mean"], num["scale"])
            entry = {k: v for k, v in L.items() if k not in num}
            entry["gamma"] = [format_number(x) for x in G]
            entry["beta"] = [format_number(x) for x in B]
            layers.append(entry)
        cert_like = {"domain": doc["domain"],
                     "network": {"layers": layers, "checkpoints": doc["checkpoints"]}}
    except ExactnormError:
        raise
    except (KeyError, TypeError, AttributeError) as exc:
        raise InputError(f"{p}: malformed {EXPORT_FORMAT} document: {exc!r}"[:300]) from None
    return network_from_dict(cert_like, max_digits=max_digits)


def evaluate_exported_json(path: str | os.PathLike[str], points: Sequence[Sequence[Any]], *,
                           max_digits: int = DEFAULT_MAX_DIGITS) -> list[tuple[fmpq, ...]]:
    """Run an exact JSON export on exact inputs: ``f(x)`` for each ``x`` in ``points``.

    Loads with :func:`load_exported_json` (``Γ = γ̂/s``, ``β = β̂ − γ̂ μ/s``, exact) and evaluates
    with :meth:`~exactnorm.model.network.FrozenNetwork.evaluate`, so the outputs are the certified
    network's, in exact rationals. Inputs are ints, Fractions or ``"p/q"`` strings (no floats).
    The certificate's statement ``f(x) = g(x)`` covers points in the box ``D`` only.
    """
    net = load_exported_json(path, max_digits=max_digits)
    return [net.evaluate(x) for x in points]


def export_npz(cert_doc: dict[str, Any], path: str | os.PathLike[str], mean: Any = 0,
               scale: Any = 1, *, eps: float = DEFAULT_EPS) -> str:
    """Write float64 BatchNorm-style arrays (atomic) and return the not-certified warning.

    Per layer ``j``: ``V{j}`` (frozen weight, ``(out, in)``), ``gamma{j}`` = γ̂, ``beta{j}`` = β̂,
    ``running_mean{j}`` = μ, ``running_var{j}`` = s² − eps, ``input{j}`` (node read), and
    ``skip{j}_{s}`` for a skip from node ``s``; plus ``activations``, ``checkpoints`` and
    ``WARNING_floats_not_certified``. Refuses ``s² ≤ eps`` (the variance would not be positive).
    """
    if not (isinstance(eps, (int, float)) and eps >= 0):
        raise InputError(f"eps must be a non-negative number, got {eps!r}")
    net = _network(cert_doc)
    arrays: dict[str, np.ndarray] = {}
    for j, (layer, (mu, s)) in enumerate(zip(net.layers, _layer_stats(mean, scale, net)), 1):
        gh, bh = to_batchnorm(layer.gamma, layer.beta, mu, s)
        var = np.array([float(x) for x in s], dtype=np.float64) ** 2 - eps
        if np.any(var <= 0):
            raise InputError(f"layer {j}: scale² − eps ≤ 0; a framework needs running_var > 0 "
                             f"(use a larger scale or a smaller eps)")
        arrays[f"V{j}"] = to_numpy(layer.weight)
        arrays[f"gamma{j}"] = np.array([float(x) for x in gh], dtype=np.float64)
        arrays[f"beta{j}"] = np.array([float(x) for x in bh], dtype=np.float64)
        arrays[f"running_mean{j}"] = np.array([float(x) for x in mu], dtype=np.float64)
        arrays[f"running_var{j}"] = var
        arrays[f"input{j}"] = np.array(layer.input, dtype=np.int64)
        for sk in layer.skips:
            arrays[f"skip{j}_{sk.source}"] = to_numpy(sk.weight)
    arrays["activations"] = np.array([layer.activation for layer in net.layers])
    arrays["checkpoints"] = np.array(net.checkpoints, dtype=np.int64)
    arrays["eps"] = np.array(eps, dtype=np.float64)
    arrays["WARNING_floats_not_certified"] = np.array([FLOAT_WARNING])
    data = npz_bytes(arrays)  # fixed zip timestamps: same certificate, same bytes
    atomic_write_bytes(path, lambda fh: fh.write(data))
    return FLOAT_WARNING
