"""Symbolic certificates (docs/model.md): every claim is compared with an independent computation.

Paths compared: SymPy DomainMatrix (the code under test) vs SymPy's Berkowitz determinant vs a pure
Python Leibniz expansion; perfect matchings counted with NetworkX; FLINT determinants vs SymPy
determinants; Cramer's rule vs ``solve_exact`` vs the adjugate (Lemma 8); Rouché–Capelli answers
vs SymPy ranks and ``gauss_jordan_solve``; exhaustive counts vs brute-force FLINT determinants and
closed forms.
"""

from __future__ import annotations

import builtins
import copy
import itertools
import json
import math
import os
import subprocess
import sys
from fractions import Fraction

import networkx as nx
import pytest
import sympy
from flint import fmpq_mat, fmpz_mat

from exactnorm.analysis.cramer import cramer_gamma
from exactnorm.analysis.detpoly import (
    check_detpoly,
    detpoly_document,
    expand_determinant,
    load_detpoly,
    save_detpoly,
    sympy_ground_types,
)
from exactnorm.analysis.detsystem import leibniz_expansion, permutation_sign, variable_names
from exactnorm.analysis.realizability import decide_realizable, reachable_target
from exactnorm.analysis.singularity import exhaustive_singularity
from exactnorm.analysis.structural import permutation_from_monomial
from exactnorm.analysis.witnesses import (
    interleaved_sign_formula,
    matching_certificate,
    prove_structured_symbolic,
    structured_frozen,
    structured_witness,
)
from exactnorm.cli import main
from exactnorm.constructions.theorem1 import draw_pair
from exactnorm.errors import (
    InputError,
    InvalidCertificateError,
    LimitExceededError,
    SingularSystemError,
)
from exactnorm.exact.linalg import diag, khatri_rao_system, solve_exact, to_fmpq_mat, vec
from exactnorm.exact.sampling import layer_rng, parse_distribution, sample_matrix
from exactnorm.outputs.tables.symbolic import T5_CASES, table_t5, table_t6

EXPANDABLE = [(1, 1), (1, 2), (2, 1), (1, 3), (3, 1), (1, 4), (4, 1), (2, 2)]


# ------------------------------------------------------------------ independent helpers


