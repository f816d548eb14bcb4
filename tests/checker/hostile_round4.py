"""The amplification documents of issue 38, rebuilt from their descriptions (standard library
only: the same builders serve the regression tests and ``benchmarks/bench_hostile.py``).

* :func:`rank_minor` — an impossibility document whose rank witness names an ``n × n`` minor
  of ``[K | −B]`` (one output, ``c0 = n`` inputs, a hidden layer of ``n − 1`` drawn by
  reference): a few KB that ask for ``n³`` modular operations (``n = 601``: 7.7 KB);
* :func:`explicit_map` — a certificate whose frozen layer is an explicit ``n × n`` zero matrix
  (``n = 8193``: 134 MB of JSON, 152 KB gzipped), and :func:`explicit_given` the same matrix as
  the given frozen layer of an impossibility document;
* :func:`wide_seeded_domain` — the round-2 compact denominator over a ``10⁶``-wide domain in
  version 3 with ``"seed_rule": "target.v2"`` (the seed's hashing reads every coordinate first).

The 40-layer pooling chain and the original round-2 document are
:func:`hostile_round3.pooling_segments` and :func:`hostile_round3.compact_denominator_domain`.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from tests.checker.hostile_round3 import GENERATOR, compact_denominator_domain, nonzero_draw

#: a prime below 2^62 (the modulus of the rank witnesses)
PRIME = 2**61 - 1


def _det_mod(rows: list[list[int]], p: int) -> int:
    """The determinant modulo ``p`` by plain elimination (small ``n`` only)."""
    m = [list(r) for r in rows]
    n, det = len(m), 1
    for c in range(n):
        k = next((r for r in range(c, n) if m[r][c] % p), None)
        if k is None:
            return 0
        if k != c:
            m[c], m[k] = m[k], m[c]
            det = -det
        det = det * m[c][c] % p
        inv = pow(m[c][c], p - 2, p)
        for r in range(c + 1, n):
            f = m[r][c] * inv % p
            m[r] = [(x - f * y) % p for x, y in zip(m[r], m[c])]
    return det % p


def _record(key: list[int], shape: list[int]) -> dict[str, Any]:
    return {"generator": GENERATOR, "seed": 0, "key": key, "distribution": "nonzero:8",
            "shape": shape}


def rank_minor(n: int = 601, determinant: int | None = None) -> dict[str, Any]:
    """A rank witness with an ``n × n`` minor: target ``g(x) = w·x`` on ``[0, 1]^n`` (``w`` a
    ``nonzero:8`` draw), frozen ``V_1`` (``(n−1) × n``) and ``V_2`` (``1 × (n−1)``) by
    reference, every row of ``[K | −B]`` listed. ``determinant``: the residue to state
    (``None``: computed here when ``n ≤ 64``, else 1, which the checker refuses only after the
    whole minor)."""
    c1 = n - 1
    w = nonzero_draw(0, [9, 9, 9, 9], 1, n)[0]
    if determinant is None:
        if n <= 64:
            V1 = nonzero_draw(0, [1, 1, 0, 0], c1, n)
            V2 = nonzero_draw(0, [1, 2, 0, 0], 1, c1)[0]
            minor = [[V2[k] * V1[k][j] % PRIME for k in range(c1)] + [-w[j] % PRIME]
                     for j in range(n)]
            determinant = _det_mod(minor, PRIME)
        else:
            determinant = 1
    value = Fraction(sum(w), 2)
    return {"format": "exactnorm.impossibility", "version": 1,
            "domain": {"lower": {"den": 1, "num": [0] * n}, "upper": {"den": 1, "num": [1] * n}},
            "target": {"layers": [{"weight": {"den": 1, "num": [w]}, "bias": [0],
                                   "activation": "identity"}]},
            "network": {"layers": [
                {"weight": {"random": _record([1, 1, 0, 0], [c1, n])}, "activation": "relu"},
                {"weight": {"random": _record([1, 2, 0, 0], [1, c1])},
                 "activation": "identity"}]},
            "witness": {"kind": "rank", "point": {"den": 2, "num": [1] * n},
                        "values": [[str(value)]], "outputs": [0], "prime": PRIME,
                        "rows": list(range(n)), "determinant": determinant}}


def explicit_map(n: int = 8193) -> dict[str, Any]:
    """A version-1 certificate on ``[0, 1]^n`` whose first frozen layer is the explicit
    ``n × n`` zero matrix (no draw record needed in version 1)."""
    zeros = [[0] * n for _ in range(n)]
    return {"format": "exactnorm.certificate", "version": 1,
            "domain": {"lower": {"den": 1, "num": [0] * n}, "upper": {"den": 1, "num": [1] * n}},
            "target": {"layers": [{"weight": {"den": 1, "num": [[0] * n]}, "bias": [0],
                                   "activation": "identity"}]},
            "network": {"layers": [
                {"input": 0, "weight": zeros, "gamma": {"den": 1, "num": [1] * n},
                 "beta": {"den": 1, "num": [0] * n}, "activation": "relu"},
                {"input": 1, "weight": {"den": 1, "num": [[0] * n]}, "gamma": [1], "beta": [0],
                 "activation": "identity"}], "checkpoints": [2]}}


def explicit_given(n: int = 8193) -> dict[str, Any]:
    """An impossibility document whose given frozen layer 1 is the explicit ``n × n`` zero
    matrix, declared fixed, with a rank witness (refused, whatever it says, by a limit)."""
    doc = rank_minor(2)
    fixed = {"kind": "fixed", "why": "a given network"}
    doc["domain"] = {"lower": {"den": 1, "num": [0] * n}, "upper": {"den": 1, "num": [1] * n}}
    doc["target"]["layers"][0]["weight"] = {"den": 1, "num": [[0] * n]}
    doc["network"]["layers"] = [
        {"weight": [[0] * n for _ in range(n)], "source": fixed, "activation": "relu"},
        {"weight": {"den": 1, "num": [[0] * n]}, "source": fixed, "activation": "identity"}]
    doc["witness"]["point"] = {"den": 2, "num": [1] * n}
    doc["witness"]["values"] = [["0"]]
    return doc


def wide_seeded_domain(width: int = 10**6, digits: int = 9000) -> dict[str, Any]:
    """The round-2 document in version 3, its seed derived from the target (the seed rule's
    hashing reads every coordinate of the box and of the target)."""
    doc = compact_denominator_domain(width, digits)
    doc["version"] = 3
    doc["seed_rule"] = "target.v2"
    doc["network"]["layers"][0]["weight"]["random"]["key"] = [1, 1, 0, 0]
    return doc
