"""The lemmas of the source as Hypothesis properties, in exact arithmetic (docs/lemmas.md).

One property per statement; each side of every identity is computed by an independent path
(FLINT against SymPy, structural formulas, explicit compositions). The statements, in our words,
are in ``docs/lemmas.md``. ``tests/analysis/test_lemmas_can_fail.py`` shows that wrong variants
of these
properties are falsified, so the properties can fail.

The ``*_holds`` functions are the properties themselves; they return ``True`` or ``False`` and
are reused by the can-fail tests with deliberately wrong ingredients.
"""

from __future__ import annotations

import itertools

import pytest
import sympy
from flint import fmpq, fmpq_mat, fmpz_mat
from hypothesis import assume, example, given
from hypothesis import strategies as st
from sympy.polys.domains import QQ
from sympy.polys.matrices import DomainMatrix

from exactnorm.constructions.theorem1 import realize_layer_theorem1
from exactnorm.errors import SingularSystemError
from exactnorm.exact import linalg
from exactnorm.exact.sampling import layer_rng, parse_distribution, sample_matrix
from exactnorm.model.network import FrozenLayer, FrozenNetwork, TargetNetwork, affine_interval
from exactnorm.strategies import (
    exact_rationals,
    integer_matrices,
    khatri_rao_pairs,
    matrices_of_rank,
    points_in_box,
    rational_boxes,
    rational_matrices,
    target_networks,
)

DIM = st.integers(1, 4)
SMALL = st.integers(1, 3)


def Z(rows: list[list[int]]) -> fmpz_mat:
    return fmpz_mat(rows)


def hstack(*mats: fmpz_mat) -> fmpz_mat:
    rows = [sum((M.tolist()[i] for M in mats), []) for i in range(mats[0].nrows())]
    return fmpz_mat(mats[0].nrows(), sum(M.ncols() for M in mats), sum(rows, []))


# ---------------------------------------------------------------- Fact 1 / Remark 4


def null_basis(A: fmpz_mat) -> fmpz_mat:
    """Columns spanning null(A) (FLINT nullspace: the first ``nullity`` columns)."""
    N, nullity = A.nullspace()
    rows = [[N[i, j] for j in range(nullity)] for i in range(A.ncols())]
    return fmpz_mat(A.ncols(), nullity, sum(rows, []))


def intersection_dim(A: fmpz_mat, B: fmpz_mat) -> int:
    """dim(col B ∩ null A) = rank B + rank N − rank [B | N], N a basis of null A."""
    N = null_basis(A)
    if N.ncols() == 0:
        return 0
    return linalg.exact_rank(B) + N.ncols() - linalg.exact_rank(hstack(B, N))


def fact1_holds(A: fmpz_mat, B: fmpz_mat, *, rank_formula=None) -> bool:
    """rank(AB) = rank B − dim(null A ∩ col B); hence equality iff the intersection is {0}."""
    formula = rank_formula or (lambda A, B: linalg.exact_rank(B) - intersection_dim(A, B))
    lhs = linalg.exact_rank(A * B)
    same = formula(A, B) == lhs
    iff = (lhs == linalg.exact_rank(B)) == (intersection_dim(A, B) == 0)
    return same and iff


@st.composite
def product_pairs(draw):
    p, n, q = draw(DIM), draw(DIM), draw(DIM)
    return draw(matrices_of_rank(p, n)), draw(matrices_of_rank(n, q))


@given(product_pairs())
@example((Z([[1, 0]]), Z([[0], [1]])))          # col B ⊂ null A: rank drops to 0
@example((Z([[1, 1], [0, 0]]), Z([[1, 0], [0, 1]])))
def test_fact1_rank_of_product(pair):
    assert fact1_holds(*pair)


# ---------------------------------------------------------------- Theorem 5


def theorem5_holds(A: fmpz_mat, B: fmpz_mat, *, predicted=None) -> bool:
    rA, rB = linalg.exact_rank(A), linalg.exact_rank(B)
    want = predicted(rA, rB) if predicted else rA * rB
    return linalg.exact_rank(linalg.kronecker(A, B)) == want


@given(matrices_of_rank(SMALL, SMALL), matrices_of_rank(SMALL, SMALL))
@example(Z([[1, 2], [2, 4]]), Z([[1, 0], [0, 1]]))
@example(Z([[0]]), Z([[3, 1]]))
def test_theorem5_rank_of_kronecker(A, B):
    assert theorem5_holds(A, B)


# ---------------------------------------------------------------- Theorem 6


