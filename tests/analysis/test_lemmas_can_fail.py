"""The lemma properties can fail: a deliberately wrong variant of each is falsified.

Each test runs the property of ``tests/analysis/test_lemmas.py`` with one wrong ingredient
(swapped vec
convention, a wrong rank formula, Kronecker instead of Khatri–Rao, the inverted Rouché–Capelli
direction, a wrong adjugate sign, Lemma 7 without the cancelling bias, …) and asks Hypothesis
for a counterexample. If Hypothesis found none, ``find`` would raise ``NoSuchExample`` and the
test would fail: a property that cannot tell right from wrong is no test.
"""

from __future__ import annotations

import pytest
from flint import fmpq
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st

from exactnorm.exact import linalg
from exactnorm.strategies import khatri_rao_pairs, matrices_of_rank
from tests.analysis.test_lemmas import (
    SEEDS,
    SMALL,
    fact1_holds,
    gram_holds,
    khatri_rao_columns_hold,
    lemma5_holds,
    lemma6_full_rank_holds,
    lemma6_int8_holds,
    lemma6_singular_rate_holds,
    lemma7_holds,
    lemma8_holds,
    linear_normalized_networks,
    linear_systems,
    nonzero_polynomials,
    one_layer_cases,
    product_pairs,
    proposition1_holds,
    rouche_capelli_holds,
    schwartz_zippel_holds,
    theorem5_holds,
    vec_cases,
    vec_identity_holds,
)

