"""p-adic Khatri–Rao solver, parallel layers and the fast checker reader, against independent paths.

Every result is compared with FLINT's general ``fmpz_mat.solve`` (a different algorithm on the
materialized m×m matrix), or with the pure standard-library checker.
"""

from __future__ import annotations

import numpy as np
import pytest
from flint import fmpq, fmpz_mat

from exactnorm import api, checker, checker_flint
from exactnorm.certificate import certificate_bytes
from exactnorm.constructions.theorem1 import certify_theorem1
from exactnorm.errors import SingularSystemError
from exactnorm.exact.linalg import khatri_rao, khatri_rao_system, random_prime
from exactnorm.exact.padic import (
    PadicUnavailable,
    hadamard_bounds,
    rational_reconstruction,
    solve_khatri_rao,
)
from exactnorm.exact.sampling import layer_rng, sample_matrix
from exactnorm.model.targets import random_target

SHAPES = [(1, 1), (2, 3), (3, 2), (4, 4), (5, 7), (8, 6)]


def _system(seed: int, d_in: int, d_out: int, bound: int):
    rng = layer_rng(seed, d_in, d_out, 99)
    m = d_in * d_out
    V_in = rng.integers(-bound, bound, size=(m, d_in), endpoint=True)
    V_out = rng.integers(-bound, bound, size=(d_out, m), endpoint=True)
    rhs = [int(x) for x in rng.integers(-10**6, 10**6, size=m)]
    return rng, V_in, V_out, rhs


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("bound", [1, 8, 1000])
@pytest.mark.parametrize("jobs", [1, 2])
def test_padic_equals_flint_solve(shape, bound, jobs):
    rng, V_in, V_out, rhs = _system(bound + jobs, *shape, bound)
    K = khatri_rao(fmpz_mat(V_in.T.tolist()), fmpz_mat(V_out.tolist()))
    primes = [random_prime(60, rng), random_prime(60, rng)]
    try:
        expected = K.solve(fmpz_mat([[r] for r in rhs])).entries()
    except ZeroDivisionError:
        with pytest.raises(PadicUnavailable):
            solve_khatri_rao(V_in, V_out, rhs, primes, jobs=jobs)
        return
    assert solve_khatri_rao(V_in, V_out, rhs, primes, jobs=jobs) == expected


def test_small_primes_need_many_steps_and_still_agree():
    rng, V_in, V_out, rhs = _system(5, 3, 4, 8)
    K = khatri_rao(fmpz_mat(V_in.T.tolist()), fmpz_mat(V_out.tolist()))
    expected = K.solve(fmpz_mat([[r] for r in rhs])).entries()
    for bits in (5, 13, 31):
        p = random_prime(bits, rng)
        try:
            got = solve_khatri_rao(V_in, V_out, rhs, [p])
        except PadicUnavailable:  # p divides det K: a real possibility for 5-bit primes
            continue
        assert got == expected


def test_hadamard_bounds_hold():
    for seed in range(5):
        _, V_in, V_out, rhs = _system(seed, 3, 3, 8)
        K = khatri_rao(fmpz_mat(V_in.T.tolist()), fmpz_mat(V_out.tolist()))
        N, D = hadamard_bounds(V_in, V_out, rhs)
        det = int(K.det())
        assert abs(det) <= D
        if det:
            x = K.solve(fmpz_mat([[r] for r in rhs])).entries()
            assert all(abs(int(e.numer())) <= N and int(e.denom()) <= D for e in x)


def test_rational_reconstruction_roundtrip():
    rng = np.random.default_rng(3)
    M = 2**127 - 1
    for _ in range(50):
        num, den = int(rng.integers(-10**9, 10**9)), int(rng.integers(1, 10**9))
        a = num * pow(den, -1, M) % M
        assert rational_reconstruction(a, M, 10**9, 10**9) == fmpq(num, den)


def test_khatri_rao_system_fast_path_equals_generic():
    rng = layer_rng(1, 2)
    for dist in ("int:8", "bits:30", "set:-1,1"):
        V_in, V_out = sample_matrix(rng, 12, 3, dist), sample_matrix(rng, 4, 12, dist)
        assert khatri_rao_system(V_in, V_out) == khatri_rao(V_in.transpose(), V_out)


@pytest.mark.parametrize("widths", [(3, 4, 2), (5, 6, 4, 3)])
def test_solver_and_jobs_give_byte_identical_certificates(widths):
    g = random_target(widths, seed=4)
    docs = {certificate_bytes(api.certificate_document(certify_theorem1(g, seed=1, **kw)))
            for kw in ({"solver": "flint"}, {"solver": "padic"}, {"jobs": 2},
                       {"jobs": 2, "solver": "flint"})}
    assert len(docs) == 1


def test_singular_draw_still_reported_by_padic_path():
    g = random_target((2, 2), seed=0)
    for seed in range(200):
        try:
            certify_theorem1(g, seed=seed, distribution="set:0,1", solver="flint")
        except SingularSystemError as exc:
            with pytest.raises(SingularSystemError) as info:
                certify_theorem1(g, seed=seed, distribution="set:0,1", solver="padic")
            assert (info.value.rank, info.value.size) == (exc.rank, exc.size)
            return
    pytest.fail("no singular draw found")


def test_fast_reader_and_pure_reader_agree_on_unusual_numbers():
    doc = api.certificate_document(certify_theorem1(random_target((2, 2), seed=2), seed=0),
                                   version=1)
    layer = doc["network"]["layers"][1]
    # the same values written as decimals and non-reduced fractions: still valid
    layer["beta"] = [f"{x}.0" if isinstance(x, int) else x for x in layer["beta"]]
    layer["weight"][0][0] = f"{2 * int(layer['weight'][0][0])}/2"
    assert checker_flint.check_certificate(doc) == checker.check_certificate(doc)
    assert checker_flint.check_certificate(doc).ok
    layer["gamma"][0] = "1/0"
    assert checker_flint.check_certificate(doc) == checker.check_certificate(doc)
    assert not checker_flint.check_certificate(doc).ok


def test_columnwise_product_equals_flint_product():
    from flint import fmpz

    from exactnorm.checker_flint.arithmetic import _product

    rng = np.random.default_rng(0)
    X = fmpz_mat(rng.integers(-8, 9, size=(5, 300)).tolist())
    Y = fmpz_mat([[fmpz(int(v)) ** 40 * int(rng.integers(-3, 4)) for v in row]
                  for row in rng.integers(1, 2**30, size=(300, 16))])
    assert _product(X, Y) == X * Y


def test_checker_paths_agree_on_a_mutant_of_a_wide_certificate():
    c = certify_theorem1(random_target((16, 16), seed=1, activations=["identity"]), seed=0)
    doc = api.certificate_document(c, version=1)
    assert checker_flint.check_certificate(doc).ok
    g = doc["network"]["layers"][0]["gamma"]
    g[5] = "1" if g[5] != "1" else "2"
    fast = checker_flint.check_certificate(doc)
    assert not fast.ok and fast == checker.check_certificate(doc)


@pytest.mark.parametrize("modulus", [15, 2, 1, 2**62 + 1, True])
def test_padic_expansion_refuses_non_prime_modulus(modulus):
    from exactnorm.errors import InputError
    from exactnorm.exact.padic import padic_expansion

    with pytest.raises(InputError):
        padic_expansion(np.array([[3, 0], [0, 5]]), np.array([[1, 1]]), [1, 1], modulus, 2)
