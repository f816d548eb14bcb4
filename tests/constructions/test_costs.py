"""The cost model predicts, before any work, what the checker will say and how large Γ gets.

Cross-checks against independent paths: the predicted bit sizes against the Γ a construction
actually solves, the checker forecast against the checker itself (run with its limit on bits
lowered, so that small certificates cross it), and the plan against the constructions it would
otherwise build (an explicit choice the checker would refuse is refused before anything is
drawn).
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from flint import fmpq, fmpq_mat

from exactnorm import api, checker, checker_flint
from exactnorm.certificate import certificate_document
from exactnorm.constructions import choice, costs
from exactnorm.constructions.choice import (
    choose_construction,
    estimate_theorem1,
    estimate_tradeoff,
    layer_bits,
)
from exactnorm.constructions.costs import LayerBits, entry_law, gamma_bits
from exactnorm.constructions.plan import plan_certify
from exactnorm.constructions.theorem1 import certify_theorem1, solve_pair
from exactnorm.errors import LimitExceededError
from exactnorm.exact.linalg import clear_denominators
from exactnorm.model.network import TargetLayer, TargetNetwork
from exactnorm.model.targets import demo_target, random_target

LAW = entry_law("nonzero:8")


def _float32_matrix(rows: int, cols: int, seed: int, scale: float = 1.0) -> fmpq_mat:
    rng = np.random.default_rng(seed)
    values = (rng.standard_normal((rows, cols)) * scale / math.sqrt(cols)).astype(np.float32)
    return fmpq_mat(rows, cols, [fmpq(*float(x).as_integer_ratio()) for x in values.ravel()])


def _divided_by_float32_deviations(W: fmpq_mat, seed: int) -> fmpq_mat:
    """``W·diag(1/σ)`` with float32 σ: each column gets its own odd denominator (a scaler that
    divides, as ``(x − μ)/σ`` folded into the next layer)."""
    rng = np.random.default_rng(seed)
    sigma = (rng.uniform(0.5, 3.0, W.ncols())).astype(np.float32)
    inv = [1 / fmpq(*float(s).as_integer_ratio()) for s in sigma]
    return fmpq_mat(W.nrows(), W.ncols(),
                    [W[r, c] * inv[c] for r in range(W.nrows()) for c in range(W.ncols())])


def _bits(col: fmpq_mat) -> int:
    N, D = clear_denominators(col)
    return max(max(abs(int(x)) for x in N.entries()).bit_length(), int(D).bit_length())


# ------------------------------------------------------------------ bit sizes of Γ

@pytest.mark.parametrize("k, d_out, kind", [
    (8, 8, "float32"), (16, 16, "float32"), (24, 10, "divided"), (6, 40, "float32"),
    (1, 48, "divided"), (2, 32, "float32"), (20, 20, "divided")])
def test_predicted_gamma_bits_match_the_solved_system(k, d_out, kind):
    """Γ of one Khatri–Rao system against the prediction from shapes and the right-hand side's
    exact bits: within 4 % (and the bound is never below)."""
    W = _float32_matrix(d_out, k, seed=k + d_out)
    if kind == "divided":
        W = _divided_by_float32_deviations(W, seed=k)
    solved = solve_pair(W, seed=3, layer=1, distribution="nonzero:8", witness_prime=False)
    actual = _bits(solved.gamma)
    rhs = LayerBits(W).whole
    assert rhs == _bits(W)
    expected = gamma_bits(k, d_out, rhs, LAW)
    assert abs(expected - actual) <= 0.04 * actual, (expected, actual)
    assert gamma_bits(k, d_out, rhs, LAW, bound=True) >= actual


def test_block_bits_see_only_their_own_columns():
    """A scaler that divides gives the whole matrix a long common denominator; a block of
    columns sees only its own (what makes the trade-off's Γ short)."""
    W = _divided_by_float32_deviations(_float32_matrix(6, 40, seed=1), seed=2)
    bits = LayerBits(W)
    assert bits.whole == _bits(W) > LayerBits.PER_COLUMN_FROM
    for size in (1, 3, 8):
        blocks = bits.blocks(size)
        assert len(blocks) == math.ceil(40 / size)
        for t, b in enumerate(blocks):
            cols = range(t * size, min((t + 1) * size, 40))
            sub = fmpq_mat([[W[r, c] for c in cols] for r in range(6)])
            assert b == _bits(sub)
        assert max(blocks) < bits.whole / 4


def test_the_plan_reads_a_layer_once():
    W = _float32_matrix(4, 4, seed=0)
    assert layer_bits(W) is layer_bits(W)


# ------------------------------------------------------------------ the checker forecast


@pytest.fixture
def small_bit_limit(monkeypatch):
    """The checker's limit on the bits of one structure lowered to 2^21, in the checker and in
    the forecast alike (both read the one constant of ``checker.vocabulary``)."""
    from exactnorm.checker import budget

    limit = 1 << 21
    monkeypatch.setattr(budget, "MAX_MAP_BITS", limit)
    monkeypatch.setattr(costs, "MAX_MAP_BITS", limit)
    return limit


def test_the_forecast_agrees_with_the_checker_across_its_limit(small_bit_limit):
    """Theorem 1 on square layers of growing size, checked by both arithmetics under a lowered
    bit limit: whenever the forecast says the checker accepts, it does; and it refuses only
    near the limit or beyond (the forecast uses an upper bound of Γ)."""
    seen = set()
    for d in (6, 8, 10, 11, 12, 14):
        g = TargetNetwork((TargetLayer(_float32_matrix(d, d, seed=d), (fmpq(0),) * d,
                                       "identity"),), (fmpq(0),) * d, (fmpq(1),) * d)
        forecast = estimate_theorem1(g).checker
        doc = certificate_document(certify_theorem1(g, seed=1))  # not through the plan
        pure, fast = checker.check_certificate(doc), checker_flint.check_certificate(doc)
        assert pure == fast
        seen.add(pure.ok)
        if forecast.fits:
            assert pure.ok, (d, pure.message)
        else:
            assert not pure.ok or forecast.structure_bits < 1.15 * small_bit_limit, d
        if not pure.ok:
            assert pure.rule == "limit" and "bits" in pure.message
            assert not forecast.fits and "γ scaled" in forecast.where
    assert seen == {True, False}  # the sizes cross the limit


def test_an_explicit_choice_the_checker_would_refuse_is_refused_before_any_work(
        small_bit_limit, monkeypatch):
    def no_work(*args, **kwargs):
        raise AssertionError("a system was solved")

    monkeypatch.setattr("exactnorm.constructions.theorem1.solve_pair", no_work)
    g = random_target((16, 16, 4), seed=0)
    with pytest.raises(LimitExceededError, match="checker refuses.*tradeoff") as info:
        plan_certify(g, "theorem1", jobs=1)
    assert "bits" in str(info.value)
    # the automatic choice stays inside: a trade-off whose forecast fits
    plan = plan_certify(g, jobs=1)
    assert plan.construction == "tradeoff" and plan.estimate.checker.fits


def test_when_nothing_fits_the_plan_says_so(monkeypatch):
    monkeypatch.setattr(costs, "MAX_MAP_BITS", 1 << 10)
    with pytest.raises(LimitExceededError, match="no construction of this target stays"):
        plan_certify(random_target((12, 12, 3), seed=0), jobs=1)


def test_theorem1_of_a_64_wide_layer_is_forecast_refused():
    """The issue's case in the forecast: 64 → 64 by Theorem 1 needs 64 × 4096 numbers of about
    41,000 bits, above 2^32 bits, whatever the weights; the checker's message names the same
    structure (rule limit)."""
    g = TargetNetwork((TargetLayer(_float32_matrix(64, 64, seed=0), (fmpq(0),) * 64, "relu"),
                       TargetLayer(_float32_matrix(10, 64, seed=1), (fmpq(0),) * 10,
                                   "identity")), (fmpq(0),) * 64, (fmpq(1),) * 64)
    t = time.process_time()
    t1 = estimate_theorem1(g)
    assert (t1.checker.rows, t1.checker.cols) == (64, 4096)
    assert 39_000 < t1.checker.bits < 46_000 and not t1.checker.fits
    choice_ = choose_construction(g, "nonzero:8")
    assert choice_.name == "tradeoff" and choice_.estimate.checker.fits
    assert "refused by the checker" in choice_.reason
    assert time.process_time() - t < 5  # shapes and bits only: nothing drawn or solved


# ------------------------------------------------------------------ the choice


def test_the_choice_is_the_first_within_the_preference_of_the_fastest():
    """Theorem 1, then block sizes 1, 2, 4, …: the first whose estimate is within
    ``PREFERENCE`` (or ``PREFERENCE_SECONDS``) of the least estimate among those the checker
    accepts."""
    for g in (demo_target(), random_target((256, 10), seed=0), random_target((12, 20, 3), seed=1),
              random_target((80, 64, 2), seed=0)):
        c = choose_construction(g, "nonzero:8")
        accepted = {name: e for name, e in c.alternatives.items() if e.checker.fits
                    and (name != "theorem1" or e.system_size <= choice.THEOREM1_MAX_SYSTEM)}
        best = min(e.seconds for e in accepted.values())
        order = sorted(accepted, key=lambda n: -1 if n == "theorem1" else int(n.split("=")[1]))
        slack = max(choice.PREFERENCE * best, best + choice.PREFERENCE_SECONDS)
        first = next(n for n in order if accepted[n].seconds <= slack)
        assert c.estimate == accepted[first], (c.name, c.block, first)


def test_small_targets_keep_theorem1_and_a_wide_dense_layer_takes_the_tradeoff():
    assert choose_construction(demo_target(), "nonzero:8").name == "theorem1"
    wide = choose_construction(random_target((256, 10), seed=0), "nonzero:8")
    t1 = wide.alternatives["theorem1"]
    assert wide.name == "tradeoff" and t1.system_size == 2560 <= choice.THEOREM1_MAX_SYSTEM
    assert wide.estimate.seconds * 10 < t1.seconds and "estimated at" in wide.reason


def test_max_system_bounds_every_block_system():
    g = random_target((98, 6, 3), seed=7)
    for budget in (12, 30, 100):
        c = choose_construction(g, "nonzero:8", max_system=budget)
        assert c.name == "tradeoff"
        assert c.block == 1 or c.estimate.system_size <= budget


def test_estimates_grow_with_the_block_size_on_a_wide_layer():
    g = random_target((80, 64, 2), seed=0)
    e = [estimate_tradeoff(g, k) for k in (2, 4, 8, 16)]
    assert all(a.seconds < b.seconds and a.certificate_bytes < b.certificate_bytes
               and a.depth > b.depth for a, b in zip(e, e[1:]))


def test_the_estimate_names_its_parts():
    est = estimate_theorem1(random_target((16, 16), seed=0))
    assert est.seconds == pytest.approx(est.build_seconds + est.write_seconds
                                        + est.check_seconds)
    assert est.wall(2) <= est.wall(1) == pytest.approx(est.seconds)
    assert est.json_bytes > est.certificate_bytes > 0 and est.peak_bytes > 2**20
    text = est.describe()
    assert "build" in text and "check" in text and "gz" in text


def test_an_api_plan_carries_its_estimate():
    plan = api.plan_certify(random_target((40, 30, 10), seed=0))
    assert plan.estimate.checker is not None and plan.estimate.checker.fits
    assert plan.estimate.seconds > 0 and plan.estimate.footprint is not None