# the search must succeed the same way on every run: derandomized, no example database; the
# shrink phase is skipped to stay fast (the assertions below hold for any counterexample)
SEARCH = settings(max_examples=300, derandomize=True, database=None, deadline=None,
                  phases=[Phase.explicit, Phase.generate],
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def falsify(strategy, holds):
    """A shrunk counterexample to ``holds`` (raises ``NoSuchExample`` if there is none)."""
    return find(strategy, lambda case: not holds(case), settings=SEARCH)


def test_fact1_ignoring_the_intersection_fails():
    # wrong: rank(AB) = rank B − nullity(A) (forgets that only null A ∩ col B is lost)
    def wrong(A, B):
        return linalg.exact_rank(B) - (A.ncols() - linalg.exact_rank(A))

    A, B = falsify(product_pairs(), lambda p: fact1_holds(*p, rank_formula=wrong))
    assert linalg.exact_rank(A * B) != wrong(A, B)


def test_fact1_off_by_one_fails():
    def wrong(A, B):
        return linalg.exact_rank(B) - 1

    falsify(product_pairs(), lambda p: fact1_holds(*p, rank_formula=wrong))


def test_theorem5_additive_rank_fails():
    # wrong: rank(A ⊗ B) = rank A + rank B − 1 (true whenever one rank is 1)
    A, B = falsify(st.tuples(matrices_of_rank(SMALL, SMALL), matrices_of_rank(SMALL, SMALL)),
                   lambda p: theorem5_holds(*p, predicted=lambda a, b: a + b - 1))
    assert linalg.exact_rank(A) != 1 and linalg.exact_rank(B) != 1


def test_theorem6_kronecker_instead_of_khatri_rao_fails():
    X, Y = falsify(khatri_rao_pairs(), lambda p: gram_holds(*p, product=linalg.kronecker))
    assert X.ncols() >= 2  # with one column the two products coincide
    falsify(khatri_rao_pairs(), lambda p: khatri_rao_columns_hold(*p, product=linalg.kronecker))


def test_theorem6_swapped_vec_convention_fails():
    A, B, _ = falsify(vec_cases(), lambda c: vec_identity_holds(*c, order_f="C", order_c="F"))
    assert A.nrows() > 1 or B.ncols() > 1  # a row or column result has one vec only


def test_theorem7_inverted_direction_fails():
    # the summary's wording: "solvable iff the ranks differ"
    falsify(linear_systems(), lambda s: rouche_capelli_holds(*s, criterion=lambda a, ab: a != ab))
    # a one-sided reading: "always solvable, since rank A ≤ rank [A | b]"
    falsify(linear_systems(), lambda s: rouche_capelli_holds(*s, criterion=lambda a, ab: a <= ab))


def test_lemma5_grid_one_too_small_fails():
    # a grid of size deg per variable is not enough: x0 vanishes on {0}^n
    P = falsify(nonzero_polynomials().filter(lambda P: not P.is_zero),
                lambda P: lemma5_holds(P, grid_size=lambda d: d))
    assert not P.is_zero


def _sz_cases():
    return st.tuples(nonzero_polynomials().filter(lambda P: not P.is_zero), st.integers(2, 7))


def _sz_grid(size: int) -> list[int]:
    return list(range(-(size // 2), size - size // 2))


def test_schwartz_zippel_rate_shrinking_with_the_variables_fails():
    # wrong: zeros are a deg/|S|^n fraction (as if every variable had to hit a root)
    P, size = falsify(_sz_cases(), lambda c: schwartz_zippel_holds(
        c[0], _sz_grid(c[1]), bound=lambda deg, s, n: fmpq(deg, s**n)))
    assert not schwartz_zippel_holds(P, _sz_grid(size), bound=lambda deg, s, n: fmpq(deg, s**n))


def test_schwartz_zippel_rate_without_the_degree_fails():
    # wrong: at most a 1/|S| fraction of zeros whatever the degree (x0·x1 vanishes on 2|S| − 1)
    falsify(_sz_cases(), lambda c: schwartz_zippel_holds(
        c[0], _sz_grid(c[1]), bound=lambda deg, s, n: fmpq(1, s)))


def test_lemma6_below_width_d_in_d_out_fails():
    # wrong: one hidden neuron fewer than d_in·d_out still gives full rank d_in·d_out
    seed, d_in, d_out = falsify(st.tuples(SEEDS, st.integers(1, 4), st.integers(1, 4)),
                                lambda c: lemma6_full_rank_holds(*c, width=c[1] * c[2] - 1))
    assert d_in * d_out >= 1


def test_lemma6_with_a_tiny_support_fails():
    # wrong: Lemma 6 for entries in {−1, 0, 1} (the probability argument needs a large set)
    falsify(st.tuples(SEEDS, st.integers(1, 3), st.integers(1, 3)),
            lambda c: lemma6_full_rank_holds(*c, dist="int:1"))


def test_lemma6_int8_never_singular_fails():
    # wrong: "int:8 draws are always invertible"; the property's witness check must see it
    seed, d_in, d_out = falsify(st.tuples(SEEDS, st.integers(1, 4), st.integers(1, 4)),
                                lambda c: lemma6_int8_holds(*c, never_singular=True))
    assert lemma6_int8_holds(seed, d_in, d_out)  # the true property holds on the same draw


def test_lemma6_singular_rate_with_degree_m_fails():
    # wrong degree: det K has degree 2m, not m; at m = 1 the int:8 rate 1 − (16/17)² ≈ 0.114
    # exceeds 1/17 ≈ 0.059 (while staying below the true bound 2/17 ≈ 0.118)
    assert lemma6_singular_rate_holds(1, 1)
    assert not lemma6_singular_rate_holds(1, 1, degree=lambda m: m)


def test_lemma8_wrong_adjugate_sign_fails():
    cases = st.integers(1, 4).flatmap(lambda n: matrices_of_rank(n, n, n))
    B = falsify(cases, lambda B: lemma8_holds(B, sign=lambda i, j: (-1) ** i))
    assert B.nrows() >= 2


def test_lemma7_without_cancelling_bias_fails():
    falsify(one_layer_cases(), lambda c: lemma7_holds(*c, drop_cancelling_bias=True))


def test_proposition1_without_shift_fails():
    falsify(linear_normalized_networks(), lambda c: proposition1_holds(*c, use_shift=False))


def test_wrong_vec_convention_as_given_test_raises():
    """The other way to show it: the @given-wrapped wrong property raises the falsifying
    example's AssertionError."""

    @SEARCH
    @given(vec_cases())
    def wrong_property(case):
        assert vec_identity_holds(*case, order_f="C", order_c="F")

    with pytest.raises(AssertionError):
        wrong_property()


#: every property of tests/analysis/test_lemmas.py → the tests here that falsify a wrong variant
#: of it
WRONG_VARIANTS = {
    "test_fact1_rank_of_product": ["test_fact1_ignoring_the_intersection_fails",
                                   "test_fact1_off_by_one_fails"],
    "test_theorem5_rank_of_kronecker": ["test_theorem5_additive_rank_fails"],
    "test_theorem6_khatri_rao_selects_kronecker_columns": [
        "test_theorem6_kronecker_instead_of_khatri_rao_fails"],
    "test_theorem6_gram_is_hadamard": ["test_theorem6_kronecker_instead_of_khatri_rao_fails"],
    "test_theorem6_vec_identities_both_orders": ["test_theorem6_swapped_vec_convention_fails",
                                                 "test_wrong_vec_convention_as_given_test_raises"],
    "test_theorem7_rouche_capelli": ["test_theorem7_inverted_direction_fails"],
    "test_lemma5_nonzero_point_in_grid": ["test_lemma5_grid_one_too_small_fails"],
    "test_lemma5_schwartz_zippel_rate": [
        "test_schwartz_zippel_rate_shrinking_with_the_variables_fails",
        "test_schwartz_zippel_rate_without_the_degree_fails"],
    "test_lemma6_khatri_rao_full_rank": ["test_lemma6_below_width_d_in_d_out_fails",
                                         "test_lemma6_with_a_tiny_support_fails"],
    "test_lemma6_int8_ranks_agree_and_singular_draws_are_witnessed": [
        "test_lemma6_int8_never_singular_fails"],
    "test_lemma6_int8_singular_rate_below_schwartz_zippel": [
        "test_lemma6_singular_rate_with_degree_m_fails"],
    "test_lemma7_two_frozen_layers_reproduce_one_layer": [
        "test_lemma7_without_cancelling_bias_fails"],
    "test_proposition1_linear_network_as_one_relu_layer": [
        "test_proposition1_without_shift_fails"],
    "test_lemma8_inverse_by_determinants": ["test_lemma8_wrong_adjugate_sign_fails"],
}


def test_every_lemma_property_has_a_wrong_variant():
    """README promises a falsified wrong variant for every property; a new property in
    tests/analysis/test_lemmas.py without an entry above fails here."""
    import tests.analysis.test_lemmas as lemmas

    properties = {name for name in dir(lemmas) if name.startswith("test_")}
    assert properties == set(WRONG_VARIANTS)
    here = globals()
    for prop, variants in WRONG_VARIANTS.items():
        assert variants and all(callable(here.get(v)) for v in variants), prop
