"""Regression tests for the checker robustness classes of issue 16 (one test or more per class).

Each class was a real defect found by the red team; each test failed before its fix:

 1 console markup injection         7 standalone checker: FIFO, device, directory, missing file
 2 size limit by incremental read   8 closed stdout is not "invalid"
 3 cheap error messages             9 one digit limit for strings and JSON integers, not for text
 4 pure checker speed               10 messages: locations, JSON rendering, precise file wording
 5 linear checkpoints               11 degenerate neuron (min = max = 0) on a point box
 6 no identity / huge affine maps
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from exactnorm import checker, checker_flint
from exactnorm.checker import document, reading
from exactnorm.checker.records import FrozenRecord, TargetRecord
from exactnorm.cli import EXIT_BROKEN_PIPE, main
from tests.helpers import both

ROOT = Path(__file__).resolve().parents[2]


def layer(src, V, gamma, beta, act, skip=None):
    out = {"input": src, "weight": V, "gamma": gamma, "beta": beta, "activation": act}
    if skip is not None:
        out["skip"] = skip
    return out


def cert(lower, upper, target, layers, checkpoints, version=1):
    return {"format": "exactnorm.certificate", "version": version,
            "domain": {"lower": lower, "upper": upper},
            "target": {"layers": [{"weight": W, "bias": b, "activation": a}
                                  for W, b, a in target]},
            "network": {"layers": layers, "checkpoints": checkpoints}}


def simple():
    """g(x) = 2x + 1 on [0, 1]: layer 1 u = x + 1 (relu, stable), checkpoint 2·h - 1."""
    return cert([0], [1], [([[2]], [1], "identity")],
                [layer(0, [[1]], [1], [1], "relu"), layer(1, [[2]], [1], [-1], "identity")],
                [2])


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


# ------------------------------------------------------------------ 1. markup


@pytest.mark.parametrize("text", ["[/x]", "[red]bold[/red]", ":thumbs_up:", "[link=x]y"])
def test_markup_in_path_and_certificate_is_printed_as_written(tmp_path, capsys, text):
    folder = tmp_path / f"d{text}"
    folder.mkdir(parents=True)
    path = folder / "c.json"
    path.write_text(json.dumps(simple()))
    code, out, err = run(["check", str(path)], capsys)
    assert code == 0 and str(path) in out, (out, err)
    bad = simple()
    bad["network"]["layers"][0]["activation"] = text
    path.write_text(json.dumps(bad))
    code, out, err = run(["check", str(path)], capsys)
    assert code == 1 and json.dumps(text) in out and not err, (out, err)


# ------------------------------------------------------------------ 2. size limit


def test_size_limit_does_not_reserve_memory(tmp_path):
    """Under a 1 GiB address-space limit a 4 KB certificate is checked with the default 2 GiB
    size limit (the old reader reserved limit + 1 bytes up front and failed)."""
    path = tmp_path / "c.json"
    path.write_text(json.dumps(simple()))
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30));"
            "from exactnorm import checker; sys.exit(checker.main([sys.argv[1]]))")
    res = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                         check=False, cwd=ROOT)
    assert res.returncode == 0, res.stderr


def test_max_bytes_is_capped_with_a_clear_error(tmp_path, capsys):
    path = tmp_path / "c.json"
    path.write_text(json.dumps(simple()))
    code, _, err = run(["check", str(path), "--max-bytes", str(2**63 - 1)], capsys)
    assert code == 2 and "--max-bytes must be between 0 and" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    size = path.stat().st_size
    assert run(["check", str(path), "--max-bytes", str(size)], capsys)[0] == 0
    assert run(["check", str(path), "--max-bytes", str(size - 1)], capsys)[0] == 2


# ------------------------------------------------------------------ 3. cheap messages


def test_unstable_neuron_with_huge_numbers_is_reported_quickly():
    """min and max with 400,000 digits: the message gives bit sizes, never the decimals."""
    big = "9" * 400_000
    doc = simple()
    doc["network"]["layers"][0]["beta"] = ["-" + big]
    doc["network"]["layers"][0]["gamma"] = [big + "1"]
    t0 = time.perf_counter()
    v = both(doc, max_digits=500_000)
    assert time.perf_counter() - t0 < 20
    assert v.rule == "stability" and "-bit integer" in v.message and len(v.message) < 300


def test_show_is_exact_when_small_and_short_when_huge():
    from fractions import Fraction
    assert checker.show(Fraction(-3, 4)) == "-3/4"
    assert checker.show(Fraction(-(2**400), 3)) == "-(401-bit integer)/(2-bit integer)"
    assert checker.show(10**50) == str(10**50)
    assert checker.show(10**100) == "(333-bit integer)"
    assert checker.show("x" * 10**6).endswith("(1000000 characters)")


# ------------------------------------------------------------------ 4/5/6. speed and memory


def chain(n: int) -> dict:
    """n target layers 1 -> 1 (identity) and n checkpoints: one frozen layer per segment."""
    return cert([0], [1], [([[1]], [0], "identity")] * n,
                [layer(j, [[1]], [1], [0], "identity") for j in range(n)], list(range(1, n + 1)))


def test_many_checkpoints_are_linear():
    """120,000 checkpoints took 62 s in the segment rule with list membership (quadratic); with a
    set it is linear. The rule alone on 200,000 layers, then a whole 2,000-segment certificate."""
    n = 200_000
    layers = [FrozenRecord("dense", j, None, None, None, "identity") for j in range(n)]
    target = [TargetRecord("dense", None, None, "identity", 1, input=i) for i in range(n)]
    t0 = time.perf_counter()
    document.rule_segments(layers, list(range(1, n + 1)), target)
    reading.rule_checkpoints(list(range(1, n + 1)), n, n)
    assert time.perf_counter() - t0 < 5
    assert both(chain(2_000)).ok


def wide_box(d: int) -> dict:
    """A 1-neuron network on a d-dimensional box: g(x) = x_0 + ... + x_{d-1}."""
    ones = [[1] * d]
    return cert([0] * d, [1] * d, [(ones, [0], "identity")],
                [layer(0, ones, [1], [0], "relu"), layer(1, [[1]], [1], [0], "identity")], [2])


def test_wide_box_builds_no_identity_matrix():
    """d = 30,000: the old checkers built a dense 30,000 x 30,000 identity (15-50 GB). Both run
    in a child limited to 2 GiB of address space."""
    code = ("import resource, sys, json;"
            "resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30));"
            "from exactnorm import checker, checker_flint;"
            "doc = json.loads(sys.stdin.read());"
            "a, b = checker.check_certificate(doc), checker_flint.check_certificate(doc);"
            "sys.exit(0 if a.ok and a == b else 1)")
    res = subprocess.run([sys.executable, "-c", code], input=json.dumps(wide_box(30_000)),
                         capture_output=True, text=True, check=False, cwd=ROOT, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]


def test_affine_map_size_is_bounded_before_allocating(monkeypatch):
    """A 1-wide bottleneck followed by a wide layer: the map would be 10,000 x 10,000."""
    d = 10_000
    doc = cert([0] * d, [1] * d, [([[1] * d] * 2, [0, 0], "identity")],
               [layer(0, [[1] * d], [1], [0], "relu"),
                layer(1, [[1]] * d, [1] * d, [0] * d, "relu"),
                layer(2, [[1] * d] * 2, [1, 1], [0, 0], "identity")], [3])
    v = both(doc)
    assert v.rule == "limit" and v.layer == 2 and str(checker.MAX_MAP_ENTRIES) in v.message


# ------------------------------------------------------------------ 7. standalone checker


def standalone(*args, timeout=30):
    return subprocess.run([sys.executable, "-m", "exactnorm.checker", *args],
                          capture_output=True, text=True, check=False, cwd=ROOT, timeout=timeout)


def test_standalone_refuses_fifo_device_directory_and_missing_file(tmp_path):
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    for path, words in ((fifo, "is a FIFO"), ("/dev/zero", "is a device"),
                        (tmp_path, "is a directory"), (tmp_path / "nope.json", "no such")):
        res = standalone(str(path), timeout=20)
        assert res.returncode == 2 and words in res.stderr, (path, res.stderr)
        assert "Traceback" not in res.stderr


def test_standalone_honours_the_size_limit(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps(simple()))
    size = path.stat().st_size
    assert standalone(str(path), "--max-bytes", str(size)).returncode == 0
    res = standalone(str(path), "--max-bytes", str(size - 1))
    assert res.returncode == 2 and "exceeds" in res.stderr


# ------------------------------------------------------------------ 8. broken pipe


@pytest.mark.parametrize("command", [["-m", "exactnorm", "check"], ["-m", "exactnorm.checker"]])
def test_closed_stdout_is_not_invalid(tmp_path, command):
    path = tmp_path / "c.json"
    path.write_text(json.dumps(simple()))
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will ever read the verdict
    res = subprocess.run([sys.executable, *command, str(path)], stdout=write_end,
                         stderr=subprocess.PIPE, text=True, check=False, cwd=ROOT)
    os.close(write_end)
    assert res.returncode == EXIT_BROKEN_PIPE == checker.EXIT_BROKEN_PIPE, res.stderr
    assert "Traceback" not in res.stderr


# ------------------------------------------------------------------ 9. digit limits


def test_one_digit_limit_for_strings_and_integers():
    big = "7" * 250_000
    for value in (big, checker.decimal_int(big)):
        doc = simple()
        doc["target"]["layers"][0]["bias"] = [value]
        assert both(doc).rule == "number"  # default 200,000
        v = both(doc, max_digits=300_000)
        assert v.rule == "identity", v  # read as a number, then simply wrong
    text = json.dumps(simple()).replace('"bias": [1]', f'"bias": ["{big}"]')
    assert checker.check_certificate_text(text, max_digits=300_000).rule == "identity"
    assert checker_flint.check_certificate_text(text, max_digits=300_000).rule == "identity"


def test_provenance_free_text_is_not_a_number():
    doc = simple()
    doc["provenance"] = {"construction": "1" * 300_000, "stream_keys": "2" * 300_000}
    assert both(doc).ok
    assert checker.check_certificate_text(json.dumps(doc)).ok


# ------------------------------------------------------------------ 10. messages


@pytest.mark.parametrize("edit, rule, words", [
    (lambda d: d["network"]["layers"][1]["weight"][0].__setitem__(0, "2/0"), "number",
     'network layer 2 weight[0][0]: zero denominator in "2/0"'),
    (lambda d: d["target"]["layers"][0]["bias"].__setitem__(0, None), "number",
     "target layer 1 bias[0]: null is not an exact number"),
    (lambda d: d["network"]["layers"][0].__setitem__("activation", True), "format",
     'network layer 1: "activation" must be a string, got true'),
    (lambda d: d["network"]["layers"][0].__setitem__("activation", "tanh"), "format",
     'network layer 1: activation "tanh" is not relu/identity'),
    (lambda d: d.__setitem__("version", {"p": 1}), "format", 'unsupported version {"p": 1}'),
    (lambda d: d["network"].__setitem__("layers", {"1": {}}), "format",
     'certificate network: "layers" must be an array, got {"1": {}}'),
    (lambda d: d["target"].__setitem__("layers", {}), "format",
     'certificate target: "layers" must be an array, got {}'),
    (lambda d: d["target"].__setitem__("layers", []), "shape", "target has no layers"),
])
def test_messages_name_the_place_in_json(edit, rule, words):
    doc = simple()
    edit(doc)
    v = both(doc)
    assert v.rule == rule and words in v.message, v


def test_float_message_does_not_ask_to_write_a_version_as_a_fraction():
    text = json.dumps(simple()).replace('"version": 1', '"version": 1.0')
    v = checker.check_certificate_text(text)
    assert v.rule == "number" and "write" not in v.message and '"1.0"' in v.message


def test_directory_is_called_a_directory(tmp_path, capsys):
    code, _, err = run(["check", str(tmp_path)], capsys)
    assert code == 2 and "is a directory" in err and "no such" not in err


# ------------------------------------------------------------------ 11. degenerate neuron


@pytest.mark.parametrize("target_weight", [0, 1])
def test_point_box_neuron_with_min_equal_max_zero(target_weight):
    """On the point box x = 0, h = relu(x) is 0: it is both "x" and "0" there. g(x) = w·x is
    f = h there for every w, and the checker accepts both readings (the identity rule
    compares on the box)."""
    doc = cert([0], [0], [([[target_weight]], [0], "identity")],
               [layer(0, [[1]], [1], [0], "relu"), layer(1, [[1]], [1], [0], "identity")], [2])
    v = both(doc)
    assert v.ok, v
    doc["target"]["layers"][0]["bias"] = [1]  # false on the point: refused
    assert both(doc).rule == "identity"


@pytest.mark.parametrize("bad", [5, None, 1.5, True, "x", []])
def test_a_target_layer_that_is_no_object_is_refused_not_crashed(bad):
    """A target layer given as a number, null, a string or a list is refused with rule format
    by both arithmetics (an integer used to escape as a TypeError from the topology reader)."""
    doc = cert([0], [1], [([[1]], [0], "identity")] * 2,
               [layer(0, [[1]], [1], [0], "identity"), layer(1, [[1]], [1], [0], "identity")],
               [1, 2])
    doc["target"]["layers"][1] = bad
    v = both(doc)
    assert not v.ok and v.rule == "format" and "target layer 2" in v.message, v
