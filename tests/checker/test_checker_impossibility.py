"""The impossibility checker (docs/certificate-format.md §9) on small networks: every witness kind
found by exactnorm capacity is VALID under both arithmetics, every single changed entry is
refused, the witnesses are cross-checked with SymPy, and hostile documents give verdicts, never
exceptions."""

from __future__ import annotations

import copy
import random
from fractions import Fraction

import pytest
import sympy
from flint import fmpq

from exactnorm.analysis.capacity import decide
from exactnorm.analysis.capacity_witness import number_list, preactivations
from exactnorm.certificate import certificate_document, read_frozen, target_document
from exactnorm.checker.modular import PureLinear, is_prime
from exactnorm.checker_flint.linear import FlintLinear
from exactnorm.constructions.burkholz import certify_burkholz
from exactnorm.errors import SingularSystemError
from exactnorm.model.batchnorm import retuned
from exactnorm.model.box import Box
from exactnorm.model.network import TargetNetwork
from exactnorm.model.targets import random_target
from exactnorm.outputs.tables.capacity import below_threshold_document, t11_target
from tests.helpers import both, given, leaves, mutated, refuse_every_mutation


def _ints(rng: random.Random, rows: int, cols: int, zero: bool = False) -> list[list[int]]:
    return [[rng.choice([-1, 1]) * rng.randint(0 if zero else 1, 9) for _ in range(cols)]
            for _ in range(rows)]


def _affine(W: list[list[int]], b: list[int], lo: int = 0, hi: int = 2) -> TargetNetwork:
    d = len(W[0])
    return TargetNetwork.from_lists([W], [b], ["identity"], lower=[lo] * d, upper=[hi] * d)


def case_rank() -> tuple:
    rng = random.Random(1)
    net = given([_ints(rng, 4, 3), _ints(rng, 3, 4)], ["relu", "identity"])
    return net, _affine(_ints(rng, 3, 3), [1, -2, 3])


def case_fredholm_tuned() -> tuple:
    rng = random.Random(2)
    V2 = _ints(rng, 2, 5)
    V2[0] = [0] * 5  # output 0 cannot move: its 1/γ_out vanishes on every solution
    net = given([_ints(rng, 5, 2), V2], ["relu", "identity"])
    return net, _affine([[2, 3], [1, -1]], [0, 1])


def case_threshold() -> tuple:
    rng = random.Random(3)
    net = given([_ints(rng, 3, 2), _ints(rng, 2, 3)], ["relu", "identity"])
    return net, _affine([[2, 3], [5, -1]], [1, 0])


def case_kink() -> tuple:
    net = given([[[1, 0], [0, 1], [1, 1]], [[1, 2, 3]]], ["relu", "identity"])
    g = TargetNetwork.from_lists([[[1, 2], [2, -1]], [[1, 1]]],
                                 [[Fraction(-3, 2), Fraction(1, 2)], [0]],
                                 ["relu", "identity"], lower=[0, 0], upper=[1, 1])
    return net, g


def case_aligned() -> tuple:
    V = [[[1, 2], [3, -1], [2, 2]], [[1, 0, 2], [-1, 1, 1], [2, 1, -1]], [[1, 1, 1]]]
    net = given(V, ["relu", "relu", "identity"])
    W2 = [[2, 0, 4], [-1, 1, 1], [2, 2, -1]]  # row 2 is no multiple of V_2's row 2
    g = TargetNetwork.from_lists([[[2, 4], [3, -1], [1, 1]], W2, [[1, 2, 3]]],
                                 [[1, 2, 3], [1, 1, 1], [0]], ["relu", "relu", "identity"],
                                 lower=[0, 0], upper=[1, 1])
    return net, g


CASES = {"rank": (case_rank, "tuned"), "fredholm-tuned": (case_fredholm_tuned, "tuned"),
         "fredholm-fixed": (case_threshold, "fixed"), "kink": (case_kink, "tuned"),
         "aligned": (case_aligned, "tuned")}
KINDS = {"rank": ("rank", "every"), "fredholm-tuned": ("fredholm", "every"),
         "fredholm-fixed": ("fredholm", "fixed-output-scale"), "kink": ("kink", "every"),
         "aligned": ("aligned", "aligned")}


