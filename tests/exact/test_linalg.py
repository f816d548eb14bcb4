"""Exact linear algebra: every operation against an independent implementation."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import sympy
from flint import fmpq, fmpq_mat, fmpz_mat
from sympy.polys.domains import QQ
from sympy.polys.matrices import DomainMatrix

from exactnorm.errors import InputError, NumberFormatError, ShapeError, SingularSystemError
from exactnorm.exact import linalg
from exactnorm.exact.sampling import layer_rng, sample_matrix


def rand_q(rng: np.random.Generator, r: int, c: int, bound: int = 9) -> fmpq_mat:
    num = rng.integers(-bound, bound + 1, size=(r, c))
    den = rng.integers(1, bound + 1, size=(r, c))
    return fmpq_mat([[fmpq(int(num[i, j]), int(den[i, j])) for j in range(c)] for i in range(r)])


def as_objects(M) -> np.ndarray:
    """Independent representation: numpy object array of Fractions."""
    return np.array(linalg.to_fractions(M), dtype=object).reshape(M.nrows(), M.ncols())


def vec_numpy(M: np.ndarray, order: str) -> np.ndarray:
    return M.reshape(-1, order=order)


SHAPES = [(1, 1, 1), (2, 3, 2), (3, 1, 4), (4, 5, 3), (2, 6, 5)]


@pytest.mark.parametrize("p,m,n", SHAPES)
@pytest.mark.parametrize("seed", range(4))
def test_vec_identity_column_major(p, m, n, seed):
    rng = np.random.default_rng(seed)
    A, B, g = rand_q(rng, p, m), rand_q(rng, m, n), rand_q(rng, m, 1)
    lhs = linalg.vec(A * linalg.diag(g) * B, "F")
    rhs = linalg.khatri_rao(B.transpose(), A) * g
    assert lhs == rhs
    # independent: numpy object arithmetic with Fortran-order reshape
    prod = as_objects(A) @ np.diag(as_objects(g)[:, 0]) @ as_objects(B)
    assert list(vec_numpy(prod, "F")) == [row[0] for row in linalg.to_fractions(lhs)]


@pytest.mark.parametrize("p,m,n", SHAPES)
@pytest.mark.parametrize("seed", range(4))
def test_vec_identity_row_major(p, m, n, seed):
    rng = np.random.default_rng(100 + seed)
    A, B, g = rand_q(rng, p, m), rand_q(rng, m, n), rand_q(rng, m, 1)
    lhs = linalg.vec(A * linalg.diag(g) * B, "C")
    assert lhs == linalg.khatri_rao(A, B.transpose()) * g
    prod = as_objects(A) @ np.diag(as_objects(g)[:, 0]) @ as_objects(B)
    assert list(vec_numpy(prod, "C")) == [row[0] for row in linalg.to_fractions(lhs)]


def test_mixing_conventions_is_wrong():
    rng = np.random.default_rng(7)
    A, B, g = rand_q(rng, 2, 4, 5), rand_q(rng, 4, 3, 5), rand_q(rng, 4, 1, 5)
    assert linalg.vec(A * linalg.diag(g) * B, "F") != linalg.khatri_rao(A, B.transpose()) * g


@pytest.mark.parametrize("seed", range(5))
def test_khatri_rao_kronecker_hadamard_against_numpy(seed):
    rng = np.random.default_rng(seed)
    X = rng.integers(-5, 6, size=(3, 4))
    Y = rng.integers(-5, 6, size=(2, 4))
    Xf, Yf = fmpz_mat(X.tolist()), fmpz_mat(Y.tolist())
    from scipy.linalg import khatri_rao as kr_scipy

    assert linalg.khatri_rao(Xf, Yf).tolist() == kr_scipy(X, Y).tolist()
    assert linalg.kronecker(Xf, Yf).tolist() == np.kron(X, Y).tolist()
    Z = rng.integers(-5, 6, size=(3, 4))
    assert linalg.hadamard(Xf, fmpz_mat(Z.tolist())).tolist() == (X * Z).tolist()


def test_khatri_rao_is_selected_kronecker_columns():
    rng = np.random.default_rng(3)
    X, Y = rand_q(rng, 3, 4), rand_q(rng, 2, 4)
    Kr, Kk = linalg.khatri_rao(X, Y), linalg.kronecker(X, Y)
    n = 4
    for k in range(n):
        assert [Kr[i, k] for i in range(6)] == [Kk[i, k * n + k] for i in range(6)]


def test_shape_errors():
    with pytest.raises(ShapeError):
        linalg.khatri_rao(fmpz_mat(2, 3), fmpz_mat(2, 2))
    with pytest.raises(ShapeError):
        linalg.hadamard(fmpz_mat(2, 3), fmpz_mat(3, 2))
    with pytest.raises(ShapeError):
        linalg.unvec(fmpz_mat(5, 1), (2, 3))
    with pytest.raises(ShapeError):
        linalg.to_fmpq_mat([[1, 2], [3]])


@pytest.mark.parametrize("order", ["F", "C"])
def test_vec_unvec_round_trip(order):
    M = rand_q(np.random.default_rng(1), 3, 5)
    assert linalg.unvec(linalg.vec(M, order), (3, 5), order) == M


def domainmatrix_rank(M) -> int:
    """SymPy's own dense elimination (``DDM.rref``); ``DomainMatrix.rank`` may delegate to FLINT."""
    dm = DomainMatrix([[QQ(int(f.numerator), int(f.denominator)) for f in row]
                       for row in linalg.to_fractions(M)], (M.nrows(), M.ncols()), QQ)
    return len(dm.to_ddm().rref()[1])


