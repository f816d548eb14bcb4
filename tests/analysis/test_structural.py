"""Structural rank of sparse Khatri–Rao patterns against exact ranks, brute force and SymPy.

docs/sparse.md: generic invertibility of K = V_inᵀ ⊙ V_out is decided by a perfect matching of its
support, because distinct matchings give distinct monomials. Every claim is checked by an
independent path: SciPy vs NetworkX matchings, brute-force permanents, exact FLINT ranks of random
integer fillings, and SymPy's expanded determinant.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
import sympy
from flint import fmpz_mat

from exactnorm.analysis.structural import (
    boolean_determinant,
    boolean_permanent_bruteforce,
    dead_neurons,
    diagnose_draw,
    diagnose_pattern,
    khatri_rao_pattern,
    maximum_matching_networkx,
    maximum_matching_scipy,
    permutation_from_monomial,
    permutation_monomial,
    schwartz_zippel_bound,
    structural_rank,
    structural_rank_networkx,
    structural_rank_scipy,
    support_masks,
    zero_rows,
)
from exactnorm.errors import ShapeError
from exactnorm.exact.linalg import exact_rank, khatri_rao_system, rank_mod_prime
from exactnorm.exact.sampling import layer_rng

BIG = 2**40


def _random_case(i: int) -> tuple[np.ndarray, np.ndarray, fmpz_mat, fmpz_mat]:
    """A random small pattern and integer values uniform in [-2^40, 2^40] \\ {0} on it."""
    rng = layer_rng(20260, i)
    d_in, d_out = (int(x) for x in rng.integers(1, 5, size=2))
    n = d_in * d_out
    m = int(rng.integers(max(1, n - 2), 2 * n + 3))     # square, narrower and wider systems
    p = float(rng.uniform(0.3, 1.0) if i % 3 != 2 else rng.uniform(0.0, 0.5))
    mask_in = rng.random((m, d_in)) < p
    mask_out = rng.random((d_out, m)) < p
    if i % 3 == 2:
        # every neuron keeps one input and one output: failures are then matching deficiencies
        mask_in[np.arange(m), rng.integers(0, d_in, size=m)] = True
        mask_out[rng.integers(0, d_out, size=m), np.arange(m)] = True

    def fill(mask: np.ndarray) -> fmpz_mat:
        vals = rng.integers(1, BIG, size=mask.shape, endpoint=True) * rng.choice([-1, 1],
                                                                                   size=mask.shape)
        return fmpz_mat([[int(v) if keep else 0 for v, keep in zip(row, mrow)]
                         for row, mrow in zip(vals.tolist(), mask.tolist())])

    return mask_in, mask_out, fill(mask_in), fill(mask_out)


def test_matching_equals_exact_rank_on_600_random_patterns():
    """Structural rank (two matchings) == exact rank of a random 40-bit filling, 600 patterns.

    A filling has rank < structural rank with probability ≤ 2n/2^41 (Schwartz–Zippel), so any
    disagreement is a bug.
    """
    outcomes = {"full": 0, "deficient": 0, "dead": 0}
    for i in range(600):
        mask_in, mask_out, V_in, V_out = _random_case(i)
        P = khatri_rao_pattern(mask_in, mask_out)
        K = khatri_rao_system(V_in, V_out)           # FLINT, built independently of P
        r_exact = exact_rank(K)
        r_scipy = structural_rank_scipy(P)
        r_nx = structural_rank_networkx(P)
        assert r_scipy == r_nx == r_exact, (i, r_scipy, r_nx, r_exact)
        assert rank_mod_prime(K, 2**61 - 1) <= r_exact
        n, m = K.nrows(), K.ncols()
        if n == m and n <= 6:
            assert (boolean_permanent_bruteforce(P) > 0) == (r_exact == n) \
                == boolean_determinant(P)
        diag = diagnose_pattern(mask_in, mask_out)
        assert diag.structural_rank == r_exact
        outcomes[{"none": "full", "deficiency": "deficient", "dead_neurons": "dead"}[
            diag.cause]] += 1
    # the sample exercises every branch, so the agreement above is not vacuous
    assert min(outcomes.values()) >= 40, outcomes


def test_pattern_is_the_support_of_the_exact_system():
    for i in range(40):
        mask_in, mask_out, V_in, V_out = _random_case(1000 + i)
        K = khatri_rao_system(V_in, V_out)
        support = np.array([[x != 0 for x in row] for row in K.tolist()], dtype=bool)
        assert (khatri_rao_pattern(mask_in, mask_out).toarray() == support.reshape(
            K.nrows(), K.ncols())).all()
        got_in, got_out = support_masks(V_in, V_out)
        assert (got_in == mask_in).all() and (got_out == mask_out).all()


def test_matchings_are_valid_and_maximum():
    for i in range(60):
        mask_in, mask_out, *_ = _random_case(2000 + i)
        dense = khatri_rao_pattern(mask_in, mask_out).toarray()
        for match in (maximum_matching_scipy(dense), maximum_matching_networkx(dense)):
            assert len(set(match.values())) == len(match)          # a matching
            assert all(dense[r, c] for r, c in match.items())      # on the support
            assert len(match) == structural_rank(dense, "scipy") == structural_rank(dense,
                                                                                    "networkx")


@pytest.mark.parametrize("d_in,d_out", [(2, 2), (2, 3), (1, 4)])
def test_distinct_permutations_give_distinct_monomials(d_in, d_out):
    """The no-cancellation lemma, exhaustively: encode every matching, decode it back."""
    n = d_in * d_out
    seen = {}
    for perm in itertools.permutations(range(n)):
        mono = permutation_monomial(perm, d_out)
        assert permutation_from_monomial(mono, d_out) == list(perm)
        assert mono not in seen
        seen[mono] = perm
    assert len(seen) == len(list(itertools.permutations(range(n))))


def _symbolic_system(d_in: int, d_out: int, m: int, mask_in=None, mask_out=None):
    x = sympy.Matrix(m, d_in, lambda k, a: sympy.Symbol(f"x_{k}_{a}")
                     if mask_in is None or mask_in[k, a] else 0)
    y = sympy.Matrix(d_out, m, lambda b, k: sympy.Symbol(f"y_{b}_{k}")
                     if mask_out is None or mask_out[b, k] else 0)
    # K[a·d_out + b, k] = x[k, a]·y[b, k], written out directly (not via exactnorm.exact.linalg)
    return sympy.Matrix(d_in * d_out, m, lambda r, k: x[k, r // d_out] * y[r % d_out, k])


def _monomial_of_term(term) -> tuple:
    factors = []
    for sym, power in term.as_powers_dict().items():
        if not isinstance(sym, sympy.Symbol):
            continue
        name, i, j = str(sym).split("_")
        assert power == 1
        factors.append((name, int(i), int(j)))
    return tuple(sorted(factors))


def test_symbolic_determinant_d2_has_one_term_per_matching():
    """SymPy: det(Xᵀ ⊙ Y) for d_in = d_out = 2 has 4! = 24 terms, each ±1 times a matching."""
    K = _symbolic_system(2, 2, 4)
    det = sympy.expand(K.det(method="berkowitz"))
    terms = sympy.Add.make_args(det)
    assert len(terms) == 24
    assert sympy.Poly(det).total_degree() == 8
    decoded = set()
    for t in terms:
        coeff, _ = t.as_coeff_Mul()
        assert coeff in (1, -1)
        decoded.add(tuple(permutation_from_monomial(_monomial_of_term(t), 2)))
    assert decoded == set(itertools.permutations(range(4)))


def test_masked_symbolic_determinant_counts_perfect_matchings():
    """For masked d = 2 patterns: #terms of det K == #perfect matchings; det ≢ 0 iff matching."""
    rng = layer_rng(31, 0)
    nonzero = zero = 0
    for _ in range(30):
        mask_in = rng.random((4, 2)) < 0.75
        mask_out = rng.random((2, 4)) < 0.75
        det = sympy.expand(_symbolic_system(2, 2, 4, mask_in, mask_out).det(method="berkowitz"))
        P = khatri_rao_pattern(mask_in, mask_out)
        terms = 0 if det == 0 else len(sympy.Add.make_args(det))
        assert terms == boolean_permanent_bruteforce(P)
        assert (det != 0) == boolean_determinant(P)
        nonzero += det != 0
        zero += det == 0
    assert nonzero and zero