def khatri_rao_columns_hold(X: fmpz_mat, Y: fmpz_mat, *, product=linalg.khatri_rao) -> bool:
    """Column k of X ⊙ Y is column k·n + k of X ⊗ Y."""
    n = X.ncols()
    KR, KK = product(X, Y), linalg.kronecker(X, Y)
    if (KR.nrows(), KR.ncols()) != (X.nrows() * Y.nrows(), n):
        return False
    return all(KR[i, k] == KK[i, k * n + k] for i in range(KR.nrows()) for k in range(n))


def gram_holds(X: fmpz_mat, Y: fmpz_mat, *, product=linalg.khatri_rao) -> bool:
    """(X ⊙ Y)ᵀ(X ⊙ Y) = XᵀX ∘ YᵀY."""
    P = product(X, Y)
    G = P.transpose() * P
    H = linalg.hadamard(X.transpose() * X, Y.transpose() * Y)
    return (G.nrows(), G.ncols()) == (H.nrows(), H.ncols()) and G == H


def vec_identity_holds(A: fmpq_mat, B: fmpq_mat, gamma: list[fmpq], *,
                       order_f: str = "F", order_c: str = "C") -> bool:
    """vec(A diag(γ) B, F) = (Bᵀ ⊙ A)γ and vec(A diag(γ) B, C) = (A ⊙ Bᵀ)γ."""
    g = fmpq_mat(len(gamma), 1, gamma)
    M = A * linalg.diag(gamma) * B
    col_major = linalg.vec(M, order_f) == linalg.khatri_rao(B.transpose(), A) * g
    row_major = linalg.vec(M, order_c) == linalg.khatri_rao(A, B.transpose()) * g
    return col_major and row_major


@given(khatri_rao_pairs())
@example((Z([[1, 2]]), Z([[3, 4], [5, 6]])))
@example((Z([[1]]), Z([[-2]])))
def test_theorem6_khatri_rao_selects_kronecker_columns(pair):
    assert khatri_rao_columns_hold(*pair)


@given(khatri_rao_pairs())
@example((Z([[1, 2], [0, 1]]), Z([[3, 4]])))
@example((Z([[0, 0]]), Z([[1, -1]])))
def test_theorem6_gram_is_hadamard(pair):
    assert gram_holds(*pair)


@st.composite
def vec_cases(draw):
    p, n, q = draw(DIM), draw(DIM), draw(DIM)
    A = draw(rational_matrices(p, n))
    B = draw(rational_matrices(n, q))
    gamma = [draw(exact_rationals()) for _ in range(n)]
    return A, B, gamma


@given(vec_cases())
@example((fmpq_mat([[1, 2], [3, 4]]), fmpq_mat([[1, 0, 2], [0, 1, 3]]), [fmpq(2), fmpq(-1)]))
@example((fmpq_mat([[1], [2]]), fmpq_mat([[3, 5]]), [fmpq(1, 2)]))
def test_theorem6_vec_identities_both_orders(case):
    assert vec_identity_holds(*case)


# ---------------------------------------------------------------- Theorem 7


def solvable_by_sympy(A: fmpz_mat, b: fmpz_mat) -> bool:
    """Independent decision: Gauss–Jordan in SymPy raises ValueError iff there is no solution."""
    try:
        sympy.Matrix(A.tolist()).gauss_jordan_solve(sympy.Matrix(b.tolist()))
    except ValueError:
        return False
    return True


def rouche_capelli_holds(A: fmpz_mat, b: fmpz_mat, *, criterion=None) -> bool:
    """Ax = b is solvable iff rank A = rank [A | b]."""
    rA, rAb = linalg.exact_rank(A), linalg.exact_rank(hstack(A, b))
    predicted = criterion(rA, rAb) if criterion else rA == rAb
    return predicted == solvable_by_sympy(A, b)


@st.composite
def linear_systems(draw):
    p, n = draw(SMALL), draw(SMALL)
    A = draw(matrices_of_rank(p, n))
    consistent = draw(st.booleans())  # half the systems are consistent by construction
    b = A * draw(integer_matrices(n, 1)) if consistent else draw(integer_matrices(p, 1))
    return A, b


@given(linear_systems())
@example((Z([[1, 1], [2, 2]]), Z([[1], [3]])))   # inconsistent: ranks 1 and 2
@example((Z([[1, 1], [2, 2]]), Z([[1], [2]])))   # consistent: ranks 1 and 1
def test_theorem7_rouche_capelli(system):
    assert rouche_capelli_holds(*system)


# ---------------------------------------------------------------- Lemma 5


