"""The exact target on a batch by residues (:mod:`exactnorm.model.residues`) against the
integer product of :meth:`TargetNetwork.evaluate_columns`, on every layer kind and wiring, on
samples the box does not hold, on values at and near zero, and on each of its paths (the float
window sums and the exact ones of a fixed map, the CRT rebuild of small values)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import sympy
from flint import fmpq, fmpq_mat

from exactnorm.exact.linalg import from_numpy_exact
from exactnorm.model import residues
from exactnorm.model.layers import TargetLayer
from exactnorm.model.network import TargetNetwork, Wiring
from exactnorm.model.operators import Conv, ConvGeometry, GlobalAvgPool
from exactnorm.model.residues import ResiduePlan, exact_batch, prime_bits, primes_below
from exactnorm.model.routes import Route, Skip
from exactnorm.outputs.data_eval import exact_outputs
from exactnorm.outputs.tables.resnet import resnet8
from tests.helpers import case_target
from tests.model.test_conv import lenet_like
from tests.model.test_residual_model import small_resnet


def reference(g: TargetNetwork, X: np.ndarray) -> list[list[fmpq]]:
    """The exact outputs by the integer product of ``evaluate_columns``, one row per sample."""
    return g.evaluate_columns(from_numpy_exact(X).transpose()).transpose().tolist()


def assert_equal(g: TargetNetwork, X: np.ndarray) -> None:
    N, D = exact_batch(g, X)
    assert D > 0 and len(N) == len(X)
    assert [[fmpq(v, D) for v in row] for row in N] == reference(g, X)


def samples(d: int, n: int, seed: int, scale: float = 2.0) -> np.ndarray:
    """Float samples inside and outside a box, zeros, tiny, subnormal and large entries."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-scale, scale, size=(n, d))
    X[rng.random((n, d)) < 0.2] = 0.0
    specials = [5e-324, -2.5e-310, 1e-300, 3.0e-8, 1e30, -7.5]
    for s in range(n):
        X[s, rng.integers(d)] = specials[s % len(specials)]
    return X.astype(np.float32).astype(np.float64) if seed % 2 else X


@pytest.mark.parametrize("i", range(24))
def test_dense_targets_of_every_shape(i):
    g = case_target(i)
    assert_equal(g, samples(g.widths[0], 9, seed=i))


@pytest.mark.parametrize("build", [lenet_like, small_resnet], ids=["lenet", "resnet"])
def test_convolutions_poolings_and_routes(build):
    g = build()
    assert_equal(g, samples(g.widths[0], 6, seed=3, scale=1.5))


def test_resnet8_with_projections_and_a_global_pooling():
    g = resnet8(8, (2, 4, 4), classes=3, seed=1)
    assert_equal(g, samples(g.widths[0], 5, seed=5, scale=1.0))


def test_grouped_convolution_a_global_pooling_and_a_skip():
    rng = np.random.default_rng(7)

    def mat(r, c):
        return fmpq_mat(r, c, [fmpq(int(v), 16) for v in rng.integers(-16, 17, r * c)])

    geo = ConvGeometry((4, 3, 3), (3, 3), padding=(1, 1))
    g = TargetNetwork(
        (TargetLayer(mat(36, 5), tuple(fmpq(int(v), 3) for v in rng.integers(-3, 4, 36)),
                     "relu"),
         TargetLayer(Conv(geo, mat(4, 18), groups=2), tuple(fmpq(1, 7) for _ in range(4)),
                     "relu"),
         TargetLayer(GlobalAvgPool((4, 3, 3))),
         TargetLayer(mat(36, 4), tuple(fmpq(0) for _ in range(36)), "identity")),
        (fmpq(-1),) * 5, (fmpq(1),) * 5,
        wiring=(Wiring(0), Wiring(1), Wiring(2), Wiring(3, Skip(1, Route.identity(36),
                                                                  "identity"))))
    assert_equal(g, samples(5, 7, seed=8))


def test_a_fixed_map_by_its_exact_window_sums(monkeypatch):
    """Windows too large for the float path (item 4) take the operator's exact batch map."""
    g = lenet_like()
    X = samples(g.widths[0], 4, seed=11, scale=1.0)
    monkeypatch.setattr(residues, "FLOAT_WINDOW_LIMIT", 0)
    assert_equal(g, X)