@pytest.mark.parametrize("d", [1, 2, 3, 4])
@pytest.mark.parametrize("seed", range(3))
def test_rank_flint_modp_sympy_agree_full_rank(d, seed):
    m = d * d
    rng = layer_rng(seed, d)
    K = linalg.khatri_rao(sample_matrix(rng, m, d).transpose(), sample_matrix(rng, d, m))
    exact = linalg.exact_rank(K)
    p = linalg.random_prime(60, layer_rng(seed, d, 99))
    assert p.bit_length() == 60 and sympy.isprime(p)
    if exact == m:
        assert linalg.rank_mod_prime(K, p) == m
    if m <= 16:
        assert domainmatrix_rank(K) == exact


@pytest.mark.parametrize("rank", [0, 1, 2, 3])
def test_rank_deficient_agree(rank):
    rng = np.random.default_rng(rank)
    A = fmpz_mat(rng.integers(-4, 5, size=(5, rank)).tolist()) if rank else fmpz_mat(5, 1)
    B = fmpz_mat(rng.integers(-4, 5, size=(rank, 6)).tolist()) if rank else fmpz_mat(1, 6)
    M = A * B
    r = linalg.exact_rank(M)
    assert r == domainmatrix_rank(M) == sympy.Matrix(M.tolist()).rank()
    assert r <= rank
    assert linalg.rank_mod_prime(M, 2**61 - 1) <= r


def test_solve_exact_and_singular_report():
    rng = np.random.default_rng(5)
    K = rand_q(rng, 6, 6)
    rhs = rand_q(rng, 6, 1)
    x = linalg.solve_exact(K, rhs)
    assert K * x == rhs
    S = fmpz_mat([[1, 2, 3], [2, 4, 6], [1, 0, 1]])
    with pytest.raises(SingularSystemError) as info:
        linalg.solve_exact(S, fmpz_mat([[1], [2], [3]]))
    err = info.value
    assert err.rank == 2 and err.size == 3
    kern = fmpz_mat([[k] for k in err.kernel])
    assert not kern.is_zero() and (S * kern).is_zero()


def test_composite_modulus_refused_before_flint():
    M = fmpz_mat([[1, 2], [3, 4]])
    for bad in (15, 2**61, 1, 0, -7, 2**64 + 13):
        with pytest.raises(InputError):
            linalg.rank_mod_prime(M, bad)
    with pytest.raises(InputError):
        linalg.rank_mod_prime(M, True)


def test_rank_mod_prime_divides_denominator():
    with pytest.raises(InputError):
        linalg.rank_mod_prime(fmpq_mat([[fmpq(1, 7)]]), 7)


def test_conversions_round_trip():
    M = rand_q(np.random.default_rng(2), 3, 4)
    assert linalg.to_fmpq_mat(linalg.to_fractions(M)) == M
    assert linalg.from_sympy(linalg.to_sympy(M)) == M
    assert isinstance(linalg.to_sympy(M)[0, 0], sympy.Rational)


def test_from_numpy_exact_is_dyadic():
    a = np.array([[0.1, -2.5], [3.0, 1e-300]])
    M = linalg.from_numpy_exact(a)
    for (i, j), x in np.ndenumerate(a):
        assert Fraction(int(M[i, j].numer()), int(M[i, j].denom())) == Fraction(float(x))
    assert np.array_equal(linalg.to_numpy(M), a)
    with pytest.raises(NumberFormatError):
        linalg.from_numpy_exact(np.array([1.0, np.nan]))
    with pytest.raises(NumberFormatError):
        linalg.to_fmpq_mat([[0.5]])


