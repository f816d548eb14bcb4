"""The reference regenerator ``exactnorm.checker.regenerate`` (generator ``exactnorm.shake256.v1``).

The mapping of words to entries is recomputed here independently (from ``hashlib`` bytes and
``int.from_bytes``), so a wrong byte order, a wrong word count per entry or a wrong mapping fails.
"""

from __future__ import annotations

import hashlib
from fractions import Fraction
from pathlib import Path

import pytest

from exactnorm.checker import regenerate as rg


def record(**kw):
    base = {"generator": "exactnorm.shake256.v1", "seed": 3, "key": [1, 2, 0, 0],
            "distribution": "int:8", "shape": [4, 5]}
    base.update(kw)
    return base


def words_by_hand(seed, key, count):
    data = hashlib.shake_256(f"exactnorm.shake256.v1|{seed}|{','.join(map(str, key))}"
                             .encode()).digest(8 * count)
    return [int.from_bytes(data[8 * i:8 * i + 8], "little") for i in range(count)]


def test_stream_words_are_little_endian_shake256_words():
    assert rg.stream_words(7, (0, 5), 9) == words_by_hand(7, (0, 5), 9)
    assert rg.stream_words(7, (0, 5), 0) == []


def test_big_endian_host_path_gives_the_same_words(monkeypatch):
    expected = rg.stream_words(11, (4,), 33)
    monkeypatch.setattr(rg, "_LITTLE_ENDIAN", False)
    assert rg.stream_words(11, (4,), 33) == expected


def test_key_and_seed_change_the_stream():
    a = rg.stream_words(0, (1, 2), 4)
    assert a != rg.stream_words(1, (1, 2), 4)
    assert a != rg.stream_words(0, (2, 1), 4)
    assert a != rg.stream_words(0, (12,), 4)
    assert a != rg.stream_words(0, (1, 2, 0), 4)


@pytest.mark.parametrize("dist, mapping", [
    ("int:8", lambda u: -8 + u[0] % 17),
    ("bits:3", lambda u: -8 + u[0] % 17),
    ("nonzero:8", lambda u: (u[0] % 16) - 8 if u[0] % 16 < 8 else (u[0] % 16) - 7),
    ("set:5,-2,9", lambda u: [5, -2, 9][u[0] % 3]),
    ("rational:4", lambda u: Fraction(-4 + u[0] % 9, 1 + u[1] % 4)),
    ("gauss:10", lambda u: Fraction(sum(x % 1024 for x in u[:12]) - 6 * 1024, 1024)),
])
def test_entries_follow_the_documented_mapping_row_major(dist, mapping):
    per_entry = {"rational": 2, "gauss": 12}.get(dist.split(":")[0], 1)
    rows = rg.regenerate(record(distribution=dist, shape=[3, 4]))
    u = words_by_hand(3, [1, 2, 0, 0], 12 * per_entry)
    expected = [mapping(u[per_entry * i:per_entry * (i + 1)]) for i in range(12)]
    assert [x for r in rows for x in r] == expected
    assert all(isinstance(x, Fraction) for r in rows for x in r)


def test_nonzero_never_draws_zero_and_reaches_both_ends():
    vals = [x for r in rg.regenerate_integers(record(distribution="nonzero:2", shape=[50, 20]))
            for x in r]
    assert set(vals) == {-2, -1, 1, 2}


def test_bernoulli_mask_uses_its_own_stream():
    rec = record(shape=[6, 7], mask={"p": "1/3", "key": [1, 2, 0, 1]})
    rows = rg.regenerate_integers(rec)
    plain = rg.regenerate_integers(record(shape=[6, 7]))
    bits = [x % 3 < 1 for x in words_by_hand(3, [1, 2, 0, 1], 42)]
    assert [x for r in rows for x in r] == [v if b else 0
                                            for v, b in zip([x for r in plain for x in r], bits)]


def test_column_mask_and_trivial_probabilities():
    rows = rg.regenerate_integers(record(distribution="nonzero:3", mask={"columns": [0, 3]}))
    assert all((x != 0) == (j in (0, 3)) for r in rows for j, x in enumerate(r))
    assert rg.regenerate_integers(record(mask={"p": 0, "key": [9]})) == [[0] * 5] * 4
    assert rg.regenerate_integers(record(mask={"p": 1, "key": [9]})) == \
        rg.regenerate_integers(record())


def test_zero_sized_shapes():
    assert rg.regenerate(record(shape=[0, 4])) == []
    assert rg.regenerate(record(shape=[3, 0])) == [[], [], []]


def test_gauss_52_is_exact_and_62_is_refused():
    rows = rg.regenerate(record(distribution="gauss:52", shape=[2, 3]))
    u = words_by_hand(3, [1, 2, 0, 0], 72)
    expected = [Fraction(sum(x % 2**52 for x in u[12 * i:12 * i + 12]) - 6 * 2**52, 2**52)
                for i in range(6)]
    assert [x for r in rows for x in r] == expected
    assert all(abs(x) <= 6 for x in expected)
    with pytest.raises(rg.RecordError, match=r"gauss.*\[1, 52\], got 62"):
        rg.validate_record(record(distribution="gauss:62"))


