"""Seeded random targets shared by the round-trip and mutation suites."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from flint import fmpq

from exactnorm.exact.linalg import to_fractions
from exactnorm.model.network import TargetNetwork
from exactnorm.model.targets import random_target


def case_target(i: int) -> TargetNetwork:
    """Target number ``i``: widths 1–6, depth 1–4, mixed activations and awkward features.

    Every fifth case has a zero row, every fourth a rank-one (rank-deficient) first layer, every
    third a degenerate box coordinate (lo = hi); the final activation alternates.
    """
    rng = np.random.default_rng(10_000 + i)
    depth = int(rng.integers(1, 5))
    widths = [int(w) for w in rng.integers(1, 7, size=depth + 1)]
    acts = [str(a) for a in rng.choice(["relu", "identity"], size=depth)]
    acts[-1] = "relu" if i % 2 else "identity"
    g = random_target(widths, seed=i, activations=acts, box=(Fraction(-1), Fraction(3, 2)))
    weights = [to_fractions(layer.weight) for layer in g.layers]
    if i % 5 == 0:
        weights[0][0] = [Fraction(0)] * widths[0]
    if i % 4 == 0 and min(widths[0], widths[1]) >= 2:
        u = [Fraction(int(x), 3) for x in rng.integers(-3, 4, size=widths[1])]
        v = [Fraction(int(x)) for x in rng.integers(-3, 4, size=widths[0])]
        weights[0] = [[a * b for b in v] for a in u]
    lower = [Fraction(int(x.numer()), int(x.denom())) for x in g.lower]
    upper = [Fraction(int(x.numer()), int(x.denom())) for x in g.upper]
    if i % 3 == 0:
        k = int(rng.integers(0, widths[0]))
        lower[k] = upper[k] = Fraction(int(rng.integers(-2, 3)), 2)
    biases = [[fmpq_to_fraction(x) for x in layer.bias] for layer in g.layers]
    return TargetNetwork.from_lists(weights, biases, acts, lower=lower, upper=upper)


def fmpq_to_fraction(x: fmpq) -> Fraction:
    return Fraction(int(x.numer()), int(x.denom()))


def sample_points(g: TargetNetwork, n: int, seed: int) -> list[tuple[Fraction, ...]]:
    """Box corners (up to 16) and ``n`` random rational points of the box."""
    rng = np.random.default_rng(seed)
    pts = [tuple(fmpq_to_fraction(c) for c in corner) for corner in g.corners(16)]
    for _ in range(n):
        pt = []
        for lo, hi in zip(g.lower, g.upper):
            t = Fraction(int(rng.integers(0, 1001)), 1000)
            pt.append(fmpq_to_fraction(lo) + t * (fmpq_to_fraction(hi) - fmpq_to_fraction(lo)))
        pts.append(tuple(pt))
    return pts