def poly_values(terms: list[tuple[tuple[int, ...], int]], grid: list[int], n: int) -> list[int]:
    return [sum(c * _monomial(e, x) for e, c in terms) for x in itertools.product(grid, repeat=n)]


def _monomial(exps: tuple[int, ...], x: tuple[int, ...]) -> int:
    out = 1
    for e, v in zip(exps, x):
        out *= v**e
    return out


@st.composite
def nonzero_polynomials(draw):
    """A nonzero SymPy Poly in 2–3 variables with small integer coefficients, degree ≤ 3."""
    n = draw(st.integers(2, 3))
    gens = sympy.symbols(f"x0:{n}")
    exps = [e for e in itertools.product(range(4), repeat=n) if sum(e) <= 3]
    chosen = draw(st.lists(st.sampled_from(exps), min_size=1, max_size=6, unique=True))
    coeffs = draw(st.lists(st.integers(-5, 5).filter(bool), min_size=len(chosen),
                           max_size=len(chosen)))
    return sympy.Poly.from_dict(dict(zip(chosen, coeffs)), *gens, domain="ZZ")


def lemma5_holds(P: sympy.Poly, *, grid_size=None) -> bool:
    """A nonzero P of total degree d has a point of {0..d}^n where it does not vanish."""
    d = P.total_degree()
    size = grid_size(d) if grid_size else d + 1
    return any(v != 0 for v in poly_values(P.terms(), list(range(size)), len(P.gens)))


def schwartz_zippel_holds(P: sympy.Poly, S: list[int], *, bound=None) -> bool:
    """#{x ∈ S^n : P(x) = 0} / |S|^n ≤ deg P / |S| (exact rational comparison).

    ``bound(deg, |S|, n)`` replaces the right-hand side (wrong variants in
    test_lemmas_can_fail.py)."""
    n = len(P.gens)
    zeros = sum(v == 0 for v in poly_values(P.terms(), S, n))
    rhs = bound(P.total_degree(), len(S), n) if bound else fmpq(P.total_degree(), len(S))
    return fmpq(zeros, len(S) ** n) <= rhs


x0, x1, x2 = sympy.symbols("x0:3")


@given(nonzero_polynomials())
@example(sympy.Poly(x0 * (x0 - 1) * (x0 - 2), x0, x1))   # vanishes on {0,1,2} × anything
@example(sympy.Poly(x0 * x1, x0, x1))
def test_lemma5_nonzero_point_in_grid(P):
    assume(not P.is_zero)
    assert lemma5_holds(P)


