"""T11: the sharp width of one hidden frozen layer, certified on both sides (fixed seeds, no
timings).

For ``c0 = c2 = n`` from 3 to 24 a seeded integer target layer ``n → n`` (identity activation,
every row nonzero, box ``[0, 1]^n``) meets a frozen pair drawn with the exactnorm generator
(seed 0, ``nonzero:8``):

* **one unit below** Burkholz's threshold, ``c1 = n² − n``: the system ``[K | −B_W]`` is square
  (``n² × n²``) and a nonzero determinant modulo a prime proves it has full column rank, so no
  tuning at all reaches the target (Theorem LB): an ``exactnorm.impossibility`` document with a
  ``rank`` witness, checked by the independent checker (python-flint arithmetic);
* **at** the threshold, ``c1 = n² − n + 1``: the ``burkholz`` construction (the output scale
  tuned, one kernel vector of the homogeneous system) writes an ordinary certificate, checked by
  the same checker.

The sizes are exact facts of the seeded draws; the byte counts are those of the canonical JSON
(sorted keys, compact separators). Timings live in ``benchmarks/bench_capacity.py``.
"""

from __future__ import annotations

import random

from flint import fmpq

from exactnorm import checker_flint
from exactnorm.analysis.capacity_witness import (
    impossibility_document,
    local_jacobian,
    preactivations,
    rank_witness,
    with_point,
)
from exactnorm.certificate import certificate_bytes, certificate_document
from exactnorm.constructions.burkholz import burkholz_width, certify_burkholz, free_coordinates
from exactnorm.exact.generator import draw
from exactnorm.exact.modular import witness_prime
from exactnorm.exact.streams import WEIGHT, StreamKey
from exactnorm.model.network import TargetNetwork
from exactnorm.model.operators.dense import dense_frozen, dense_layers
from exactnorm.outputs.tables.proof_table import ProofTable

__all__ = ["table_t11", "t11_target", "T11_SIZES", "below_threshold_document"]

T11_SIZES = tuple(range(3, 25))
T11_DISTRIBUTION = "nonzero:8"


def t11_target(n: int) -> TargetNetwork:
    """The seeded ``n → n`` target of T11: integer weights in ``[−100, 100] \\ {0}``, biases in
    ``[−100, 100]``, identity activation, box ``[0, 1]^n``."""
    rng = random.Random(1100 + n)
    W = [[rng.choice([-1, 1]) * rng.randint(1, 100) for _ in range(n)] for _ in range(n)]
    b = [rng.randint(-100, 100) for _ in range(n)]
    return TargetNetwork.from_lists([W], [b], ["identity"], lower=[0] * n, upper=[1] * n)


def below_threshold_document(g: TargetNetwork, c1: int, seed: int = 0) -> dict | None:
    """The impossibility document of a frozen pair of width ``c1`` drawn like the ``burkholz``
    construction's (streams ``(1, 1, 0, 0)`` and ``(1, 2, 0, 0)``, the keys of their
    positions), or ``None`` when ``[K | −B]`` is not of full column rank for this draw."""
    first = dense_layers(g.layers, "T11")[0]
    n_out, n_in = first.weight.nrows(), first.weight.ncols()
    stream = StreamKey(1, 1, WEIGHT, 0)
    V1, rec1 = draw(seed, stream.key, c1, n_in, T11_DISTRIBUTION)
    V2, rec2 = draw(seed, stream.next_layer().key, n_out, c1, T11_DISTRIBUTION)
    x0 = [(lo + hi) / 2 for lo, hi in zip(g.lower, g.upper)]
    values = preactivations(g, x0)
    J, outputs = local_jacobian(g, values, "identity")
    free = free_coordinates(g.lower, g.upper)
    p = witness_prime(fmpq(x).denom() for x in first.weight.entries())
    w, _ = rank_witness(V1, V2, J, outputs, free, p)
    if w is None:
        return None
    return impossibility_document(g, [(V1, "relu", rec1), (V2, "identity", rec2)],
                                  with_point(w, x0, values),
                                  {"construction": f"T11: rank witness at width {c1}",
                                   "seed": seed})


def _bits(values: list) -> int:
    return max(max(int(fmpq(x).numer()).bit_length(), int(fmpq(x).denom()).bit_length())
               for x in values)


def table_t11() -> ProofTable:
    """T11: one unit below the threshold impossible, at the threshold reachable, c0 = c2 = n."""
    rows = []
    for n in T11_SIZES:
        g = t11_target(n)
        threshold = burkholz_width(n, n)
        impossible = below_threshold_document(g, threshold - 1)
        if impossible is None:
            below, below_bytes = "not of full rank (no witness)", "–"
        else:
            v = checker_flint.check_certificate(impossible)
            below = "UNREACHABLE VALID" if v.ok and v.facts and v.facts.get("claim") \
                == "UNREACHABLE" else f"FAILED ({v.rule})"
            below_bytes = str(len(certificate_bytes(impossible)))
        c = certify_burkholz(g, seed=0, retry=0)
        doc = certificate_document(c)
        at = "REACHABLE VALID" if checker_flint.check_certificate(doc).ok else "FAILED"
        layers = dense_frozen(c.network.layers, "T11")
        rows.append([n, threshold, threshold - 1, f"{n * n} × {n * n}", below, below_bytes,
                     f"{n * n} × {n * n + 1}", _bits(list(layers[0].gamma)),
                     _bits(list(layers[1].gamma)), _bits(list(layers[0].beta) +
                                                         list(layers[1].beta)),
                     len(certificate_bytes(doc)), at])
    return ProofTable(
        key="T11", slug="burkholz_sharp_width",
        title="One hidden frozen layer: the sharp width c2·c0 − c2 + 1, certified on both sides",
        command="exactnorm tables --only T11",
        columns=["c0 = c2", "threshold c1*", "below: c1", "below: [K | −B]", "below: verdict",
                 "below: bytes", "at: [K | −B]", "at: γ_in bits", "at: γ_out bits",
                 "at: β bits", "at: bytes", "at: verdict"],
        rows=rows,
        notes=[
            "Targets: t11_target(n) (exactnorm.outputs.tables.capacity), one identity layer "
            "n → n with integer weights in [−100, 100] \\ {0} and biases in [−100, 100] from "
            "random.Random(1100 + n), box [0, 1]^n.",
            "Frozen pairs: seed 0, nonzero:8, stream keys (1, 1, 0, 0) and (1, 2, 0, 0), the "
            "burkholz construction's; below the threshold the same keys are drawn at width "
            "c1* − 1 (by reference in the document, regenerated by the checker).",
            "below: c1 = c2·c0 − c2 = n² − n; [K | −B] (rows (i, j), columns γ_in then 1/γ_out) "
            "is square; its determinant modulo the prime 2^61 − 1 is nonzero, so it has full "
            "column rank and no γ, β at all make the pair equal the target (Theorem LB; witness "
            "rank, docs/certificate-format.md §9), checked by exactnorm's checker.",
            "at: c1 = c2·c0 − c2 + 1; the burkholz construction takes the one-dimensional kernel "
            "of [K | −B] (γ_out = 1/λ, checked nonzero) and writes an ordinary certificate, "
            "checked by the same checker; bits: largest numerator or denominator.",
            "bytes: canonical JSON (sorted keys, compact separators) of the impossibility "
            "document and of the certificate.",
        ],
    )