@pytest.fixture(scope="module", params=sorted(CASES))
def impossible(request):
    make, scale = CASES[request.param]
    net, g = make()
    d = decide(net, g, output_scale=scale)
    return request.param, net, g, d


def test_each_witness_kind_is_found_and_valid_in_both_arithmetics(impossible):
    name, _, _, d = impossible
    kind, cls = KINDS[name]
    assert (d.verdict, d.witness, d.cls) == ("UNREACHABLE", kind, cls), d.reason
    v = both(d.document)
    assert v.ok and v.facts["claim"] == "UNREACHABLE" and v.facts["class"] == cls, v.message
    assert v.facts["witness"] == kind


def test_every_changed_witness_entry_is_refused(impossible):
    _, _, _, d = impossible
    assert refuse_every_mutation(d.document) >= 4


def test_the_same_pair_is_reachable_at_the_threshold_with_the_output_scale_tuned():
    """c0 = c2 = 2, c1 = 3 = c2(c0 − 1) + 1: reachable only because γ_out is tuned; with it held
    at 1 the same target is impossible (the fixed-scale Fredholm witness above)."""
    net, g = case_threshold()
    d = decide(net, g)
    assert d.verdict == "REACHABLE" and both(d.document).ok
    f = read_frozen(d.document)
    assert any(x != 1 for x in f.layers[1].gamma)  # the output scale was needed
    rng = random.Random(0)
    for _ in range(5):
        x = [fmpq(rng.randint(0, 8), 4) for _ in range(2)]
        assert f.evaluate(x) == g.evaluate(x)


def _A(doc: dict) -> tuple[sympy.Matrix, list[int]]:
    """[K_I | −B_I] written from the document alone with SymPy (§9.1), free rows only."""
    V1 = sympy.Matrix([[sympy.Rational(str(x)) for x in row]
                       for row in _plain(doc["network"]["layers"][0]["weight"])])
    V2 = sympy.Matrix([[sympy.Rational(str(x)) for x in row]
                       for row in _plain(doc["network"]["layers"][1]["weight"])])
    W = sympy.Matrix([[sympy.Rational(str(x)) for x in row]
                      for row in _plain(doc["target"]["layers"][0]["weight"])])
    w = doc["witness"]
    I, c0, c1 = w["outputs"], V1.shape[1], V1.shape[0]
    rows = []
    for a, i in enumerate(I):
        for j in range(c0):
            rows.append([V2[i, k] * V1[k, j] for k in range(c1)]
                        + [-W[i, j] if b == a else 0 for b in range(len(I))])
    return sympy.Matrix(rows), I


def _plain(M: object) -> list[list[object]]:
    if isinstance(M, dict):
        return [[Fraction(int(x), int(M["den"])) for x in row] for row in M["num"]]
    return M  # type: ignore[return-value]


def test_rank_witness_agrees_with_sympy():
    net, g = case_rank()
    doc = decide(net, g).document
    A, _ = _A(doc)
    assert A.rank() == A.shape[1]  # full column rank over Q, independently
    w = doc["witness"]
    det = A.extract(w["rows"], list(range(A.shape[1]))).det()
    p = w["prime"]
    assert sympy.Rational(det).p * pow(sympy.Rational(det).q, -1, p) % p == w["determinant"]


def test_fredholm_witness_agrees_with_sympy():
    net, g = case_fredholm_tuned()
    doc = decide(net, g).document
    A, I = _A(doc)
    y = sympy.Matrix([[sympy.Rational(int(n), int(doc["witness"]["y"]["den"]))
                       for n in doc["witness"]["y"]["num"]]])
    product = y * A
    star = doc["witness"]["output"]
    c1 = A.shape[1] - len(I)
    assert list(product) == [0] * c1 + [-1 if b == star else 0 for b in range(len(I))]


