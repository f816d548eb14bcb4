"""The NumPy generator (``exactnorm.exact.generator``) equals the standard-library reference
(``exactnorm.checker.regenerate``) bit for bit, and the documented test vectors hold."""

from __future__ import annotations

import random
import re
from fractions import Fraction
from pathlib import Path

import pytest

from exactnorm.checker import regenerate as rg
from exactnorm.errors import InputError
from exactnorm.exact import generator as gen
from exactnorm.exact.sampling import parse_distribution

ROOT = Path(__file__).resolve().parents[2]


def _random_distribution(r: random.Random) -> str:
    kind = r.choice(["int", "nonzero", "bits", "set", "rational", "gauss"])
    if kind == "set":
        n = r.randint(1, 5)
        return "set:" + ",".join(str(r.randint(-2**61, 2**61) if r.random() < 0.2
                                     else r.randint(-9, 9)) for _ in range(n))
    if kind == "bits":
        return f"bits:{r.choice([0, 1, 5, 30, 61, 62])}"
    if kind == "gauss":
        return f"gauss:{r.choice([1, 8, 30, 52])}"
    # extreme parameters exercise the uint64 wrap-around of the vectorised mapping
    return f"{kind}:{r.choice([1, 2, 3, 8, 1000, 2**31, 2**62 - 1, 2**62])}"


def _random_case(r: random.Random) -> tuple[int, tuple[int, ...], int, int, str, dict]:
    seed = r.choice([0, 1, r.randrange(2**32), r.randrange(2**80)])
    key = tuple(r.randrange(2**r.choice([2, 10, 40])) for _ in range(r.randint(0, 5)))
    rows, cols = r.choice([0, 1, 2, 3, 7]), r.choice([0, 1, 2, 5])
    dist = _random_distribution(r)
    extra: dict = {}
    roll = r.random()
    if roll < 0.25:
        den = r.choice([2, 3, 7, 2**40 + 1])
        extra = {"mask_p": Fraction(r.randint(0, den), den), "mask_key": key + (99,)}
    elif roll < 0.35 and cols:
        extra = {"columns": sorted(r.sample(range(cols), r.randint(0, cols)))}
    return seed, key, rows, cols, dist, extra


def test_numpy_generator_equals_reference_on_10000_cases():
    r = random.Random(20260515)
    for case in range(10_000):
        seed, key, rows, cols, dist, extra = _random_case(r)
        M, rec = gen.draw(seed, key, rows, cols, dist, **extra)
        expected = rg.regenerate(rec)
        got = [[Fraction(int(x.p), int(x.q)) if hasattr(x, "q") else Fraction(int(x))
                for x in row] for row in M.tolist()] if rows and cols else [[]] * rows
        assert got == expected, (case, rec)


def test_words_match_reference_and_are_prefix_consistent():
    for seed, key in [(0, ()), (5, (1, 2, 3)), (2**70, (0,))]:
        w = gen.stream_words(seed, key, 40)
        assert w.tolist() == rg.stream_words(seed, key, 40)
        assert gen.stream_words(seed, key, 7).tolist() == w[:7].tolist()


def test_record_round_trips_through_the_reference_validator():
    M, rec = gen.draw(4, (2, 1, 0, 0), 3, 4, "nonzero:8", mask_p=Fraction(1, 4),
                      mask_key=(2, 1, 2, 0))
    parsed = rg.validate_record(rec)
    assert (parsed.seed, parsed.key, parsed.distribution, parsed.rows, parsed.cols) == \
        (4, (2, 1, 0, 0), "nonzero:8", 3, 4)
    assert rec["mask"] == {"p": "1/4", "key": [2, 1, 2, 0]}
    assert gen.matrix_from_record(rec) == M
    # a record is plain JSON data: a copy through JSON regenerates the same matrix
    import json
    assert gen.matrix_from_record(json.loads(json.dumps(rec))) == M


def test_float_keep_probability_is_its_decimal_value():
    assert gen.exact_probability(0.3) == Fraction(3, 10)
    with pytest.raises(InputError):
        gen.exact_probability(1.5)
    with pytest.raises(InputError):
        gen.exact_probability("x")


@pytest.mark.parametrize("seed, key", [(-1, ()), (True, ()), (0, (-1,)), (0, (1.5,))])
def test_bad_stream_is_refused(seed, key):
    with pytest.raises(InputError):
        gen.draw(seed, key, 1, 1, "int:8")


def test_gauss_is_exact_at_52_bits_and_refused_at_62():
    M, rec = gen.draw(1, (3,), 4, 4, "gauss:52")
    assert [[Fraction(int(x.p), int(x.q)) for x in row] for row in M.tolist()] == \
        rg.regenerate(rec)
    assert all(x.q == 2**52 or x.p == 0 or (2**52) % int(x.q) == 0 for x in M.entries())
    with pytest.raises(InputError, match=r"\[1, 52\]"):
        parse_distribution("gauss:62")