def sympy_system(d_in, d_out):
    """K = Xᵀ ⊙ Y with SymPy symbols, written from the definition (not from the module)."""
    m = d_in * d_out
    X = sympy.Matrix(m, d_in, lambda k, a: sympy.Symbol(f"X[{k}][{a}]"))
    Y = sympy.Matrix(d_out, m, lambda b, k: sympy.Symbol(f"Y[{b}][{k}]"))
    K = sympy.Matrix(m, m, lambda r, k: X[k, r // d_out] * Y[r % d_out, k])
    return X, Y, K


def count_perfect_matchings(K):
    """Perfect matchings of the support of K, by recursion over a NetworkX bipartite graph."""
    n = K.shape[0]
    G = nx.Graph()
    G.add_nodes_from(("r", i) for i in range(n))
    G.add_nodes_from(("c", j) for j in range(n))
    G.add_edges_from((("r", i), ("c", j)) for i in range(n) for j in range(n) if K[i, j] != 0)

    def count(row, used):
        if row == n:
            return 1
        return sum(count(row + 1, used | {c}) for _, c in G.edges(("r", row)) if c not in used)

    return count(0, frozenset())


def flint_det_at(point, d_in, d_out):
    m = d_in * d_out
    V_in = fmpz_mat([[point[f"X[{k}][{a}]"] for a in range(d_in)] for k in range(m)])
    V_out = fmpz_mat([[point[f"Y[{b}][{k}]"] for k in range(m)] for b in range(d_out)])
    return int(khatri_rao_system(V_in, V_out).det())


def poly_dict_of(expr, names):
    gens = [sympy.Symbol(n) for n in names]
    return {k: int(v) for k, v in sympy.Poly(expr, *gens).as_dict().items()}


# ------------------------------------------------------------------ expanded determinant


@pytest.mark.parametrize("d_in,d_out", EXPANDABLE)
def test_expansion_counts_matchings_and_matches_other_paths(d_in, d_out):
    m = d_in * d_out
    p = expand_determinant(d_in, d_out)
    X, Y, K = sympy_system(d_in, d_out)
    assert p.term_count == count_perfect_matchings(K) == math.factorial(m)
    assert p.degree == 2 * m and all(sum(e) == 2 * m for e in p.terms)
    assert set(p.terms.values()) <= {1, -1}
    assert p.terms == leibniz_expansion(d_in, d_out)
    berkowitz = sympy.expand(K.det(method="berkowitz"))
    assert poly_dict_of(berkowitz, p.variables) == p.terms
    assert sympy.expand(p.to_sympy() - berkowitz) == 0


def test_d2_has_24_terms_of_degree_8_one_per_matching():
    p = expand_determinant(2, 2)
    assert (p.term_count, p.degree) == (24, 8)
    assert sorted(set(p.terms.values())) == [-1, 1]
    names = p.variables
    perms = set()
    for exps, coeff in p.terms.items():
        mono = []
        for name, e in zip(names, exps):
            for _ in range(e):
                i, j = (int(t) for t in name[2:-1].split("]["))
                mono.append(("x" if name[0] == "X" else "y", i, j))
        perm = permutation_from_monomial(tuple(sorted(mono)), 2)
        perms.add(tuple(perm))
        inversions = sum(perm[i] > perm[j] for i in range(4) for j in range(i + 1, 4))
        assert coeff == (-1) ** inversions
    assert perms == set(itertools.permutations(range(4)))


def test_monomial_zero_one_point_isolates_its_coefficient():
    """The argument behind the matching certificate, checked on all 24 monomials at d = 2."""
    p = expand_determinant(2, 2)
    for exps, coeff in p.terms.items():
        point = {n: int(e > 0) for n, e in zip(p.variables, exps)}
        assert flint_det_at(point, 2, 2) == coeff == p.evaluate(point)


@pytest.mark.parametrize("d_in,d_out", [(3, 3), (2, 3), (1, 5), (5, 1)])
def test_expansion_refused_beyond_d2(d_in, d_out):
    with pytest.raises(LimitExceededError) as info:
        expand_determinant(d_in, d_out)
    assert isinstance(info.value, InputError)
    assert "\n" not in str(info.value) and "matching" in str(info.value)
    with pytest.raises(LimitExceededError):
        leibniz_expansion(d_in, d_out)


def test_bad_dimensions():
    for bad in [(0, 2), (2, -1), (True, 2), (1.5, 2)]:
        with pytest.raises(InputError):
            expand_determinant(*bad)


# ------------------------------------------------------------------ detpoly certificate


@pytest.fixture(scope="module")
def good_doc():
    return detpoly_document(2, 2, seed=3)


def test_detpoly_roundtrip(tmp_path, good_doc):
    path = tmp_path / "dp.json"
    save_detpoly(good_doc, path)
    cert = load_detpoly(path)
    assert cert.poly == expand_determinant(2, 2)
    _, _, K = sympy_system(2, 2)
    assert sympy.expand(cert.sympy_expr() - K.det(method="berkowitz")) == 0
    w = good_doc["witness"]
    assert w["value"] != 0
    assert flint_det_at(w["point"], 2, 2) == w["value"]
    subs = {sympy.Symbol(n): v for n, v in w["point"].items()}
    assert K.subs(subs).det() == w["value"]
    assert check_detpoly(good_doc).term_count == 24


def test_detpoly_witness_for_every_expandable_size():
    for d_in, d_out in EXPANDABLE:
        doc = detpoly_document(d_in, d_out)
        assert check_detpoly(doc).degree == 2 * d_in * d_out
        assert flint_det_at(doc["witness"]["point"], d_in, d_out) == doc["witness"]["value"] != 0


def _tamper_coefficient(doc):
    doc["terms"][5]["coefficient"] *= -1


def _tamper_coefficient_two(doc):
    doc["terms"][0]["coefficient"] = 2


def _tamper_extra_term(doc):
    doc["terms"].append({"coefficient": 1, "monomial": [["X[0][0]", 2], ["Y[0][0]", 1]]})


def _tamper_missing_term(doc):
    doc["terms"].pop()
    doc["term_count"] = 23


def _tamper_code_name(doc):
    doc["terms"][0]["monomial"][0][0] = ("__import__('builtins').setattr("
                                         "__import__('builtins'), 'PWNED', 1)")


def _tamper_code_in_variables(doc):
    doc["variables"][0] = "exec('PWNED = 1')"


def _tamper_index_out_of_range(doc):
    doc["terms"][0]["monomial"][0][0] = "X[9][0]"


def _tamper_witness_value(doc):
    doc["witness"]["value"] += 1


def _tamper_witness_point(doc):
    doc["witness"]["point"]["X[0][0]"] += 1


def _tamper_zero_witness(doc):
    for name in doc["witness"]["point"]:
        doc["witness"]["point"][name] = 0
    doc["witness"]["value"] = 0


def _tamper_degree(doc):
    doc["degree"] = 7


def _tamper_bool_coefficient(doc):
    doc["terms"][0]["coefficient"] = True


def _tamper_string_coefficient(doc):
    doc["terms"][0]["coefficient"] = "1"


def _tamper_duplicate_monomial(doc):
    doc["terms"][1] = copy.deepcopy(doc["terms"][0])


def _tamper_unknown_field(doc):
    doc["code"] = "import os"


def _tamper_claims_d3(doc):
    doc["d_in"] = doc["d_out"] = 3
    doc["m"] = 9


def _tamper_format(doc):
    doc["format"] = "exactnorm.certificate"


TAMPERINGS = {
    "changed coefficient": (_tamper_coefficient, "coefficient of"),
    "coefficient 2": (_tamper_coefficient_two, "coefficient of"),
    "extra term": (_tamper_extra_term, "extra term"),
    "missing term": (_tamper_missing_term, "missing"),
    "code in a variable name": (_tamper_code_name, "unknown variable"),
    "code in the variable list": (_tamper_code_in_variables, "variables differ"),
    "index out of range": (_tamper_index_out_of_range, "unknown variable"),
    "witness value": (_tamper_witness_value, "witness value"),
    "witness point": (_tamper_witness_point, "witness value"),
    "zero witness": (_tamper_zero_witness, "zero of the determinant"),
    "degree claim": (_tamper_degree, "stated degree"),
    "bool coefficient": (_tamper_bool_coefficient, "JSON integer"),
    "string coefficient": (_tamper_string_coefficient, "JSON integer"),
    "duplicate monomial": (_tamper_duplicate_monomial, "repeats an earlier monomial"),
    "unknown field": (_tamper_unknown_field, "unknown field"),
    "claims d = 3": (_tamper_claims_d3, "expansion limit"),
    "format": (_tamper_format, "format"),
}


@pytest.fixture
def no_evaluation(monkeypatch):
    """Make every evaluating or parsing entry point explode while the code under test runs."""

    def boom(*args, **kwargs):
        raise AssertionError("an expression evaluator was called")

    import sympy.core.sympify
    import sympy.parsing.sympy_parser

    monkeypatch.setattr(builtins, "eval", boom)
    monkeypatch.setattr(builtins, "exec", boom)
    monkeypatch.setattr(sympy, "sympify", boom)
    monkeypatch.setattr(sympy, "parse_expr", boom)
    monkeypatch.setattr(sympy.parsing.sympy_parser, "parse_expr", boom)
    monkeypatch.setattr(sympy.parsing.sympy_parser, "eval_expr", boom)
    yield


@pytest.mark.parametrize("name", sorted(TAMPERINGS))
def test_tampered_detpoly_is_rejected_without_evaluation(name, tmp_path, good_doc, no_evaluation):
    tamper, expected = TAMPERINGS[name]
    doc = copy.deepcopy(good_doc)
    tamper(doc)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InvalidCertificateError) as info:
        load_detpoly(path)
    message = str(info.value)
    assert expected in message and "\n" not in message and len(message) < 300
    with pytest.raises(InvalidCertificateError):
        check_detpoly(doc)
    assert not hasattr(builtins, "PWNED")


def test_good_detpoly_loads_without_any_evaluator(tmp_path, good_doc, no_evaluation):
    path = tmp_path / "dp.json"
    path.write_text(json.dumps(good_doc))
    assert load_detpoly(path).poly.term_count == 24


def test_detpoly_rejects_floats_and_garbage(tmp_path, good_doc):
    text = json.dumps(good_doc).replace('"coefficient": 1,', '"coefficient": 1.0,', 1)
    (tmp_path / "f.json").write_text(text)
    (tmp_path / "g.json").write_text("{not json")
    for f in ("f.json", "g.json", "missing.json"):
        with pytest.raises(InvalidCertificateError):
            load_detpoly(tmp_path / f)


# ------------------------------------------------------------------ matching certificate


@pytest.mark.parametrize("d_in,d_out", [(1, 1), (2, 2), (2, 3), (3, 3), (4, 4)])
def test_matching_certificate(d_in, d_out):
    c = matching_certificate(d_in, d_out, seed=5)
    m = d_in * d_out
    assert c.verified and c.coefficient == 1 and c.degree == 2 * m
    assert len(c.monomial) == 2 * m and len(set(c.monomial)) == 2 * m
    # the witness draw recomputed here, its determinant taken by SymPy (independent of FLINT)
    dist = parse_distribution(c.distribution)
    rng = layer_rng(5, d_in, d_out, c.attempts - 1)
    X = sample_matrix(rng, m, d_in, dist)
    Y = sample_matrix(rng, d_out, m, dist)
    K = sympy.Matrix(khatri_rao_system(X, Y).tolist())
    if m <= 9:
        assert K.det(method="bareiss") == c.det_value != 0
    if m <= 4:
        p = expand_determinant(d_in, d_out)
        names = p.variables
        exps = tuple(int(n in c.monomial) for n in names)
        assert p.terms[exps] == c.coefficient


def test_matching_certificate_limit():
    with pytest.raises(LimitExceededError):
        matching_certificate(40, 40)


# ------------------------------------------------------------------ Theorem 5 witness


def test_permutation_sign_against_flint_det():
    for perm in itertools.permutations(range(5)):
        P = fmpz_mat(5, 5)
        for n, s in enumerate(perm):
            P[s, n] = 1
        assert permutation_sign(perm) == int(P.det())


@pytest.mark.parametrize("d_in", range(1, 7))
@pytest.mark.parametrize("d_out", range(1, 7))
def test_interleaved_sign_formula_matches_cycles(d_in, d_out):
    _, _, sigma = structured_frozen([[1] * d_out for _ in range(d_out)], d_in, "interleaved")
    assert permutation_sign(sigma) == interleaved_sign_formula(d_in, d_out)


@pytest.mark.parametrize("d", [1, 2, 3, 4, 5, 8, 16])
@pytest.mark.parametrize("layout", ["blocked", "interleaved"])
def test_structured_witness_exact_up_to_16(d, layout):
    w = structured_witness(d, d, layout=layout, seed=d)
    assert w.verified and w.kron_identity and w.det_B != 0
    assert w.det_K == w.sign * w.det_B**d
    if layout == "blocked":
        assert w.sign == 1


def test_structured_witness_nonsquare_and_given_B():
    w = structured_witness(3, 2, layout="interleaved", B=[[2, 1], [1, 1]])
    assert (w.sign, w.det_B, w.det_K) == (-1, 1, -1) and w.verified
    # independent: SymPy determinant of the frozen pair's Khatri–Rao system
    V_in, V_out, _ = structured_frozen([[2, 1], [1, 1]], 3, "interleaved")
    K = khatri_rao_system(fmpz_mat(V_in), fmpz_mat(V_out))
    assert sympy.Matrix(K.tolist()).det() == -1
    singular = structured_witness(2, 2, B=[[1, 2], [2, 4]])
    assert singular.det_B == 0 and singular.det_K == 0 and singular.verified


@pytest.mark.parametrize("d_in,d_out", list(itertools.product(range(1, 4), repeat=2)))
@pytest.mark.parametrize("layout", ["blocked", "interleaved"])
def test_structured_symbolic_proof(d_in, d_out, layout):
    proof = prove_structured_symbolic(d_in, d_out, layout)
    assert proof.proved
    assert proof.sign == (1 if layout == "blocked" else interleaved_sign_formula(d_in, d_out))


def test_structured_symbolic_limit():
    with pytest.raises(LimitExceededError):
        prove_structured_symbolic(4, 2)


# ------------------------------------------------------------------ Schwartz–Zippel


def test_t5_cases_probability_below_bound():
    from exactnorm.outputs.tables.symbolic import _SETS

    for d_in, d_out, name in T5_CASES:
        c = exhaustive_singularity(d_in, d_out, _SETS[name])
        values = _SETS[name]
        assert c.assignments == len(values) ** (d_in * d_out * (d_in + d_out))
        bound = min(Fraction(2 * d_in * d_out, len(values)), Fraction(1))
        assert c.bound == bound
        assert c.probability <= bound, (d_in, d_out, name)


@pytest.mark.parametrize("d_in,d_out,values", [
    (1, 2, (-1, 0, 1)), (2, 1, (-1, 0, 1)), (2, 1, (0, 1)), (1, 3, (-1, 1)), (2, 2, (0, 1)),
])
def test_exhaustive_count_matches_bruteforce_flint(d_in, d_out, values):
    m = d_in * d_out
    nx_, ny = m * d_in, d_out * m
    singular = 0
    for v in itertools.product(values, repeat=nx_ + ny):
        X = fmpz_mat(m, d_in, list(v[:nx_]))
        Y = fmpz_mat(d_out, m, list(v[nx_:]))
        singular += khatri_rao_system(X, Y).det() == 0
    assert exhaustive_singularity(d_in, d_out, values).singular == singular


def test_exhaustive_closed_forms():
    for values in [(0, 1), (-1, 1), (-1, 0, 1), tuple(range(-4, 5)), (2, 3, 7)]:
        s = len(values)
        nonzero = s - (0 in values)
        expected = 1 - Fraction(nonzero, s) ** 2
        assert exhaustive_singularity(1, 1, values).probability == expected
    # d = 2, S = {-1, 1}: the four columns x_k ⊗ y_k must be four distinct directions (±)
    assert exhaustive_singularity(2, 2, (-1, 1)).probability == 1 - Fraction(24, 4**4)


def test_exhaustive_limits():
    with pytest.raises(LimitExceededError):
        exhaustive_singularity(2, 2, range(-2, 3))
    with pytest.raises(InputError):
        exhaustive_singularity(1, 1, (1, 1))


# ------------------------------------------------------------------ Cramer's rule (Lemma 8)


@pytest.mark.parametrize("d_in,d_out", [(1, 1), (1, 2), (2, 1), (2, 2), (2, 3), (3, 3)])
def test_cramer_gamma_equals_solve_exact(d_in, d_out):
    m = d_in * d_out
    V_in, V_out = draw_pair(13, 1, 0, d_in, d_out, m, parse_distribution("nonzero:4"))
    sol = cramer_gamma(V_in, V_out)
    K = khatri_rao_system(V_in, V_out)
    assert sol.det_K == int(K.det()) != 0
    for trial in range(3):
        W = sample_matrix(layer_rng(11, 7, trial), d_out, d_in, "rational:9")
        numeric = solve_exact(K, vec(W, "F"))
        assert sol.evaluate(W.tolist()) == [Fraction(int(x.p), int(x.q))
                                           for x in numeric.entries()]
    # adjugate path: γ = adj(K) vec W / det K, with the same column-major symbols
    Ks = sympy.Matrix(K.tolist())
    w = sympy.Matrix(list(sol.symbols))
    via_adj = Ks.adjugate() * w / Ks.det()
    for k in range(m):
        assert sympy.expand(via_adj[k] - sol.gamma[k]) == 0
        assert sympy.Poly(sol.numerators[k], *sol.symbols).total_degree() <= 1  # linear in W


def test_cramer_singular_and_limits():
    V_in = fmpz_mat([[1, 0], [1, 0], [0, 1], [0, 1]])
    V_out = fmpz_mat([[1, 1, 1, 1], [1, 1, 1, 1]])
    with pytest.raises(SingularSystemError):
        cramer_gamma(V_in, V_out)
    V_in, V_out = draw_pair(0, 1, 0, 4, 4, 16, parse_distribution("int:4"))
    with pytest.raises(LimitExceededError):
        cramer_gamma(V_in, V_out)


# ------------------------------------------------------------------ realizability (Theorem 7)


def _check_independently(V_in, V_out, W, r):
    K = sympy.Matrix(khatri_rao_system(V_in, V_out).tolist())
    w = sympy.Matrix([x for x in vec(to_fmpq_mat(W), "F").entries()]).applyfunc(
        lambda x: sympy.Rational(int(x.p), int(x.q)))
    rank_k, rank_aug = K.rank(), K.row_join(w).rank()
    assert (r.rank_K, r.rank_augmented) == (rank_k, rank_aug)
    try:
        K.gauss_jordan_solve(w)
        solvable = True
    except ValueError:
        solvable = False
    assert solvable == r.reachable
    if r.reachable:
        g = to_fmpq_mat([[x] for x in r.gamma])
        assert to_fmpq_mat(V_out) * diag(g) * to_fmpq_mat(V_in) == to_fmpq_mat(W)
    else:
        y = sympy.Matrix(r.separator)
        assert (y.T * K).is_zero_matrix and (y.T * w)[0] != 0


@pytest.mark.parametrize("d_in,d_out", [(2, 2), (2, 3), (3, 2), (3, 3)])
def test_realizability_agrees_with_independent_check(d_in, d_out):
    n = d_in * d_out
    dist = parse_distribution("int:8")
    for m in range(1, n + 2):
        V_in, V_out = draw_pair(2, 1, 0, d_in, d_out, m, dist)
        gamma = [int(x) for x in sample_matrix(layer_rng(2, 3, m), m, 1, "int:8").entries()]
        W_reach = reachable_target(V_in, V_out, gamma)
        r = decide_realizable(V_in, V_out, W_reach)
        assert r.reachable and r.dimension == min(m, n)
        _check_independently(V_in, V_out, W_reach, r)
        W_rand = sample_matrix(layer_rng(2, 4, m), d_out, d_in, "int:8")
        r = decide_realizable(V_in, V_out, W_rand)
        assert r.reachable == (m >= n)  # generically not reachable below width d_in·d_out
        assert r.codimension == max(0, n - m)
        _check_independently(V_in, V_out, W_rand, r)


def test_realizability_rank_deficient_pair():
    V_in = fmpq_mat([[1, 2], [2, 4], [1, 2]])   # every input row along (1, 2)
    V_out = fmpq_mat([[1, 0, 1], [0, 1, 1]])
    W_ok = [[1, 2], [3, 6]]                      # rows ∝ (1, 2): reachable
    W_bad = [[1, 0], [0, 0]]
    r = decide_realizable(V_in, V_out, W_ok)
    assert r.reachable and r.dimension == 2
    _check_independently(V_in, V_out, W_ok, r)
    r = decide_realizable(V_in, V_out, W_bad)
    assert not r.reachable
    _check_independently(V_in, V_out, W_bad, r)


# ------------------------------------------------------------------ ground types (docs/model.md)

GROUND_SCRIPT = r"""
import json
from fractions import Fraction
from sympy.external.gmpy import GROUND_TYPES
from exactnorm.constructions.theorem1 import draw_pair
from exactnorm.exact.sampling import parse_distribution
from exactnorm.analysis import cramer, detpoly as s, detsystem, witnesses
p = s.expand_determinant(2, 2)
doc = s.detpoly_document(2, 2, seed=1)
s.check_detpoly(doc)
proofs = [witnesses.prove_structured_symbolic(a, b, l).proved for a in (1, 2, 3) for b in (1, 2, 3)
          for l in ("blocked", "interleaved")]
V_in, V_out = draw_pair(11, 1, 0, 2, 2, 4, parse_distribution("int:4"))
sol = cramer.cramer_gamma(V_in, V_out)
gamma = [str(g) for g in sol.evaluate([[1, Fraction(1, 2)], [-3, 2]])]
print(json.dumps({"ground": GROUND_TYPES, "reported": s.sympy_ground_types(),
                  "terms": sorted([list(k), v] for k, v in p.terms.items()),
                  "leibniz": p.terms == detsystem.leibniz_expansion(2, 2),
                  "witness": doc["witness"]["value"], "proofs": all(proofs), "gamma": gamma,
                  "det": str(sol.det_K)}))
"""


def test_key_checks_under_both_ground_types():
    results = {}
    for ground in ("python", "flint"):
        env = dict(os.environ, SYMPY_GROUND_TYPES=ground)
        out = subprocess.run([sys.executable, "-c", GROUND_SCRIPT], env=env, check=True,
                             capture_output=True, text=True, timeout=120)
        res = json.loads(out.stdout)
        assert res["ground"] == res["reported"] == ground
        assert res["leibniz"] and res["proofs"] and len(res["terms"]) == 24
        results[ground] = {k: v for k, v in res.items() if k not in ("ground", "reported")}
    assert results["python"] == results["flint"]


# ------------------------------------------------------------------ CLI


def run(argv, capsys):
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_detpoly_write_and_check(tmp_path, capsys):
    path = str(tmp_path / "dp.json")
    code, out, _ = run(["detpoly", "--d-in", "2", "--d-out", "2", "--out", path], capsys)
    assert code == 0 and "24" in out and "wrote" in out
    assert load_detpoly(path).poly.term_count == 24
    code, out, _ = run(["detpoly", "--check", path], capsys)
    assert code == 0 and out.startswith("VALID")
    doc = json.loads((tmp_path / "dp.json").read_text())
    _tamper_coefficient(doc)
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    code, _, err = run(["detpoly", "--check", str(tmp_path / "bad.json")], capsys)
    assert code == 1 and err.count("\n") == 1 and "coefficient" in err


def test_cli_detpoly_refuses_d3_in_one_line(capsys):
    code, out, err = run(["detpoly", "--d-in", "3", "--d-out", "3"], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and "362,880" in err


def test_cli_detpoly_matching(capsys):
    code, out, _ = run(["detpoly", "--d-in", "8", "--d-out", "8", "--matching"], capsys)
    assert code == 0 and "verified" in out and "128" in out
    code, out, _ = run(["detpoly", "--d-in", "3", "--d-out", "2", "--matching"], capsys)
    assert code == 0 and "proved" in out


def test_cli_detpoly_usage_errors(capsys):
    assert run(["detpoly"], capsys)[0] == 2
    assert run(["detpoly", "--d-in", "0", "--d-out", "2"], capsys)[0] == 2


def test_ground_type_selection_conflict():
    from exactnorm.commands.detpoly import select_ground_types

    other = "python" if sympy_ground_types() != "python" else "flint"
    with pytest.raises(InputError):
        select_ground_types(other)
    select_ground_types(sympy_ground_types())


def test_cli_realizable(tmp_path, capsys):
    code, out, _ = run(["realizable", "--d-in", "2", "--d-out", "3", "--width", "4"], capsys)
    # regression: "not reachable" exited 0 like "reachable"; scripts read the exit code
    assert code == 1 and out.startswith("NOT REACHABLE") and "dimension 4 of 6" in out
    code, out, _ = run(["realizable", "--d-in", "2", "--d-out", "3", "--width", "4",
                        "--w", "reachable"], capsys)
    assert code == 0 and out.startswith("REACHABLE")
    # a rank-one target (rows ∝ (1, 1)) at width 6 = d_in·d_out is reachable
    target = {"domain": {"lower": [-1, -1], "upper": [1, 1]},
              "target": {"layers": [{"weight": [[1, 1], [2, 2], [3, 3]], "bias": [0, 0, 0],
                                     "activation": "identity"}]}}
    path = tmp_path / "t.json"
    path.write_text(json.dumps(target))
    code, out, _ = run(["realizable", "--target", str(path), "--width", "6"], capsys)
    assert code == 0 and out.startswith("REACHABLE")
    # the same file below width: rank-one W = (1, 2, 3)ᵀ(1, 1) decided exactly either way
    code, out, _ = run(["realizable", "--target", str(path), "--width", "1"], capsys)
    assert (code, out.split(":")[0]) in ((0, "REACHABLE"), (1, "NOT REACHABLE"))
    code, _, err = run(["realizable", "--target", str(path), "--width", "2", "--d-in", "3"],
                       capsys)
    assert code == 2 and err.count("\n") == 1
    assert run(["realizable", "--width", "2"], capsys)[0] == 2


# ------------------------------------------------------------------ tables


def test_tables_t5_t6():
    t5 = table_t5()
    assert t5.key == "T5" and all(row[-1] == "yes" for row in t5.rows)
    assert len(t5.rows) == len(T5_CASES)
    t6 = table_t6()
    assert [t.key for t in t6] == ["T6", "T6"] and t6[0].slug != t6[1].slug
    witness_col = t6[0].columns.index("Theorem 5 identity")
    assert all(row[witness_col] == "verified" for row in t6[0].rows)
    assert all("FAILED" not in str(x) and "DIFFERS" not in str(x)
               for row in t6[0].rows for x in row)
    assert all(row[-1] == "yes" for row in t6[1].rows)
    assert all(row[3] == row[2] for row in t6[1].rows)   # rank K = m below d_in·d_out
    assert table_t5().csv() == t5.csv() and table_t6()[1].csv() == t6[1].csv()


def test_variable_names_are_canonical():
    names = variable_names(2, 2)
    assert len(names) == len(set(names)) == 16
    assert names[0] == "X[0][0]" and names[-1] == "Y[1][3]"


def test_readme_documents_the_realizable_exit_codes():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    for page in (root / "README.md", root / "docs" / "user-guide.md"):
        # the one table of exit codes: a row per code, ``| `code` | meaning |``
        rows = {line.split("|")[1].strip(): line for line in page.read_text().splitlines()
                if line.startswith("| `")}
        assert "`realizable`: reachable" in rows["`0`"], page
        assert "`realizable`: not reachable" in rows["`1`"], page
        assert "input error" in rows["`2`"], page