def test_a_reachable_target_gets_no_impossibility():
    """A rank witness moved onto a target the network does reach, its bookkeeping (the values at
    the point) made consistent, is refused by the mathematics: every maximal minor of [K | −B]
    vanishes there. The checker does not trust the writer."""
    net, g = case_rank()
    doc = decide(net, g).document
    f = retuned(net, [[1, 2, -1, 3], [1, 1, 2]], [[5, 5, 5, 5], [0, 0, 0]],
                Box.per_feature(g.lower, g.upper))
    assert decide(net, f).verdict == "REACHABLE"
    forged = copy.deepcopy(doc)
    forged["target"] = target_document(f)["target"]
    x = [fmpq(int(n), int(doc["witness"]["point"]["den"])) for n in doc["witness"]["point"]["num"]]
    forged["witness"]["values"] = [number_list(z) for z in preactivations(f, x)]
    v = both(forged)
    assert (v.ok, v.rule) == (False, "witness") and "determinant" in v.message, v.message


def test_undecided_names_the_class():
    net = given([[[1, 2], [2, 1]], [[1, 1], [1, -1]], [[1, 1]]], ["relu", "relu", "identity"])
    d = decide(net, _affine([[1, 2]], [0]))
    assert d.verdict == "UNDECIDED" and d.document is None and "multilinear" in d.cls


# ------------------------------------------------------------------ the kernel's arithmetic