@given(nonzero_polynomials(), st.integers(2, 7))
@example(sympy.Poly(x0 * x1 * x2, x0, x1, x2), 3)
@example(sympy.Poly(x0**2 - x1**2, x0, x1), 5)
def test_lemma5_schwartz_zippel_rate(P, size):
    assume(not P.is_zero)
    assert schwartz_zippel_holds(P, list(range(-(size // 2), size - size // 2)))


# ---------------------------------------------------------------- Lemma 6


def khatri_rao_draw(seed: int, d_in: int, d_out: int, dist: str, *,
                    width: int | None = None) -> fmpz_mat:
    """``K = V_inᵀ ⊙ V_out`` (``d_in·d_out × m``) for a hidden width ``m`` (``d_in·d_out``)."""
    m = d_in * d_out if width is None else width
    rng = layer_rng(seed, 0)
    V_in = sample_matrix(rng, m, d_in, dist)
    V_out = sample_matrix(rng, d_out, m, dist)
    return linalg.khatri_rao(V_in.transpose(), V_out)


def three_ranks(K: fmpz_mat, seed: int) -> tuple[int, int, int]:
    p = linalg.random_prime(60, layer_rng(seed, 1))
    dm = DomainMatrix([[QQ(int(x)) for x in row] for row in K.tolist()], (K.nrows(), K.ncols()),
                      QQ)
    # DomainMatrix.rank() would run in FLINT under flint ground types; the dense DDM rref is
    # SymPy's own elimination, an independent algorithm
    return linalg.exact_rank(K), linalg.rank_mod_prime(K, p), len(dm.to_ddm().rref()[1])


SEEDS = st.integers(0, 2**20)


def lemma6_full_rank_holds(seed: int, d_in: int, d_out: int, *, dist: str = "bits:30",
                           width: int | None = None) -> bool:
    """Width ``m = d_in·d_out``, entries from a large set: ``K`` has rank ``d_in·d_out`` (FLINT,
    rank mod a prime and SymPy's rref agree). ``dist``/``width`` are for wrong variants."""
    n = d_in * d_out
    return three_ranks(khatri_rao_draw(seed, d_in, d_out, dist, width=width), seed) == (n, n, n)


def lemma6_int8_holds(seed: int, d_in: int, d_out: int, *, never_singular: bool = False) -> bool:
    """int:8 draws: exact and SymPy ranks agree, rank mod p is at most the exact rank, and a
    singular ``K`` comes with a genuine nonzero kernel vector (``never_singular`` is the wrong
    belief that int:8 draws are always invertible)."""
    K = khatri_rao_draw(seed, d_in, d_out, "int:8")
    exact, mod_p, sym = three_ranks(K, seed)
    if exact != sym or mod_p > exact:
        return False
    if exact == K.nrows():
        return linalg.kernel_vector(K) is None
    if never_singular:
        return False
    x = linalg.kernel_vector(K)
    return x is not None and any(x) and K * fmpz_mat(len(x), 1, x) == fmpz_mat(K.nrows(), 1)


def lemma6_singular_rate_holds(d_in: int, d_out: int, draws: int = 300, *,
                               degree=lambda m: 2 * m) -> bool:
    """det K has degree 2m: the singular rate of int:8 draws over ``draws`` fixed seeds is at
    most the Schwartz–Zippel bound ``degree(m)/|S|`` with ``|S| = 17``."""
    m = d_in * d_out
    S = parse_distribution("int:8").support_size
    singular = sum(linalg.exact_rank(khatri_rao_draw(s, d_in, d_out, "int:8")) < m
                   for s in range(draws))
    return fmpq(singular, draws) <= fmpq(degree(m), S)


@given(SEEDS, st.integers(1, 4), st.integers(1, 4))
@example(0, 2, 2)
@example(7, 4, 4)
def test_lemma6_khatri_rao_full_rank(seed, d_in, d_out):
    """Entries uniform on 2^31 + 1 integers: singular with probability ≤ 2m/(2^31 + 1) < 1e-8."""
    assert lemma6_full_rank_holds(seed, d_in, d_out)


@given(SEEDS, st.integers(1, 4), st.integers(1, 4))
@example(3, 1, 1)
@example(0, 2, 2)
def test_lemma6_int8_ranks_agree_and_singular_draws_are_witnessed(seed, d_in, d_out):
    """With int:8 entries tiny systems can be singular; every path must say the same, and a
    singular draw must come with a genuine kernel vector."""
    assert lemma6_int8_holds(seed, d_in, d_out)


@pytest.mark.parametrize("d_in,d_out", [(1, 1), (1, 2), (2, 2), (2, 3)])
def test_lemma6_int8_singular_rate_below_schwartz_zippel(d_in, d_out):
    """det K has degree 2m: P(singular) ≤ 2m/|S| with |S| = 17 (observed on 300 fixed seeds)."""
    assert lemma6_singular_rate_holds(d_in, d_out)


# ---------------------------------------------------------------- Lemma 7


def realize_one_layer(target: TargetNetwork, seed: int, *, drop_cancelling_bias: bool = False):
    layer = target.layers[0]
    box = (target.lower, target.upper)
    try:
        pair, _ = realize_layer_theorem1(layer.weight, layer.bias, layer.activation, box,
                                         seed=seed, layer=1, input_node=0, retry=3)
    except SingularSystemError:
        assume(False)
    if drop_cancelling_bias:
        first, second = pair
        pair = [first, FrozenLayer(second.input, second.weight, second.gamma, layer.bias,
                                   second.activation)]
    return FrozenNetwork(target.widths[0], tuple(pair), (2,))


def lemma7_holds(target: TargetNetwork, seed: int, points, **kw) -> bool:
    net = realize_one_layer(target, seed, **kw)
    return all(net.evaluate(x) == target.evaluate(x) for x in list(target.corners(16)) + points)


@st.composite
def one_layer_cases(draw):
    target = draw(target_networks(max_depth=1))
    seed = draw(st.integers(0, 2**16))
    pts = [draw(points_in_box(target.lower, target.upper)) for _ in range(3)]
    return target, seed, pts


def _one_layer(W, b, act, lo, hi):
    return TargetNetwork.from_lists([W], [b], [act], lower=lo, upper=hi)


@given(one_layer_cases())
@example((_one_layer([[1, -1]], [0], "relu", [-1, 0], [2, 3]), 0, [(fmpq(1, 2), fmpq(1))]))
@example((_one_layer([[2], [-3]], [1, 1], "identity", [1], [1]), 5, []))
def test_lemma7_two_frozen_layers_reproduce_one_layer(case):
    assert lemma7_holds(*case)


# ---------------------------------------------------------------- Proposition 1


def compose_affine(layers: list[tuple[fmpq_mat, list[fmpq], list[fmpq]]], d0: int):
    """x ↦ γ ⊙ (V x) + β composed, as one affine map (A, c) with exact fmpq entries."""
    A = fmpq_mat(d0, d0, [fmpq(int(i == j)) for i in range(d0) for j in range(d0)])
    c = fmpq_mat(d0, 1)
    for V, gamma, beta in layers:
        G = linalg.diag(gamma)
        A = G * V * A
        c = G * V * c + fmpq_mat(len(beta), 1, beta)
    return A, c.entries()


@st.composite
def linear_normalized_networks(draw):
    depth = draw(st.integers(2, 3))
    widths = [draw(SMALL) for _ in range(depth + 1)]
    layers = []
    for i in range(depth):
        V = fmpq_mat(draw(integer_matrices(widths[i + 1], widths[i])))
        gamma = [draw(exact_rationals()) for _ in range(widths[i + 1])]
        beta = [draw(exact_rationals()) for _ in range(widths[i + 1])]
        layers.append((V, gamma, beta))
    lo, hi = draw(rational_boxes(widths[0]))
    pts = [draw(points_in_box(lo, hi)) for _ in range(3)]
    return layers, lo, hi, pts


def proposition1_holds(layers, lo, hi, pts, *, use_shift: bool = True) -> bool:
    d0 = layers[0][0].ncols()
    linear = FrozenNetwork(d0, tuple(FrozenLayer(j, V, tuple(g), tuple(b), "identity")
                                     for j, (V, g, b) in enumerate(layers)),
                           (len(layers),))
    A, c = compose_affine(layers, d0)
    mins, _ = affine_interval(A, c, lo, hi)
    shift = [-m if (use_shift and m < 0) else fmpq(0) for m in mins]
    relu = FrozenNetwork(d0, (FrozenLayer(0, A, tuple(fmpq(1) for _ in c),
                                          tuple(ci + s for ci, s in zip(c, shift)), "relu"),),
                         (1,))
    corners = [tuple(hi[k] if (mask >> k) & 1 else lo[k] for k in range(d0))
               for mask in range(2**d0)]
    for x in corners + pts:
        want = tuple(v + s for v, s in zip(linear.evaluate(x), shift))
        if relu.evaluate(x) != want:
            return False
    return True


@given(linear_normalized_networks())
@example(([(fmpq_mat([[1]]), [fmpq(2)], [fmpq(-5)]), (fmpq_mat([[-1]]), [fmpq(1)], [fmpq(0)])],
          (fmpq(0),), (fmpq(3),), []))
@example(([(fmpq_mat([[1, 1]]), [fmpq(1)], [fmpq(0)]), (fmpq_mat([[1], [-1]]),
                                                         [fmpq(1), fmpq(1)], [fmpq(1), fmpq(1)])],
          (fmpq(-1), fmpq(-1)), (fmpq(1), fmpq(1)), [(fmpq(0), fmpq(1, 2))]))
def test_proposition1_linear_network_as_one_relu_layer(case):
    assert proposition1_holds(*case)


# ---------------------------------------------------------------- Lemma 8


def minor(B: fmpz_mat, i: int, j: int) -> fmpz_mat:
    rows = [[B[r, s] for s in range(B.ncols()) if s != j] for r in range(B.nrows()) if r != i]
    n = B.nrows() - 1
    return fmpz_mat(n, n, sum(rows, []))


def adjugate(B: fmpz_mat, *, sign=lambda i, j: (-1) ** (i + j)) -> fmpq_mat:
    """adj(B)[i, j] = (−1)^{i+j} det(minor(B, j, i)) — cofactors from fmpz_mat.det."""
    n = B.nrows()
    return fmpq_mat(n, n, [sign(i, j) * minor(B, j, i).det() for i in range(n)
                           for j in range(n)])


def lemma8_holds(B: fmpz_mat, **kw) -> bool:
    det = B.det()
    return adjugate(B, **kw) * fmpq(1, int(det)) == fmpq_mat(B).inv()


@given(st.integers(1, 4).flatmap(lambda n: matrices_of_rank(n, n, n)))
@example(Z([[2, 1], [1, 1]]))
@example(Z([[0, 1, 0], [0, 0, 2], [3, 0, 0]]))
def test_lemma8_inverse_by_determinants(B):
    assert lemma8_holds(B)