def test_documented_test_vectors():
    """docs/generator.md lists the first words of a few streams: they must be what we compute."""
    text = (ROOT / "docs" / "generator.md").read_text()
    rows = re.findall(r"^\| `(\d+)` \| `\[([0-9, ]*)\]` \| `([0-9a-f]{16})` \| `([0-9a-f]{16})` "
                      r"\| `([0-9a-f]{16})` \|$", text, re.M)
    assert len(rows) >= 4
    for seed, key, *words in rows:
        k = tuple(int(x) for x in key.split(",") if x.strip())
        assert [f"{w:016x}" for w in rg.stream_words(int(seed), k, 3)] == words
    entries = re.findall(r"^\| `(\{.*\})` \| `(\[\[.*\]\])` \|$", text, re.M)
    assert len(entries) >= 3
    import json
    for rec, matrix in entries:
        assert [[str(x) for x in row] for row in rg.regenerate(json.loads(rec))] == \
            json.loads(matrix)


@pytest.mark.parametrize("dist", ["nonzero:1", "nonzero:8", "nonzero:128", "set:5,-3",
                                  "set:1,2,3,4", "int:8", "nonzero:3"])
def test_low_byte_shortcut_equals_the_word_definition(dist):
    """Moduli dividing 256 read one byte per word; the entries are the documented
    ``value(u mod n)`` of the full 64-bit words all the same."""
    record = {"generator": rg.GENERATOR, "seed": 3, "key": [1, 4], "distribution": dist,
              "shape": [9, 31]}
    rec = rg.validate_record(record)
    modulus, value = rg._integer_map(rec)
    words = rg.stream_words(3, (1, 4), 9 * 31)
    rows, cols, flat = rg.regenerate_integers_flat(record)
    assert (rows, cols) == (9, 31)
    assert flat == [value(u % modulus) for u in words]
    assert rg.regenerate_integers(record) == [flat[r * 31:(r + 1) * 31] for r in range(9)]


def _rec(dist: str, shape: list[int], mask: dict | None = None) -> dict:
    rec = {"generator": gen.GENERATOR, "seed": 0, "key": [1, 1, 0, 0], "distribution": dist,
           "shape": shape}
    if mask is not None:
        rec["mask"] = mask
    return rec


def test_support_columns_follow_the_distribution_and_the_masks():
    """The possibly nonzero columns, by the definitions of docs/generator.md §2–§3, checked
    against the regenerated matrices: no entry outside them is ever nonzero."""
    cases = [(_rec("nonzero:8", [3, 4]), (0, 1, 2, 3)),
             (_rec("set:0,0", [3, 4]), ()),
             (_rec("int:2", [3, 4], {"p": 0, "key": [1, 1, 1, 0]}), ()),
             (_rec("int:2", [3, 4], {"p": "1/3", "key": [1, 1, 1, 0]}), (0, 1, 2, 3)),
             (_rec("nonzero:8", [3, 4], {"columns": [1, 3]}), (1, 3))]
    for rec, columns in cases:
        assert gen.support_columns(rec) == columns
        M = gen.matrix_from_record(rec)
        assert all(M[r, t] == 0 for r in range(M.nrows()) for t in range(M.ncols())
                   if t not in columns)


def test_redraw_refusal_names_units_singular_at_every_attempt():
    square = _rec("nonzero:8", [2, 2])
    assert gen.redraw_refusal(square) is None
    assert "structural rank of its masked system is 1 < 2" in gen.redraw_refusal(
        _rec("nonzero:8", [2, 2], {"columns": [0]}))
    assert "without randomness" in gen.redraw_refusal(_rec("set:5", [2, 2]))
    assert "without randomness" in gen.redraw_refusal(
        _rec("int:3", [2, 2], {"p": 0, "key": [1, 1, 1, 0]}))
    assert gen.redraw_refusal(_rec("set:5", [2, 2], {"p": "1/2", "key": [1, 1, 1, 0]})) is None
    # a pair: V_in 4 x 3 reading columns 0 and 2 (d = 2), V_out 2 x 4 (c = 2, m = 4)
    first = _rec("nonzero:8", [4, 3], {"columns": [0, 2]})
    assert gen.redraw_refusal(first, _rec("nonzero:8", [2, 4]), [0, 2]) is None
    assert "is 3 < 4" in gen.redraw_refusal(first, _rec("nonzero:8", [2, 4],
                                                         {"columns": [0, 1, 3]}), [0, 2])