def test_dead_neurons_and_zero_rows():
    mask_in = np.ones((4, 2), bool)
    mask_out = np.ones((2, 4), bool)
    mask_in[1, :] = False          # neuron 1 reads nothing
    mask_out[:, 3] = False         # neuron 3 writes nothing
    assert dead_neurons(mask_in, mask_out) == ([1], [3])
    diag = diagnose_pattern(mask_in, mask_out)
    assert diag.dead == [1, 3] and diag.cause == "dead_neurons"
    assert diag.structural_rank == 2 and "dead neurons [1, 3]" in diag.message()
    # the same dead neurons among 6 neurons leave 4 live ones: no longer a dead-neuron failure
    wide_in = np.vstack([mask_in, np.ones((2, 2), bool)])
    wide_out = np.hstack([mask_out, np.ones((2, 2), bool)])
    wide = diagnose_pattern(wide_in, wide_out)
    assert wide.dead == [1, 3] and wide.cause == "none" and wide.structural_rank == 4
    # zero rows agree with the dense pattern
    for i in range(50):
        mi, mo, *_ = _random_case(3000 + i)
        dense = khatri_rao_pattern(mi, mo).toarray()
        d_out = mo.shape[0]
        expected = sorted((r % d_out, r // d_out) for r in np.flatnonzero(~dense.any(axis=1)))
        assert sorted(zero_rows(mi, mo)) == expected


def test_diagnose_draw_reports_exact_and_modular_rank():
    V_in = fmpz_mat([[1, 0], [2, 0], [0, 0], [0, 3]])     # neuron 2 is dead
    V_out = fmpz_mat([[1, 1, 1, 1], [1, 2, 5, 0]])
    d = diagnose_draw(V_in, V_out, prime=101)
    K = khatri_rao_system(V_in, V_out)
    assert d.dead == [2] and d.cause == "dead_neurons"
    assert d.exact_rank == exact_rank(K) == 3 and d.rank_mod_prime == 3


def test_schwartz_zippel_bound_holds_exactly_on_a_small_case():
    """Lemma 5, exhaustively: d_in = 1, d_out = 2, m = 2 over S = {-2, …, 2}^6."""
    S = range(-2, 3)
    singular = total = 0
    for x0, x1, y00, y01, y10, y11 in itertools.product(S, repeat=6):
        # K = [[x0·y00, x1·y01], [x0·y10, x1·y11]], det = x0·x1·(y00·y11 − y01·y10)
        det = x0 * y00 * x1 * y11 - x1 * y01 * x0 * y10
        singular += det == 0
        total += 1
    bound = schwartz_zippel_bound(2, len(S))      # n = 2, degree 4
    assert Fraction(singular, total) <= bound
    assert schwartz_zippel_bound(5, 3) == 1
    assert schwartz_zippel_bound(4, 80) == Fraction(1, 10)


def test_bad_shapes_are_rejected():
    with pytest.raises(ShapeError):
        khatri_rao_pattern(np.ones((3, 2), bool), np.ones((2, 4), bool))
    with pytest.raises(ShapeError):
        boolean_determinant(np.ones((2, 3), bool))
    with pytest.raises(ShapeError):
        khatri_rao_pattern(np.ones(3, bool), np.ones((2, 3), bool))
