"""Proof table T7: sizes, exact bit sizes and the float64 alternative, for Theorem 1 (no timings).

Timings are machine-dependent and live in ``benchmarks/results/``; T7 keeps what a fixed seed
determines: widths, Γ/β bit sizes, certificate size, and how far a float64 solve of the same
system lands from the exact Γ and the exact target.

>>> r = float_construction_errors(2)
>>> r["m"], r["wrong_pattern_neurons"]
(4, 0)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from exactnorm.outputs.tables.proof_table import ProofTable

__all__ = ["float_construction_errors", "table_t7", "T7_SIZES"]

T7_SIZES = (2, 4, 8, 12, 16, 20, 24)
T7_SEED = 0
FLOAT_TOLERANCE = 1e-6


def float_construction_errors(d: int, seed: int = T7_SEED, points: int = 64) -> dict[str, Any]:
    """Theorem 1 for one d×d identity layer, in float64 and exactly, compared.

    The float construction solves the same ``K γ = vec(W)`` with ``numpy.linalg.solve``, takes
    per-neuron shifts ``β₁ = −γ·min(V a)`` over the box in float64 and ``β₂ = b − V_out β₁``.
    Returned: the exact construction's bit sizes and certificate size; for the float one
    ``max |γ_float − γ|`` (absolute, relative to ``max |γ|``), ``max |f_float(x) − g(x)|`` over
    ``points`` random points and ``points`` random corners of the box, the number of first-layer
    neurons whose float pre-activation is negative at one of them (a wrong ReLU pattern: the
    exact construction keeps them all ≥ 0), and cond₂(K).
    """
    from exactnorm.api import certificate_document
    from exactnorm.certificate import certificate_bytes
    from exactnorm.constructions.theorem1 import certify_theorem1, khatri_rao_system
    from exactnorm.model.targets import random_target

    g = random_target((d, d), seed=seed, activations=["identity"])
    tl = g.layers[0]
    lo_q, hi_q = g.interval_boxes()[0]
    c = certify_theorem1(g, seed=seed)
    first, second = c.network.layers[0], c.network.layers[1]

    def ints(M: Any) -> np.ndarray:
        return np.array([[int(x) for x in row] for row in M.tolist()], dtype=float)

    V_in, V_out = ints(first.weight), ints(second.weight)
    K = ints(khatri_rao_system(first.weight, second.weight))
    W = np.array([[float(x) for x in row] for row in tl.weight.tolist()])
    b = np.array([float(x) for x in tl.bias])
    lo, hi = np.array([float(x) for x in lo_q]), np.array([float(x) for x in hi_q])
    gamma_f = np.linalg.solve(K, W.ravel(order="F"))
    gamma_x = np.array([float(x) for x in first.gamma])
    vmin = np.where(V_in > 0, V_in * lo, V_in * hi).sum(axis=1)
    vmax = np.where(V_in > 0, V_in * hi, V_in * lo).sum(axis=1)
    beta1 = -gamma_f * np.where(gamma_f >= 0, vmin, vmax)
    beta2 = b - V_out @ beta1
    rng = np.random.default_rng(seed)
    X = np.vstack([lo + (hi - lo) * rng.random((points, d)),
                   np.where(rng.random((points, d)) < 0.5, lo, hi)])
    pre = (V_in @ X.T) * gamma_f[:, None] + beta1[:, None]
    f = V_out @ np.maximum(pre, 0.0) + beta2[:, None]
    gx = W @ X.T + b[:, None]
    report = c.reports[0]
    return {
        "d": d, "m": d * d, "cond": float(np.linalg.cond(K)),
        "gamma_abs_err": float(np.max(np.abs(gamma_f - gamma_x))),
        "gamma_rel_err": float(np.max(np.abs(gamma_f - gamma_x)) / np.max(np.abs(gamma_x))),
        "f_minus_g": float(np.max(np.abs(f - gx))),
        "wrong_pattern_neurons": int((pre < 0).any(axis=1).sum()),
        "gamma_bits": report.gamma_bits, "beta_bits": report.beta_bits,
        "certificate_bytes": len(certificate_bytes(certificate_document(c))),
        "tuned": c.network.tuned_parameters,
    }


def _magnitude(x: float) -> str:
    """Order of magnitude only: the last bits of a LAPACK solve differ between BLAS builds."""
    if x == 0:
        return "0"
    return f"~1e{math.floor(math.log10(abs(x)))}"


def table_t7() -> ProofTable:
    """T7: exact Theorem 1 sizes next to a float64 construction of the same system."""
    rows = []
    for d in T7_SIZES:
        r = float_construction_errors(d)
        fails = r["f_minus_g"] > FLOAT_TOLERANCE or r["wrong_pattern_neurons"] > 0
        rows.append([d, r["m"], r["tuned"], r["gamma_bits"],
                     r["beta_bits"], r["certificate_bytes"], _magnitude(r["cond"]),
                     _magnitude(r["gamma_rel_err"]), _magnitude(r["f_minus_g"]),
                     r["wrong_pattern_neurons"], "fails" if fails else "ok"])
    return ProofTable(
        key="T7", slug="exact_vs_float",
        title="Theorem 1 sizes, exact bit sizes, and a float64 construction of the same system",
        command="exactnorm tables --only T7",
        columns=["d", "m = d²", "tuned params", "max γ bits", "max β bits", "certificate bytes",
                 "cond₂(K)", "float rel. γ error", "float max |f−g|", "float wrong-pattern neurons",
                 f"float within {FLOAT_TOLERANCE:g}"],
        rows=rows,
        notes=[
            "Targets: random_target((d, d), seed 0, 'rational:4'), identity activation, box "
            "[-1, 1]^d; frozen weights nonzero:8, seed 0 (draw_pair, layer 1, attempt 0).",
            "γ/β bits: largest numerator or denominator bit size; certificate bytes: the "
            "uncompressed deterministic JSON (certificate_bytes).",
            "Float columns: numpy.linalg.solve of the same K γ = vec(W), float64 shifts; errors "
            "over 64 random points and 64 random corners of the box, given as orders of "
            "magnitude because the last bits of a LAPACK solve depend on the BLAS build.",
            "A wrong-pattern neuron has a negative float pre-activation at a sampled point, where "
            "the exact construction keeps every first-layer neuron ≥ 0 on the whole box.",
            "Timings (solve, checker, SymPy, jobs, memory) are in benchmarks/, never here.",
        ],
    )
