"""Regression tests for every class of the second hostile round against the checker, each run
with both arithmetics (same verdict and message demanded): limits checked before building and
counted the same, bounded digit limits, no memory amplification from one long denominator, draw
shapes compared before regeneration, the work budget, mask keys as stream keys, canonical
distributions, honest verdicts (constant draws, fixed matrices, pinned coordinates, long
targets), truncated gzip files, and a box with very large coprime denominators."""

from __future__ import annotations

import copy
import gzip
import json
import subprocess
import sys
import time
import tracemalloc
from typing import Any

import pytest

from exactnorm import checker, checker_flint
from exactnorm.checker import budget, provenance, regenerate
from exactnorm.checker.kinds import window
from tests.checker.test_checker import case_a, case_b, case_d, cert, layer
from tests.helpers import both


@pytest.fixture(autouse=True)
def _long_decimals():
    """The tests write numbers of tens of thousands of digits themselves."""
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    yield
    sys.set_int_max_str_digits(old)


def record(key: list[int], shape: list[int], distribution: str = "nonzero:8",
           **extra: Any) -> dict:
    return {"generator": "exactnorm.shake256.v1", "seed": 0, "key": key,
            "distribution": distribution, "shape": shape, **extra}


def test_limit_is_checked_before_building_and_counted_alike(monkeypatch):
    """An explicit weight plus an identity skip: the map from the segment input and the sum are
    bounded before they exist, in both arithmetics (they disagreed before)."""
    doc = case_b()
    assert both(doc).ok
    for module in (budget, provenance, window, regenerate):
        monkeypatch.setattr(module, "MAX_MAP_ENTRIES", 0)
    v = both(doc)
    assert (v.ok, v.rule) == (False, "limit") and "limit 0" in v.message, v


def test_digit_limit_has_an_upper_bound(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps(case_a()))
    for value in ("10000000000", str(10**21)):
        res = subprocess.run([sys.executable, "-m", "exactnorm", "check", str(path),
                              "--max-digits", value], capture_output=True, text=True)
        assert res.returncode == 2 and "max_digits" in res.stderr.replace("-", "_"), res
        assert "Traceback" not in res.stderr
        res = subprocess.run([sys.executable, "-m", "exactnorm.checker", str(path),
                              "--max-digits", value], capture_output=True, text=True)
        assert res.returncode == 2 and "--max-digits" in res.stderr, res


def test_one_long_denominator_is_not_copied_into_every_entry():
    """gamma = 1/D for 4,000 neurons with one 20,000-digit D written once: read as one
    IntVector (peak memory about the file's size), not 4,000 Fractions that each carry their own
    copy of D (a 320 KB certificate took 8.4 GB before)."""
    den = str(10**20000 + 1)
    n = 4000
    doc = cert([0], [1], [({"den": den, "num": [[1]] * n}, [0] * n, "identity")],
               [layer(0, [[1]] * n, {"den": den, "num": [1] * n}, [0] * n, "identity")], [1])
    doc["version"] = 2
    doc["network"]["layers"][0]["source"] = {"kind": "fixed", "why": "a test"}
    tracemalloc.start()
    v = both(doc)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert v.ok, v
    assert peak < 12 * 2**20, peak


def test_draw_shape_is_compared_before_regeneration():
    """A 380-byte certificate whose record names 2^24 entries (the limit) with the wrong row
    count is refused at once (it regenerated 6.4 GB before)."""
    doc = cert([0], [1], [([[1]], [0], "identity")],
               [{"input": 0, "weight": {"random": record([1], [1 << 24, 1])}, "gamma": [1],
                 "beta": [0], "activation": "identity"}], [1])
    doc["version"] = 2
    start = time.perf_counter()
    v = both(doc)
    assert (v.ok, v.rule) == (False, "shape"), v
    assert time.perf_counter() - start < 10


def _wide(n: int) -> dict:
    """Three n-wide layers by reference: a few hundred bytes that demand n³ multiply-adds."""
    layers = [{"input": j, "weight": {"random": record([j + 1], [n, n])},
               "gamma": [1] * n, "beta": [0] * n, "activation": "identity"} for j in range(3)]
    doc = cert([0] * n, [1] * n, [([[0] * n] * n, [0] * n, "identity")], layers, [3])
    doc["version"] = 2
    return doc