def test_modular_determinants_agree_across_arithmetics():
    rng = random.Random(5)
    p = 2**61 - 1
    for n in (1, 2, 7, 20):
        M = [[rng.randrange(p) for _ in range(n)] for _ in range(n)]
        M[-1] = list(M[0]) if n > 3 else M[-1]  # some singular ones
        expected = int(sympy.Matrix(M).det()) % p
        assert PureLinear().det_mod(M, p) == FlintLinear().det_mod(M, p) == expected
    for n, p in ((64, 3), (64, 2**61 - 1), (129, 2**62 - 57)):  # packed rows: slots of all sizes
        M = [[rng.randrange(p) for _ in range(n)] for _ in range(n)]
        M[n // 2] = [(3 * a + 5 * b) % p for a, b in zip(M[0], M[1])]
        assert PureLinear().det_mod(M, p) == FlintLinear().det_mod(M, p) == 0
        M[n // 2][0] = (M[n // 2][0] + 1) % p
        assert PureLinear().det_mod(M, p) == FlintLinear().det_mod(M, p) != 0 or p == 3


def test_primality_is_deterministic_and_refuses_composites():
    assert [n for n in range(60) if is_prime(n)] == list(sympy.primerange(0, 60))
    assert is_prime(2**61 - 1) and not is_prime(2**61 + 1) and not is_prime(3215031751)
    for p in (2**62 - 57, 2**61 - 1):
        assert is_prime(p) == sympy.isprime(p)


# ------------------------------------------------------------------ hostile documents


BAD = [None, -1, 0, 2**70, "x", "1/0", [], {}, [[1]], {"den": 0, "num": [1]}, True]


def test_bad_documents_give_verdicts_never_exceptions(impossible):
    """Every node of a valid document replaced by each bad value: a refusal (or, rarely, a valid
    verdict for a harmless change), the same from both arithmetics, never an exception."""
    _, _, _, d = impossible
    doc = d.document
    paths = [p for p, _ in leaves({"witness": doc["witness"], "network": doc["network"],
                                   "domain": doc["domain"]})]
    rng = random.Random(7)
    for path in rng.sample(paths, min(len(paths), 25)):
        for bad in BAD:
            out = copy.deepcopy(doc)
            node = out
            for k in path[:-1]:
                node = node[k]
            node[path[-1]] = bad
            both(out)


def test_structural_refusals_name_their_rule():
    net, g = case_rank()
    doc = decide(net, g).document
    cases = {
        "format": lambda x: x.update(extra=1),
        "provenance": lambda x: x["network"]["layers"][0].pop("source"),
        "shape": lambda x: x["network"]["layers"].pop(),
    }
    for rule, change in cases.items():
        bad = copy.deepcopy(doc)
        change(bad)
        v = both(bad)
        assert (v.ok, v.rule) == (False, rule), (rule, v.message)
    bad = copy.deepcopy(doc)
    bad["network"]["layers"][0]["gamma"] = [1, 1, 1, 1]
    assert both(bad).rule == "format"
    bad = copy.deepcopy(doc)
    bad["witness"]["prime"] = 3215031751  # a strong pseudoprime to bases 2, 3, 5, 7
    v = both(bad)
    assert (v.ok, v.rule) == (False, "witness") and "prime" in v.message
    v = both(doc, max_work=100)
    assert (v.ok, v.rule) == (False, "limit"), v.message


def test_a_huge_draw_record_is_refused_before_anything_is_allocated():
    g = t11_target(3)
    doc = below_threshold_document(g, 6)
    assert both(doc).ok
    bad = copy.deepcopy(doc)
    bad["network"]["layers"][0]["weight"]["random"]["shape"] = [10**6, 10**6]
    v = both(bad)
    assert (v.ok, v.rule) == (False, "provenance") and "above the limit" in v.message
    bad = copy.deepcopy(doc)
    bad["network"]["layers"][1]["weight"]["random"]["key"] = \
        bad["network"]["layers"][0]["weight"]["random"]["key"]
    assert both(bad).rule == "provenance"


# ------------------------------------------------------------------ burkholz at the threshold


@pytest.mark.parametrize("n", [2, 3, 5])
def test_burkholz_reaches_the_threshold_and_one_unit_less_is_impossible(n):
    g = random_target((n, n), seed=n, activations=["identity"])
    c = certify_burkholz(g, seed=1)
    assert c.network.widths[0] == n * n - n + 1
    assert both(certificate_document(c)).ok
    rng = random.Random(n)
    for _ in range(3):
        x = [fmpq(rng.randint(-8, 8), 8) for _ in range(n)]
        assert c.network.evaluate(x) == g.evaluate(x)
    doc = below_threshold_document(t11_target(n) if n >= 3 else g, n * n - n)
    if n >= 3:
        v = both(doc)
        assert v.ok and v.facts["class"] == "every"
        assert refuse_every_mutation(doc) > 5


def test_burkholz_draws_from_the_keys_of_its_positions_and_is_never_redrawn():
    """Version 3 binds every key to its position; a burkholz pair (m < c0·c2) cannot prove a
    redraw, so a failed draw is an error naming its rank, and another key is refused."""
    g = random_target((3, 4, 2), seed=1)
    doc = certificate_document(certify_burkholz(g, seed=2))
    keys = [L["weight"]["random"]["key"] for L in doc["network"]["layers"]]
    assert doc["version"] == 3 and keys == [[1, 1, 0, 0], [1, 2, 0, 0], [2, 1, 0, 0],
                                            [2, 2, 0, 0]]
    assert both(doc).ok
    bad = copy.deepcopy(doc)
    bad["network"]["layers"][0]["weight"]["random"]["key"] = [1, 0, 0, 0]  # the old layout
    assert both(bad).rule == "provenance"
    with pytest.raises(SingularSystemError, match="never redrawn") as info:
        certify_burkholz(g, distribution="set:1", retry=5)  # K singular at every attempt
    assert info.value.rank is not None


def test_mutation_helper_changes_what_it_says():
    doc = below_threshold_document(t11_target(3), 6)
    path = next(p for p, _ in leaves(doc["witness"]) if p[0] == "determinant")
    assert mutated(doc, path)["witness"]["determinant"] == doc["witness"]["determinant"] + 1


# ------------------------------------------------------------------ pinned coordinates, classes


def _holds(doc: dict, g: TargetNetwork, seed: int = 0) -> None:
    """The certified network equals the target exactly at seeded box points (independent of the
    checker)."""
    f = read_frozen(doc)
    rng = random.Random(seed)
    for _ in range(6):
        x = [lo + (hi - lo) * fmpq(rng.randint(0, 16), 16) for lo, hi in zip(g.lower, g.upper)]
        assert f.evaluate(x) == g.evaluate(x)


def test_pinned_coordinates_are_constants_on_both_sides():
    """A box with a pinned coordinate (lower = upper): its column of W is not a constraint, it
    folds into the bias; witnesses never use its rows."""
    rng = random.Random(21)
    net = given([_ints(rng, 7, 3), _ints(rng, 2, 7)], ["relu", "identity"])
    # 2 free coordinates, 2 outputs: the threshold is 2·(2 − 1) + 1 = 3 ≤ 7 → reachable
    g = TargetNetwork.from_lists([[[2, 3, 5], [1, -1, 7]]], [[1, 0]], ["identity"],
                                 lower=[0, 0, 2], upper=[1, 1, 2])
    d = decide(net, g)
    assert d.verdict == "REACHABLE" and both(d.document).ok
    _holds(d.document, g)
    # the same network with 4 free coordinates and 2 outputs: threshold 7 → reachable too, and
    # one hidden unit fewer (6) is impossible; its witness rows avoid the pinned coordinate
    small = given([_ints(rng, 6, 5), _ints(rng, 2, 6)], ["relu", "identity"])
    g5 = TargetNetwork.from_lists([_ints(rng, 2, 5)], [[0, 1]], ["identity"],
                                  lower=[0, 0, 0, 0, 3], upper=[1, 1, 1, 1, 3])
    d = decide(small, g5)
    assert (d.verdict, d.witness) == ("UNREACHABLE", "rank"), d.reason
    assert all(r % 5 != 4 for r in d.document["witness"]["rows"])
    assert both(d.document).ok
    bad = copy.deepcopy(d.document)
    bad["witness"]["rows"][-1] = 9  # the row of output 1 at the pinned coordinate 4
    v = both(bad)
    assert not v.ok and ("pinned" in v.message or "increasing" in v.message), v.message


def test_output_scale_held_at_one_reaches_what_k_reaches():
    rng = random.Random(22)
    V1, V2 = _ints(rng, 3, 2), _ints(rng, 2, 3)
    net = given([V1, V2], ["relu", "identity"])
    u = [2, -1, 3]
    W = [[sum(V2[i][k] * u[k] * V1[k][j] for k in range(3)) for j in range(2)] for i in range(2)]
    g = _affine(W, [1, 1], lo=-1, hi=1)
    d = decide(net, g, output_scale="fixed")
    assert d.verdict == "REACHABLE" and both(d.document).ok
    f = read_frozen(d.document)
    assert list(f.layers[1].gamma) == [1, 1]
    _holds(d.document, g)


def test_dead_hidden_neurons_free_their_columns_in_the_aligned_class():
    """Same architecture: a hidden neuron dead on the whole box is a pinned coordinate of
    B_1, so the target may weight it as it likes; the aligned certificate folds it."""
    V = [[[1, 1], [1, -1], [-1, -1]], [[1, 2, 3]]]
    net = given(V, ["relu", "identity"])
    # neuron 2 of the target: −(x0 + x1) − 1 < 0 on [0, 1]²: dead; the target puts 99 on it
    g = TargetNetwork.from_lists([[[2, 2], [3, -3], [-1, -1]], [[5, 10, 99]]],
                                 [[0, 1, -1], [4]], ["relu", "identity"],
                                 lower=[0, 0], upper=[1, 1])
    d = decide(net, g)
    assert d.verdict == "REACHABLE" and both(d.document).ok
    _holds(d.document, g)


def test_the_minor_is_bounded_before_anything_is_regenerated(monkeypatch):
    """The rank witness's minor (its entries, then its determinant's work) is counted before a
    frozen matrix is regenerated: a limit below the minor's entries refuses the document with
    nothing regenerated, in both arithmetics (a small limit makes the order visible); a limit
    below a regenerated matrix refuses it before it is built."""
    from exactnorm.checker import budget, provenance

    doc = below_threshold_document(t11_target(3), 6)
    calls = []
    real = provenance.regenerate_integers
    monkeypatch.setattr(provenance, "regenerate_integers",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    monkeypatch.setattr(budget, "MAX_MAP_ENTRIES", (6 + 3) ** 2 - 1)
    v = both(doc)
    assert (v.ok, v.rule) == (False, "limit") and "9 x 9 minor" in v.message, v.message
    assert calls == []
    monkeypatch.setattr(budget, "MAX_MAP_ENTRIES", (6 + 3) ** 2)
    assert both(doc).ok and calls  # the same document within the limit
    v = both(doc, max_work=both(doc).facts["work"] - 1)
    assert (v.ok, v.rule) == (False, "limit") and "units of work" in v.message, v.message
