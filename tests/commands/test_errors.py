"""The error hierarchy and how the CLI reports errors (issue 9).

Exit codes (``exactnorm.cli``): 0 success, 1 invalid certificate, 2 bad input (any InputError,
usage errors, unreadable or unwritable files, inputs too large or too deep), 3 an internal error
(a bug), 130 interrupted. Every error is one line on stderr; ``--debug`` shows the traceback.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import exactnorm.commands.check as check_command
from exactnorm import errors
from exactnorm.cli import main
from exactnorm.errors import (
    ExactnormError,
    InputError,
    InvalidCertificateError,
    InvariantError,
    LimitExceededError,
    NumberFormatError,
    PadicUnavailable,
    ShapeError,
    SingularSystemError,
)


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path, monkeypatch):
    """A command without --out writes ./certificate.json, which the next would refuse to
    overwrite: every test runs in its own folder."""
    monkeypatch.chdir(tmp_path)


def run_cli(argv, capsys):
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


# ----------------------------------------------------------------------------- hierarchy


def test_hierarchy():
    for cls in (NumberFormatError, ShapeError, LimitExceededError):
        assert issubclass(cls, InputError)
    for cls in (InputError, SingularSystemError, InvalidCertificateError):
        assert issubclass(cls, ExactnormError)
    # InputError is also a ValueError so that generic callers can catch it the usual way
    assert issubclass(InputError, ValueError)
    assert not issubclass(SingularSystemError, InputError)
    assert not issubclass(InvalidCertificateError, InputError)
    assert set(errors.__all__) == {"ExactnormError", "InputError", "NumberFormatError",
                                   "ShapeError", "LimitExceededError", "SingularSystemError",
                                   "InvalidCertificateError", "NotACertificateError",
                                   "InvariantError",
                                   "PadicUnavailable", "require_integer", "MissingExtraError",
                                   "OPTIONAL_MODULES", "missing_extra_message", "require_extra"}
    assert InvariantError("x").exit_code == 3
    assert issubclass(PadicUnavailable, ExactnormError)
    assert issubclass(errors.MissingExtraError, InputError)


def test_exit_code_attributes():
    assert InvalidCertificateError("x").exit_code == 1
    for cls in (ExactnormError, InputError, NumberFormatError, ShapeError, LimitExceededError):
        assert cls("x").exit_code == 2
    exc = SingularSystemError("singular", rank=3, size=4, kernel=[1, -1, 0, 0], layer=2)
    assert exc.exit_code == 2 and (exc.rank, exc.size, exc.kernel, exc.layer) == (3, 4,
                                                                                 [1, -1, 0, 0], 2)


# ----------------------------------------------------------------------------- mapping


def _raiser(exc: BaseException):
    def run(args):
        raise exc
    return run


@pytest.mark.parametrize("exc, code, prefix", [
    (InputError("bad option"), 2, "exactnorm: error: bad option"),
    (NumberFormatError("float 0.5 is not allowed"), 2, "exactnorm: error: float 0.5"),
    (ShapeError("ragged"), 2, "exactnorm: error: ragged"),
    (LimitExceededError("too wide"), 2, "exactnorm: error: too wide"),
    (SingularSystemError("singular draw", rank=1, size=2), 2, "exactnorm: error: singular"),
    (InvalidCertificateError("tampered"), 1, "exactnorm: error: tampered"),
    (InputError("first line\nsecond line\nthird"), 2, "exactnorm: error: first line"),
    (FileNotFoundError(2, "No such file or directory", "missing.json"), 2,
     "exactnorm: error: No such file or directory: missing.json"),
    (PermissionError(13, "Permission denied", "/root/x"), 2, "exactnorm: error: Permission"),
    (MemoryError(), 2, "exactnorm: error: out of memory (MemoryError)"),
    (RecursionError(), 2, "exactnorm: error: input too deeply nested"),
    (RuntimeError("unexpected\nstate"), 3, "exactnorm: internal error: RuntimeError: unexpected"),
    (ZeroDivisionError("fmpz_mat singular"), 3, "exactnorm: internal error: ZeroDivisionError"),
    (KeyError("x"), 3, "exactnorm: internal error: KeyError"),
    (KeyboardInterrupt(), 130, "exactnorm: interrupted"),
])
def test_exit_code_mapping(monkeypatch, capsys, exc, code, prefix):
    monkeypatch.setattr(check_command, "run", _raiser(exc))
    got, out, err = run_cli(["check", "whatever.json"], capsys)
    assert got == code
    assert one_line(err).startswith(prefix), err
    assert out == ""


def test_internal_error_is_one_line_and_asks_for_debug(monkeypatch, capsys):
    monkeypatch.setattr(check_command, "run", _raiser(AssertionError("x" * 10_000)))
    code, _, err = run_cli(["check", "c.json"], capsys)
    assert code == 3
    line = one_line(err)
    assert "--debug" in line and len(line) < 450


def test_debug_shows_the_traceback_and_keeps_the_exit_code(monkeypatch, capsys):
    """--debug adds the traceback; the exit code stays the documented one (3 for a bug, 2 for
    bad input), so a script sees the same code with or without it."""
    monkeypatch.setattr(check_command, "run", _raiser(RuntimeError("boom")))
    assert main(["--debug", "check", "c.json"]) == 3
    err = capsys.readouterr().err
    assert "Traceback" in err and "RuntimeError: boom" in err
    monkeypatch.setattr(check_command, "run", _raiser(ShapeError("ragged")))
    assert main(["--debug", "check", "c.json"]) == 2 == main(["check", "c.json"])
    err = capsys.readouterr().err
    assert err.count("Traceback") == 1 and err.count("exactnorm: error: ragged") == 2


def test_debug_shows_traceback_in_a_real_process(tmp_path):
    bad = tmp_path / "t.json"
    bad.write_text('{"domain": {"lower": [0], "upper": [1]}, '
                   '"target": {"layers": [{"weight": [[0.5]], "bias": [0]}]}}')
    cmd = [sys.executable, "-m", "exactnorm.cli", "certify", "--target", str(bad), "--out",
           str(tmp_path / "c.json")]
    plain = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert plain.returncode == 2
    assert one_line(plain.stderr).startswith("exactnorm: error: JSON float 0.5 is not allowed")
    debug = subprocess.run(cmd[:3] + ["--debug"] + cmd[3:], capture_output=True, text=True,
                           timeout=120)
    assert debug.returncode != 0
    assert "Traceback (most recent call last)" in debug.stderr
    assert "NumberFormatError" in debug.stderr
    assert not (tmp_path / "c.json").exists()


# ----------------------------------------------------------------------------- real errors


GOOD = {"domain": {"lower": [-1, 0], "upper": [1, "1/2"]},
        "target": {"layers": [{"weight": [[1, "1/2"], [0, -1]], "bias": [0, 1],
                               "activation": "relu"},
                              {"weight": [[2, 3]], "bias": ["-1/3"], "activation": "identity"}]}}


@pytest.mark.parametrize("text, needle", [
    (json.dumps(GOOD).replace('"1/2"]}', "0.5]}"), "JSON float"),
    (json.dumps(GOOD).replace('"-1/3"', "NaN"), "NaN"),
    (json.dumps(GOOD).replace('"-1/3"', '"1/0"'), "zero denominator"),
    (json.dumps(GOOD).replace('"-1/3"', '"1e999"'), "not an exact number"),
    (json.dumps(GOOD).replace('"-1/3"', "true"), "true is not an exact number"),
    (json.dumps(GOOD).replace('"-1/3"', "null"), "null is not an exact number"),
    (json.dumps(GOOD).replace('"-1/3"', '"١"'), "not an exact number"),
    (json.dumps(GOOD).replace('{"domain"', '{"target": {}, "domain"', 1), "duplicated JSON key"),
    (json.dumps(GOOD).replace("[[2, 3]]", "[[2, 3], [1]]"), "row 1 has 1 entries, expected 2"),
    (json.dumps(GOOD).replace("[[2, 3]]", "[]"), "non-empty"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ('{"domain": ', "not valid JSON"),
    (b"\xff\xfe\x00garbage", "not valid JSON"),
])
def test_bad_target_files_exit_2_with_a_reason(tmp_path, capsys, text, needle):
    path = tmp_path / "t.json"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    out = tmp_path / "c.json"
    code, _, err = run_cli(["certify", "--target", str(path), "--out", str(out)], capsys)
    assert code == 2, err
    line = one_line(err)
    assert line.startswith("exactnorm: error:") and needle.lower() in line.lower(), line
    assert not out.exists()


@pytest.mark.parametrize("argv", [
    ["certify", "--bogus"],
    ["certify", "--seed", "x"],
    ["nosuchcommand"],
    ["check"],
    ["certify", "--max-width", "0"],
    ["certify", "--max-digits", "-1"],
    ["certify", "--seed", "-1"],
    ["certify", "--jobs", "0"],
    ["certify", "--retry", "-5"],
    ["certify", "--box", "1:0"],
    ["certify", "--box", "a:b"],
    ["certify", "--distribution", "zz:3"],
    ["certify", "--distribution", "int:0"],
    ["certify", "--sparsity", "nan"],
    ["certify", "--sparsity", "-0.5"],
    ["certify", "--target", "/nonexistent/t.json"],
    ["check", "/nonexistent/c.json"],
    ["check", "/", "--max-bytes", "10"],
    ["check", "c.json", "--max-digits", "0"],
    ["realizable", "--d-in", "-1", "--d-out", "2", "--width", "3"],
    ["realizable", "--d-in", "2", "--d-out", "2", "--width", "0"],
    ["realizable", "--d-in", "100", "--d-out", "100", "--width", "3"],
    ["detpoly", "--d-in", "-1", "--d-out", "2"],
    ["detpoly", "--d-in", "3", "--d-out", "3"],
    ["detpoly", "--matching", "--d-in", "1000", "--d-out", "1000"],
    ["sparse-sweep", "--sizes", "-3"],
    ["sparse-sweep", "--p-grid", "2"],
    ["sparse-sweep", "--p-grid", "nan"],
    ["sparse-sweep", "--draws", "-1"],
    ["sparse-sweep", "--factors", "-1"],
    ["tables", "--only", "NOPE"],
])
def test_bad_options_exit_2_in_one_line(tmp_path, capsys, monkeypatch, argv):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(argv, capsys)
    assert code == 2, (argv, err)
    assert one_line(err).startswith("exactnorm"), err
    assert list(tmp_path.iterdir()) == []  # nothing written, not even a folder


def test_set_distribution_with_huge_values_is_an_input_error():
    from exactnorm.exact.sampling import layer_rng, parse_distribution, sample_matrix

    with pytest.raises(InputError):
        sample_matrix(layer_rng(0, 1), 2, 2, parse_distribution("set:" + str(10**23)))


def test_unwritable_output_is_exit_2(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, _, err = run_cli(["certify", "--out", str(blocker / "c.json")], capsys)
    assert code == 2 and one_line(err).startswith("exactnorm: error:")


def test_tampered_certificate_is_exit_1(tmp_path, capsys):
    cert = tmp_path / "c.json"
    assert run_cli(["certify", "--out", str(cert)], capsys)[0] == 0
    doc = json.loads(cert.read_text())
    doc["network"]["layers"][0]["gamma"][0] = "12345/7"
    cert.write_text(json.dumps(doc))
    code, out, err = run_cli(["check", str(cert), "--both"], capsys)
    assert code == 1 and out.count("INVALID") == 2 and err == ""
    # not a certificate at all
    cert.write_text('{"format": "exactnorm.detpoly", "version": 1}')
    code, out, _ = run_cli(["check", str(cert)], capsys)
    assert code == 1 and "INVALID" in out


# ----------------------------------------------------------------------------- parameters vs flags


def test_library_names_the_parameter_and_the_cli_the_flag(capsys):
    from exactnorm.constructions.theorem1 import certify_theorem1
    from exactnorm.model.targets import demo_target

    with pytest.raises(InputError) as info:
        certify_theorem1(demo_target(), retry=-1)
    assert str(info.value).startswith("retry must be non-negative")
    assert info.value.parameter == "retry" and "--" not in str(info.value)
    assert main(["certify", "--retry", "-1", "--no-check", "--out", "unused.json"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("exactnorm: error: --retry must be non-negative") and err.count("\n") == 1


@pytest.mark.parametrize("call, parameter", [
    (lambda: __import__("exactnorm.constructions.lowrank", fromlist=["x"]).certify_lowrank(
        __import__("exactnorm.model.targets", fromlist=["x"]).demo_target(), rank=0), "rank"),
    (lambda: __import__("exactnorm.constructions.tradeoff", fromlist=["x"]).certify_tradeoff(
        __import__("exactnorm.model.targets", fromlist=["x"]).demo_target(), block=0), "block"),
    (lambda: __import__("exactnorm.model.box", fromlist=["x"]).Box.parse("1"), "box"),
    (lambda: __import__("exactnorm.api", fromlist=["x"]).realizable(0, d_in=1, d_out=1),
     "width"),
    (lambda: __import__("exactnorm.analysis.structural", fromlist=["x"]).structural_rank(
        [[True]], method="dense"), "method"),
])
def test_parameter_errors_carry_the_parameter(call, parameter):
    with pytest.raises(InputError) as info:
        call()
    assert info.value.parameter == parameter
    assert str(info.value).split()[0].strip(":") in (parameter, "unknown", "inverted") \
        or parameter in str(info.value)
    assert "--" not in str(info.value)


def test_render_error_replaces_whole_words_only():
    from exactnorm.cli import render_error

    e = InputError("/data/box.npz has no box; box_size is fine", parameter="box")
    assert render_error(e) == "/data/box.npz has no --box; box_size is fine"
    assert render_error(InputError("retry must be ≥ 0")) == "retry must be ≥ 0"


def test_structural_errors_are_exactnorm_errors():
    from exactnorm.analysis.structural import permutation_from_monomial, schwartz_zippel_bound

    with pytest.raises(InputError):
        schwartz_zippel_bound(-1, 3)
    with pytest.raises(InputError):
        permutation_from_monomial([("x", 0, 0), ("x", 0, 1)], 2)


def test_invariant_failures_are_not_assertions(monkeypatch):
    """A witness that does not check itself is an InvariantError (exit 3), also under -O: a
    rank oracle that hides the augmented rank makes the reduced-row-echelon γ fail K γ = vec W."""
    from flint import fmpq_mat, fmpz_mat

    from exactnorm.analysis import realizability

    real_rank = realizability.exact_rank
    monkeypatch.setattr(realizability, "exact_rank",
                        lambda M: real_rank(M) if M.ncols() == 1 else real_rank(M) - 1)
    with pytest.raises(InvariantError) as info:
        realizability.decide_realizable(fmpz_mat([[1, 0]]), fmpz_mat([[1], [0]]),
                                        fmpq_mat([[0, 0], [0, 1]]))
    assert info.value.exit_code == 3


@pytest.mark.parametrize("value, minimum, message", [
    (True, 0, "retry must be an integer, got True"),
    (2.0, 0, "retry must be an integer, got 2.0"),
    (-1, 0, "retry must be non-negative, got -1"),
    (0, 1, "retry must be positive, got 0"),
    (2, 3, "retry must be at least 3, got 2"),
])
def test_require_integer_wording(value, minimum, message):
    from exactnorm.errors import require_integer

    with pytest.raises(InputError) as info:
        require_integer(value, "retry", minimum=minimum)
    assert str(info.value) == message and info.value.parameter == "retry"
    assert require_integer(minimum, "retry", minimum=minimum) == minimum


# ----------------------------------------------------------------------------- npz shapes

_GOOD_W, _GOOD_B = np.array([[1.0, 2.0, 0.5], [0.0, -1.0, 3.0]]), np.array([0.5, -1.0])
_NPZ_SHAPE_CASES = {
    "zero rows": ({"W": np.zeros((0, 3)), "b": np.zeros(0)}, "W"),
    "zero columns": ({"W": np.zeros((2, 0)), "b": np.zeros(2)}, "W"),
    "0-d weight": ({"W": np.array(1.0), "b": np.zeros(1)}, "W"),
    "zero-length bias": ({"W": _GOOD_W, "b": np.zeros(0)}, "b"),
    "0-d bias": ({"W": _GOOD_W[:1], "b": np.array(1.0)}, "b"),
    "2-D bias": ({"W": _GOOD_W, "b": _GOOD_B.reshape(1, 2)}, "b"),
    "empty activations": ({"W": _GOOD_W, "b": _GOOD_B,
                           "activations": np.array([], dtype=str)}, "activations"),
    "0-d activations": ({"W": _GOOD_W, "b": _GOOD_B,
                         "activations": np.array("relu")}, "activations"),
    "empty box": ({"W": _GOOD_W, "b": _GOOD_B, "lower": np.zeros(0),
                   "upper": np.zeros(0)}, "lower"),
    "0-d box": ({"W": _GOOD_W, "b": _GOOD_B, "lower": np.array(0.0),
                 "upper": np.array(1.0)}, "lower"),
}


def _npz_names(layout: str, key: str) -> str:
    if layout == "W1, b1":
        return {"W": "W1", "b": "b1"}.get(key, key)
    return {"W": "0.weight", "b": "0.bias"}.get(key, key)


@pytest.mark.parametrize("layout", ["W1, b1", "state dict"])
@pytest.mark.parametrize("case", sorted(_NPZ_SHAPE_CASES))
def test_npz_target_with_empty_or_0d_arrays_is_a_clear_input_error(case, layout, tmp_path,
                                                                   capsys):
    """Regression: a ``W1`` with zero rows was ``internal error: IndexError``, exit 3. Both
    ``.npz`` readers share one validation, so every case is exit 2 naming the array."""
    arrays, bad = _NPZ_SHAPE_CASES[case]
    path = tmp_path / "t.npz"
    np.savez(path, **{_npz_names(layout, k): v for k, v in arrays.items()})
    out = tmp_path / "c.json"
    code, _, err = run_cli(["certify", "--target", str(path), "--box", "-1:1", "--out",
                            str(out)], capsys)
    line = one_line(err)
    assert code == 2, line
    assert "internal error" not in line and _npz_names(layout, bad) in line, line
    assert not out.exists()


@pytest.mark.parametrize("layout", ["W1, b1", "state dict"])
def test_npz_target_with_good_shapes_still_loads(layout, tmp_path, capsys):
    """The same arrays with proper shapes certify: the refusals above are about the shapes."""
    path = tmp_path / "t.npz"
    np.savez(path, **{_npz_names(layout, "W"): _GOOD_W, _npz_names(layout, "b"): _GOOD_B,
                      "activations": np.array(["identity"]), "lower": -np.ones(3),
                      "upper": np.ones(3)})
    code, _, err = run_cli(["certify", "--target", str(path), "--out",
                            str(tmp_path / "c.json")], capsys)
    assert code == 0, err


def test_require_extra_names_an_existing_extra(monkeypatch):
    """Every registered optional module maps to an extra of pyproject.toml (torch: by hand), a
    missing one is a MissingExtraError (exit 2), and nothing outside the registry is imported."""
    import re
    import sys
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    section = text.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    extras = set(re.findall(r"^(\w+) = \[", section, flags=re.M))
    for module, extra in errors.OPTIONAL_MODULES.items():
        assert extra in extras or extra == "torch", (module, extra)
        if extra != "torch":
            assert f"exactnorm[{extra}]" in errors.missing_extra_message(module, "x")
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(errors.MissingExtraError,
                       match=r"^the export needs onnx, .*'exactnorm\[onnx\]'$"):
        errors.require_extra("onnx", "the export")
    assert errors.MissingExtraError("x").exit_code == 2
    with pytest.raises(KeyError):
        errors.require_extra("os", "anything")