def _per_entry(a: np.ndarray) -> list[fmpq]:
    """The independent path: one ``fmpq`` per float, from Python's exact ``as_integer_ratio``."""
    return [fmpq(*float(x).as_integer_ratio()) for x in np.asarray(a).reshape(-1)]


def _awkward_floats(rng: np.random.Generator, dtype: type, n: int) -> np.ndarray:
    """Ordinary values mixed with zeros of both signs, integers, the largest and the smallest
    normal and subnormal numbers of ``dtype``, and powers of two far apart."""
    info = np.finfo(dtype)
    special = np.array([0.0, -0.0, 1.0, -3.0, 2.0**10, info.max, -info.max, info.tiny,
                        -info.tiny, info.smallest_subnormal, -info.smallest_subnormal,
                        info.tiny / 3, 0.5, -0.25], dtype=dtype)
    scale = 2.0 ** rng.integers(info.minexp - info.nmant, info.maxexp - 3, size=n)
    ordinary = (rng.uniform(-1, 1, n) * scale).astype(dtype)  # |x| < max: finite
    picks = rng.integers(0, 3, size=n)
    out = np.where(picks == 0, special[rng.integers(0, len(special), size=n)], ordinary)
    out[picks == 1] = rng.standard_normal(int((picks == 1).sum())).astype(dtype)
    return out.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("seed", range(6))
def test_floats_convert_at_once_to_the_rationals_one_by_one_gives(dtype, seed):
    rng = np.random.default_rng(seed)
    rows, cols = int(rng.integers(1, 7)), int(rng.integers(1, 9))
    a = _awkward_floats(rng, dtype, rows * cols).reshape(rows, cols)
    if seed == 0:
        a[:] = a.dtype.type(0)  # every entry zero: one denominator 1
    M = linalg.from_numpy_exact(a)
    assert (M.nrows(), M.ncols()) == (rows, cols)
    assert M.entries() == _per_entry(a)
    num, k = linalg.dyadic_numerators(a)
    assert [fmpq(n, 2**k) for n in num] == _per_entry(a)
    # the power of two is the least one: some numerator is odd unless every entry is an integer
    assert k == 0 or any(n % 2 for n in num)
    assert np.array_equal(linalg.to_numpy(M), a.astype(np.float64))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("spread", [0, 4, 9, 10, 40])
def test_weights_of_nearby_exponents_convert_exactly(dtype, spread):
    """Trained weights: full mantissas whose exponents differ by a few bits (shifted in int64
    when the result fits, as Python integers from one bit beyond)."""
    rng = np.random.default_rng(spread)
    a = (1 + rng.uniform(0, 1, (6, 9))) * 2.0 ** rng.integers(0, spread + 1, (6, 9))
    a[0, 0], a[0, 1] = 1 + 2.0**-52, 2.0**spread * (1 + 2.0**-52)  # both ends of the spread
    a = (a * rng.choice([-1, 1], a.shape) * 2.0**-30).astype(dtype)
    assert linalg.from_numpy_exact(a).entries() == _per_entry(a)


def test_float_conversion_of_vectors_integers_and_exponents_far_apart():
    column = linalg.from_numpy_exact(np.array([1.5, -2.0**-1074, 2.0**1023]))
    assert (column.nrows(), column.ncols()) == (3, 1)
    assert column.entries() == _per_entry(np.array([1.5, -2.0**-1074, 2.0**1023]))
    big = np.array([[2**62 + 1, -(2**63)]], dtype=np.int64)
    assert linalg.from_numpy_exact(big).entries() == [fmpq(2**62 + 1), fmpq(-(2**63))]
    assert linalg.from_numpy_exact(np.array([[2**64 - 1]], dtype=np.uint64)).entries() == \
        [fmpq(2**64 - 1)]
    assert linalg.from_numpy_exact(np.zeros((0, 3))).nrows() == 0
    for bad in (np.array([[np.inf]]), np.array([[1.0, np.nan]], dtype=np.float32),
                np.array([[True]]), np.array([["1"]])):
        with pytest.raises(NumberFormatError):
            linalg.from_numpy_exact(bad)
    if np.finfo(np.longdouble).nmant > 52:  # a long double wider than a double is refused
        with pytest.raises(NumberFormatError, match="longdouble|float128|float96"):
            linalg.from_numpy_exact(np.array([[1]], dtype=np.longdouble) / 3)


def test_max_bits_and_clear_denominators():
    M = fmpq_mat([[fmpq(3, 4), fmpq(-1000, 3)]])
    N, den = linalg.clear_denominators(M)
    assert den == 12 and N.tolist() == [[9, -4000]]
    assert linalg.max_bits(M) == (1000).bit_length()
