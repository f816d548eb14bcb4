"""The lemma properties can fail: a deliberately wrong variant of each is falsified.

Each test runs the property of ``tests/test_lemmas.py`` with one wrong ingredient (swapped vec
convention, a wrong rank formula, Kronecker instead of Khatri–Rao, the inverted Rouché–Capelli
direction, a wrong adjugate sign, Lemma 7 without the cancelling bias, …) and asks Hypothesis
for a counterexample. If Hypothesis found none, ``find`` would raise ``NoSuchExample`` and the
test would fail: a property that cannot tell right from wrong is no test.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st

from exactnorm.exact import linalg
from exactnorm.strategies import khatri_rao_pairs, matrices_of_rank
from tests.test_lemmas import (
    SMALL,
    fact1_holds,
    gram_holds,
    khatri_rao_columns_hold,
    lemma5_holds,
    lemma7_holds,
    lemma8_holds,
    linear_normalized_networks,
    linear_systems,
    nonzero_polynomials,
    one_layer_cases,
    product_pairs,
    proposition1_holds,
    rouche_capelli_holds,
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