def test_work_budget_refuses_before_the_work(monkeypatch):
    doc = _wide(64)
    v = both(doc, max_work=10**6)
    assert (v.ok, v.rule, v.layer) == (False, "limit", 2), v
    assert "work budget" in v.message and "--max-work" in v.message
    v = both(doc, max_work=10**9)  # the same document within a larger budget: an honest no
    assert (v.ok, v.rule) == (False, "identity"), v
    # the count is made before the work: no product of layer 2 is computed when it is refused
    from exactnorm.checker import arithmetic

    calls = []
    compose = arithmetic.PureArithmetic.compose
    monkeypatch.setattr(arithmetic.PureArithmetic, "compose",
                        lambda self, *a: calls.append(a[2] is None) or compose(self, *a))
    checker.check_certificate(copy.deepcopy(doc), max_work=10**6)
    assert calls == [True]  # layer 1 (on the segment input) only


def test_mask_keys_are_stream_keys():
    doc = cert([0, 0], [1, 1], [([[1, 1]], [0], "identity")],
               [{"input": 0, "weight": {"random": record([1], [2, 2],
                                                         mask={"p": "1/2", "key": [2]})},
                 "gamma": [1, 1], "beta": [0, 0], "activation": "identity"},
                {"input": 1, "weight": {"random": record([2], [1, 2])}, "gamma": [1],
                 "beta": [0], "activation": "identity"}], [2])
    doc["version"] = 2
    v = both(doc)
    assert (v.ok, v.rule) == (False, "provenance") and "also the key of" in v.message, v


def test_distributions_are_canonical():
    for bad in ("set:-2,-0,3", "set:01", "int:08"):
        with pytest.raises(regenerate.RecordError):
            regenerate.validate_record(record([1], [1, 1], bad))


def test_verdict_names_constant_draws_and_fixed_matrices():
    doc = cert([0], [1], [([[3]], [0], "identity")],
               [{"input": 0, "weight": {"random": record([1], [1, 1], "set:3")}, "gamma": [1],
                 "beta": [0], "activation": "identity"}], [1])
    doc["version"] = 2
    v = both(doc)
    assert v.ok and "no random frozen matrix: 1 constant draw(s)" in v.message, v
    assert "0 bits of min-entropy" in v.message and v.facts["regenerated"] == 0, v
    doc = case_a()
    doc["version"] = 2
    for L in doc["network"]["layers"]:
        L["source"] = {"kind": "fixed", "why": "chosen by hand for this test"}
    v = both(doc)
    assert v.ok and "2 declared fixed" in v.message and "chosen by hand" in v.message, v


def test_verdict_shows_pinned_coordinates_and_summarises_long_targets():
    doc = case_d()
    doc["domain"] = {"lower": [0, 0, 0, 0, 2], "upper": [1, 1, 1, 1, 2]}
    doc["target"]["layers"][0]["weight"] = [[1, 0, 0, 0, 1000]]
    doc["network"]["layers"][0]["weight"] = [[1, 0, 0, 0, 0], [0, 0, 0, 0, 1]]
    doc["network"]["layers"][0]["beta"] = [0, 0]
    doc["network"]["layers"][1]["weight"] = [[1, 1000]]
    doc["network"]["layers"][1]["beta"] = [0]
    v = both(doc)
    assert v.ok and "pinned: x4 = 2" in v.message, v
    n = 40
    deep = cert([0], [1], [([[1]], [0], "identity")] * n,
                [layer(j, [[1]], [1], [0], "identity") for j in range(n)],
                list(range(1, n + 1)))
    v = both(deep)
    assert v.ok and f"({n} layers)" in v.message and len(v.message) < 400, v


def test_truncated_gzip_is_corrupt_not_too_large(tmp_path):
    path = tmp_path / "c.json.gz"
    path.write_bytes(gzip.compress(json.dumps(case_a()).encode())[:47])
    v = checker.check_file(str(path))
    assert not v.ok and "not a valid gzip file" in v.message and "limit" not in v.message, v
    assert checker_flint.check_file(str(path)) == v