def test_regenerate_integers_refuses_rational_kinds():
    with pytest.raises(rg.RecordError, match="not an integer distribution"):
        rg.regenerate_integers(record(distribution="rational:3"))


@pytest.mark.parametrize("change, message", [
    ({"generator": "numpy.pcg64"}, "unknown generator"),
    ({"seed": -1}, "seed must be a non-negative integer"),
    ({"seed": True}, "seed must be a non-negative integer"),
    ({"seed": "0"}, "seed must be a non-negative integer"),
    ({"seed": 2**300}, "more than 256 bits"),
    ({"key": "1,2"}, "key must be a list"),
    ({"key": [1, -2]}, "key part must be a non-negative integer"),
    ({"key": [0] * 65}, "at most 64"),
    ({"distribution": "int:0"}, r"\[1, 4611686018427387904\]"),
    ({"distribution": "int:08"}, "unknown distribution"),
    ({"distribution": "int: 8"}, "unknown distribution"),
    ({"distribution": "uniform:8"}, "unknown distribution"),
    ({"distribution": 8}, "must be a string"),
    ({"distribution": "bits:63"}, r"\[0, 62\]"),
    ({"distribution": "set:"}, "unknown distribution"),
    ({"distribution": f"set:1,{2**62}"}, "strictly between"),
    ({"shape": [3]}, r"shape must be \[rows, cols\]"),
    ({"shape": [3, -1]}, "shape must be a non-negative integer"),
    ({"shape": [10**9, 10**9]}, "above the limit"),
    ({"mask": {"p": "2/8", "key": [5]}}, "lowest terms"),
    ({"mask": {"p": "3/2", "key": [5]}}, "lowest terms"),
    ({"mask": {"p": 0.5, "key": [5]}}, "string 'a/b'"),
    ({"mask": {"p": True, "key": [5]}}, "string 'a/b'"),
    ({"mask": {"p": 0.0, "key": [5]}}, "string 'a/b'"),
    ({"mask": {"p": 1.0, "key": [5]}}, "string 'a/b'"),
    ({"mask": {"p": "1/2"}}, "exactly the fields"),
    ({"mask": {"p": "1/2", "key": [1, 2, 0, 0]}}, "equals the matrix stream key"),
    ({"mask": {"columns": [2, 1]}}, "strictly increasing"),
    ({"mask": {"columns": [5]}}, "strictly increasing"),
    ({"mask": [1]}, "mask must be an object"),
    ({"weights": [1]}, "unknown field 'weights'"),
])
def test_malformed_records_are_refused_with_one_line(change, message):
    with pytest.raises(rg.RecordError, match=message) as err:
        rg.regenerate(record(**change))
    assert "\n" not in str(err.value)


def test_missing_field_and_non_object():
    rec = record()
    del rec["shape"]
    with pytest.raises(rg.RecordError, match="missing field 'shape'"):
        rg.validate_record(rec)
    with pytest.raises(rg.RecordError, match="must be an object"):
        rg.validate_record([1, 2])


def test_limit_is_checked_before_allocation():
    # 2^40 entries would need terabytes: the limit must refuse it before drawing anything
    with pytest.raises(rg.RecordError, match="above the limit 1000"):
        rg.regenerate(record(shape=[2**20, 2**20]), max_entries=1000)


def test_reference_is_standard_library_only_and_runs_alone(tmp_path):
    """The checkers' guarantee: this file imports nothing outside the standard library and its
    package, and a copy of the package run alone (isolated interpreter, no exactnorm on the
    path) gives the same matrix."""
    import ast
    import json
    import shutil
    import subprocess
    import sys

    source = rg.__file__
    tree = ast.parse(Path(source).read_text(encoding="utf-8"))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module and not node.level}
    assert imported - {"__future__"} <= set(sys.stdlib_module_names), imported
    # its one sibling import is the format's vocabulary: a copy of the two runs alone
    shutil.copytree(Path(source).parent, tmp_path / "kernel")
    rec = record(distribution="rational:7", shape=[3, 2], mask={"p": "2/3", "key": [4]})
    script = ("import json, sys; sys.path.insert(0, sys.argv[1]); from kernel import "
              "regenerate as alone; print(json.dumps([[str(x) for x in r] for r in "
              "alone.regenerate(json.loads(sys.argv[2]))]))")
    out = subprocess.run([sys.executable, "-I", "-c", script, str(tmp_path), json.dumps(rec)],
                         capture_output=True, text=True, check=True, cwd=tmp_path).stdout
    assert json.loads(out) == [[str(x) for x in r] for r in rg.regenerate(rec)]