def test_values_at_and_near_zero_are_signed_exactly():
    """``x1 − x2`` is 0, ±2^-60 or ±2^-1074 relative to inputs near 1: the fixed-point sign
    test cannot see such values against the product of the primes; the CRT decides them."""
    W = fmpq_mat([[1, -1], [-1, 1], [1, 1]])
    g = TargetNetwork.from_lists([[[1, -1], [-1, 1], [1, 1]], [[1, 1, 1]]], [[0, 0, 0], [0]],
                                 ["relu", "identity"], lower=[0, 0], upper=[1, 1])
    assert g.layers[0].operator.weight == W
    a = 0.75
    X = np.array([[a, a], [a, np.nextafter(a, 1)], [np.nextafter(a, 0), a],
                  [5e-324, 0.0], [0.0, 5e-324], [2.0**-60, 0.0]])
    assert_equal(g, X)


def test_outputs_and_exact_argmax_of_a_batch():
    g = small_resnet(2)
    X = samples(g.widths[0], 12, seed=13, scale=1.0)
    values, best = exact_outputs(g, X)
    exact = reference(g, X)
    for s, row in enumerate(exact):
        assert values[s].tolist() == [int(v.p) / int(v.q) for v in row]
        assert best[s] == max(range(len(row)), key=lambda k: (row[k], -k))


def test_the_primes_keep_every_float_product_exact():
    for fan_in in (1, 9, 288, 784, 4096, 10**6):
        b = prime_bits(fan_in)
        primes = primes_below(b, 8)
        assert all(sympy.isprime(p) and p < 2**b for p in primes)
        assert primes == sorted(primes, reverse=True) and len(set(primes)) == 8
        assert fan_in * max(primes) ** 2 <= 2**53
        assert sympy.prevprime(2**b) == primes[0]


def test_one_plan_serves_every_batch():
    g = lenet_like(3)
    plan = ResiduePlan(g)
    for seed in (1, 2):
        X = samples(g.widths[0], 3, seed=seed, scale=1.0)
        N, D = exact_batch(g, X, plan)
        assert [[fmpq(v, D) for v in row] for row in N] == reference(g, X)
    assert math.gcd(D, 2) in (1, 2) and Fraction(D).denominator == 1


def _residues_of(values: list[int], primes: list[int]) -> np.ndarray:
    """Symmetric residues ``(K, 1, m)`` of Python integers, as the batch holds them."""
    return np.array([[[v % p - (p if 2 * (v % p) > p else 0) for v in values]]
                     for p in primes], dtype=np.float64)


@pytest.mark.parametrize("K", [1, 3, 9, 17])
def test_signs_and_base_extension_against_python_integers(K):
    """Item 3's fixed-point sign and item 5's base extension on integers ``|N| ≤ 2^-9·M``:
    the largest allowed, ±1, 0, values just around ``±2^-65·M`` (the exact rebuild's edge) and
    random ones, against Python's own arithmetic."""
    pool = primes_below(22, 40)
    basis = residues._Basis(pool[:K])
    M = basis.M
    edge = M >> 65
    rng = np.random.default_rng(K)
    values = [0, 1, -1, M >> 9, -(M >> 9), edge, -edge, edge + 1, -(edge + 1), 2 * edge + 3,
              *(int(v) for v in rng.integers(-2**40, 2**40, 20)),
              *(int.from_bytes(rng.bytes(40), "big") % (M >> 9) * s for s in (1, -1)
                for _ in range(20))]
    values = [v for v in values if abs(v) <= M >> 9]  # item 2's bound
    res = _residues_of(values, pool[:K])
    pos, t = basis.positive(res)
    assert pos[0].tolist() == [v > 0 for v in values]
    assert basis.integers(t.reshape(K, -1)) == values
    more = pool[K:K + 6]
    extended = basis.extend(t, more)
    assert np.array_equal(np.mod(extended, np.array(more, dtype=float).reshape(-1, 1, 1)),
                          np.array([[[v % q for v in values]] for q in more], dtype=float))


def test_batches_on_threads_and_chunks_give_the_same_outputs(monkeypatch):
    """The batches run side by side (:func:`exact_outputs`): one thread or two, batches of 1
    sample or 5, the outputs and the exact argmax are the same."""
    from exactnorm.outputs import data_eval

    g = small_resnet(2)
    X = samples(g.widths[0], 11, seed=17, scale=1.0)
    runs = []
    for threads, chunk in ((1, 64), (2, 1), (2, 5)):
        monkeypatch.setattr(data_eval, "EXACT_THREADS", threads)
        monkeypatch.setattr(data_eval, "EXACT_CHUNK", chunk)
        runs.append(exact_outputs(g, X))
    for values, best in runs[1:]:
        assert np.array_equal(values, runs[0][0]) and np.array_equal(best, runs[0][1])
    exact = reference(g, X)
    assert runs[0][0].tolist() == [[int(v.p) / int(v.q) for v in row] for row in exact]