def test_box_with_large_coprime_denominators_is_fast_in_both():
    """8 inputs with distinct 20,000-bit prime-free coprime denominators: the pure arithmetic
    scales by one product of denominators per segment, never takes a gcd of huge numbers per
    sum (benchmarks/bench_checker_kernel.py runs the 200,000-bit size)."""
    dens = [3**12600 + 2 * k for k in range(8)]  # odd, pairwise coprime enough to be large
    lower = [f"1/{d}" for d in dens]
    upper = [f"{d + 1}/{d}" for d in dens]
    W = [[1, -1, 2, 0, 1, 1, -3, 1]]
    doc = cert(lower, upper, [(W, [0], "identity")],
               [layer(0, [[1, 0, 0, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0, 0, 0],
                          [0, 0, 1, 0, 0, 0, 0, 0], [0, 0, 0, 0, 1, 0, 0, 0],
                          [0, 0, 0, 0, 0, 1, 0, 0], [0, 0, 0, 0, 0, 0, 1, 0],
                          [0, 0, 0, 0, 0, 0, 0, 1]], [1] * 7, [0] * 7, "relu"),
                layer(1, [[1, -1, 2, 1, 1, -3, 1]], [1], [0], "identity")], [2])
    start = time.perf_counter()
    v = both(doc)
    assert v.ok, v
    assert time.perf_counter() - start < 30


def _redrawn_theorem1() -> dict:
    """A Theorem-1 certificate whose pair was redrawn after singular draws (int:1 values)."""
    from exactnorm.certificate import certificate_document
    from exactnorm.constructions.theorem1 import certify_theorem1
    from exactnorm.model.targets import random_target

    c = certify_theorem1(random_target([1, 3], seed=0), seed=4, distribution="int:1")
    assert c.reports[0].attempts == 3
    return certificate_document(c)


def _set_attempt(doc: dict, attempt: int) -> None:
    for L in doc["network"]["layers"]:
        rec = L["weight"]["random"]
        rec["key"][-1] = attempt


def test_redraws_count_only_after_draws_shown_singular():
    """Provenance that cannot be ground: an attempt k > 0 needs attempts 0 … k−1 shown singular
    by kernel vectors that the checker verifies on the regenerated matrices."""
    doc = _redrawn_theorem1()
    v = both(doc)
    assert v.ok and "each after a draw shown singular" in v.message, v
    ground = copy.deepcopy(doc)
    _set_attempt(ground, 40)  # an attempt chosen after looking at the target
    v = both(ground)
    assert (v.ok, v.rule) == (False, "provenance") and "not shown singular" in v.message, v
    missing = copy.deepcopy(doc)
    del missing["redraws"]
    assert both(missing).rule == "provenance"
    wrong = copy.deepcopy(doc)
    wrong["redraws"][0]["kernel"] = list(range(1, len(wrong["redraws"][0]["kernel"]) + 1))
    v = both(wrong)
    assert (v.ok, v.rule) == (False, "provenance") and "not in the kernel" in v.message, v


def test_final_matrix_redraws_are_checked_too():
    from exactnorm.certificate import certificate_document
    from exactnorm.constructions.tradeoff import certify_tradeoff
    from exactnorm.model.targets import random_target

    doc = certificate_document(certify_tradeoff(random_target([4, 2], seed=0), block=2, seed=8,
                                                distribution="int:1"))
    last = doc["network"]["checkpoints"][0]  # V_F is the segment's last layer
    finals = [r for r in doc["redraws"] if r["key"][1] == last]
    assert len(finals) == 3 and both(doc).ok
    doc["redraws"] = [r for r in doc["redraws"] if r["key"][1] != last]
    v = both(doc)
    assert (v.ok, v.rule) == (False, "provenance") and "attempt 3 is used" in v.message, v


def test_the_format_vocabulary_is_defined_once():
    """Every name and limit of exactnorm/checker/vocabulary.py is assigned a literal there and
    nowhere else in the package (other modules import it, possibly under another name)."""
    import ast
    from pathlib import Path

    from exactnorm.checker import vocabulary

    package = Path(vocabulary.__file__).resolve().parent.parent
    names = {n for n in vocabulary.__all__}
    values = {repr(getattr(vocabulary, n)) for n in names if getattr(vocabulary, n) is not None
              and (not isinstance(getattr(vocabulary, n), int) or getattr(vocabulary, n) > 1000)}
    found = []
    for path in package.rglob("*.py"):
        if path.name == "vocabulary.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Assign) and isinstance(node.value, (ast.Constant, ast.Tuple,
                                                                        ast.BinOp)):
                try:
                    value = repr(ast.literal_eval(node.value))
                except ValueError:
                    try:
                        value = repr(eval(compile(ast.Expression(node.value), "", "eval")))
                    except Exception:  # noqa: BLE001  (a name in the expression: not a literal)
                        continue
                targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
                if set(targets) & names or (value in values and targets):
                    found.append(f"{path.relative_to(package)}:{node.lineno} {targets} = {value}")
    assert not found, found
