"""Safety guards (issue 9, docs/model.md): FLINT hazards, no code execution from files, explicit
limits, atomic outputs, Ctrl-C during a long ``certify``.

Several tests run Python in a subprocess on purpose: FLINT's modular elimination with a composite
modulus calls ``abort()``, which no ``try`` can catch; only a separate process shows that the
interpreter survives (or, for the hazard itself, that it would not).
"""

from __future__ import annotations

import ast
import gzip
import json
import os
import pickle
import re
import signal
import subprocess
import sys
import textwrap
import time
import tokenize
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from flint import fmpq_mat, fmpz_mat, nmod_mat

import exactnorm
from exactnorm import api
from exactnorm.api import load_target
from exactnorm.certificate import (
    certificate_bytes,
    certificate_document,
    load_certificate,
    save_target,
)
from exactnorm.cli import main
from exactnorm.errors import InputError, LimitExceededError
from exactnorm.exact import linalg
from exactnorm.exact.files import atomic_write_bytes
from exactnorm.model.targets import random_target

PACKAGE = Path(exactnorm.__file__).parent
SOURCES = sorted(PACKAGE.rglob("*.py"))


def run_python(code: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout)


def run_cli(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


# ----------------------------------------------------------------------------- FLINT hazards

# 15, 4: plain composites; 561: a Carmichael number; 3215031751: a strong pseudoprime to the
# bases 2, 3, 5 and 7 (a Miller–Rabin test with those bases calls it prime); 1, 0, -7: not
# moduli at all; 2^64 + 13: beyond nmod_mat's word size.
NOT_PRIMES = [15, 4, 561, 3215031751, 1, 0, -7, 2**64 + 13]


def test_composite_modulus_refused_in_subprocess():
    """rank_mod_prime refuses every non-prime with InputError and the interpreter lives on."""
    proc = run_python(f"""
        from flint import fmpz_mat
        from exactnorm.errors import InputError
        from exactnorm.exact.linalg import rank_mod_prime
        M = fmpz_mat([[3, 1], [6, 5]])   # singular mod 3: elimination mod 15 would abort
        for p in {NOT_PRIMES!r}:
            try:
                rank_mod_prime(M, p)
                print("ACCEPTED", p)
            except InputError as exc:
                print("refused", p, "|", exc)
        print("rank mod 7 =", rank_mod_prime(M, 7))
        print("alive")
    """)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-1] == "alive"
    assert "ACCEPTED" not in proc.stdout
    assert sum(line.startswith("refused") for line in lines) == len(NOT_PRIMES)
    assert "rank mod 7 = 2" in proc.stdout  # det = 9, a unit mod 7


def test_composite_modulus_never_reaches_flint(monkeypatch):
    """The primality check comes first: nmod_mat is not even constructed for a composite."""
    calls = []

    def spy(*args):
        calls.append(args)
        return nmod_mat(*args)

    monkeypatch.setattr(linalg, "nmod_mat", spy)
    M = fmpz_mat([[3, 1], [6, 5]])
    for p in NOT_PRIMES:
        with pytest.raises(InputError, match="prime|integer"):
            linalg.rank_mod_prime(M, p)
    assert calls == []
    assert linalg.rank_mod_prime(M, 7) == 2 and len(calls) == 1
    for p in (True, 7.0, "7"):
        with pytest.raises(InputError):
            linalg.rank_mod_prime(M, p)


def test_the_hazard_is_real():
    """Why the guard exists: the same matrix handed to FLINT mod 15 kills the process."""
    proc = run_python("""
        from flint import nmod_mat
        nmod_mat([[3, 1], [6, 5]], 15).rank()
        print("survived")
    """)
    if proc.returncode == 0:
        pytest.skip("this FLINT build no longer aborts on composite moduli")
    assert "survived" not in proc.stdout
    assert proc.returncode < 0 or proc.returncode == 134  # SIGABRT


def test_padic_expansion_refuses_composite_modulus():
    proc = run_python("""
        import numpy as np
        from exactnorm.errors import ExactnormError
        from exactnorm.exact.padic import padic_expansion
        try:
            padic_expansion(np.array([[3, 0], [0, 5]]), np.array([[1]]), [1, 1], 15, 2)
            print("ACCEPTED")
        except (ExactnormError, ValueError) as exc:
            print("refused", exc)
    """)
    assert proc.returncode == 0 and "refused" in proc.stdout, (proc.returncode, proc.stderr[-300:])


def test_flint_matrices_do_not_pickle_and_are_never_pickled():
    """flint matrices refuse pickling (the hazard), so process pools must ship integer lists:
    a certification spread over 2 processes works and equals the serial one."""
    for M in (fmpz_mat([[1, 2]]), fmpq_mat([[1, 2]])):
        with pytest.raises(TypeError):
            pickle.dumps(M)
    g = random_target((2, 2, 2), seed=5)
    serial = certificate_bytes(certificate_document(api.certify(g, seed=3, retry=8)))
    parallel = certificate_bytes(certificate_document(api.certify(g, seed=3, retry=8, jobs=2)))
    assert serial == parallel


# ----------------------------------------------------------------------------- nothing executed

# Names that, in code (not in comments or strings), would mean text from a file can be run or
# unpickled. The allowlist is empty: exactnorm builds every SymPy object from Symbol/Integer/
# Rational constructors and never parses expressions.
FORBIDDEN_NAMES = {"eval", "exec", "pickle", "cPickle", "cloudpickle", "dill", "marshal",
                   "shelve", "sympify", "parse_expr", "__import__", "yaml", "os.system"}
SYMPIFY_ALLOWLIST: set[str] = set()
# importlib.import_module with module names from an internal registry only: the command modules,
# the optional packages of errors.require_extra and the API's submodules imported on first use
# (paths from the package folder)
IMPORT_MODULE_ALLOWLIST = {"cli.py": "COMMAND_MODULES", "errors.py": "OPTIONAL_MODULES",
                           "api/__init__.py": "_LAZY"}


def code_names(path: Path) -> list[tuple[int, str]]:
    """NAME tokens of a source file: comments, docstrings and strings are not code."""
    with open(path, "rb") as fh:
        return [(tok.start[0], tok.string) for tok in tokenize.tokenize(fh.readline)
                if tok.type == tokenize.NAME]


def test_no_eval_exec_pickle_or_sympify_in_the_package():
    hits = []
    for path in SOURCES:
        for line, name in code_names(path):
            if name in FORBIDDEN_NAMES and f"{path.name}:{name}" not in SYMPIFY_ALLOWLIST:
                hits.append(f"{path.relative_to(PACKAGE)}:{line}: {name}")
    assert hits == []


def test_dangerous_calls_are_absent_or_allowlisted():
    """AST view: builtin compile(), np.load without allow_pickle=False, subprocess/os.system,
    and importlib.import_module outside the two registries."""
    problems = []
    for path in SOURCES:
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                mods = [a.name for a in node.names] if isinstance(node, ast.Import) \
                    else [node.module or ""]
                if any(m.split(".")[0] in {"pickle", "marshal", "shelve", "subprocess", "dill",
                                           "cloudpickle", "yaml"} for m in mods):
                    problems.append(f"{path.name}:{node.lineno} imports {mods}")
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else \
                func.attr if isinstance(func, ast.Attribute) else ""
            if isinstance(func, ast.Name) and name in {"compile", "eval", "exec"}:
                problems.append(f"{path.name}:{node.lineno} calls builtin {name}")
            if name == "system":
                problems.append(f"{path.name}:{node.lineno} calls system()")
            if name == "load" and isinstance(func, ast.Attribute) \
                    and isinstance(func.value, ast.Name) and func.value.id in {"np", "numpy"}:
                flags = {kw.arg: kw.value for kw in node.keywords}
                value = flags.get("allow_pickle")
                if not (isinstance(value, ast.Constant) and value.value is False):
                    problems.append(f"{path.name}:{node.lineno} np.load without "
                                    f"allow_pickle=False")
            if name == "import_module" \
                    and path.relative_to(PACKAGE).as_posix() not in IMPORT_MODULE_ALLOWLIST:
                problems.append(f"{path.name}:{node.lineno} import_module outside the registries")
    assert problems == []
    for fname, registry in IMPORT_MODULE_ALLOWLIST.items():
        assert registry in (PACKAGE / fname).read_text()


# ----------------------------------------------------------------------------- atomic outputs

# The only non-atomic writer: the sparse-sweep task log is a resumable append-only journal by
# design (its damaged last line is dropped on --resume), rewritten atomically before appending.
APPEND_ALLOWLIST = {("sweeps.py", "a")}


def test_every_output_file_goes_through_atomic_write():
    problems = []
    for path in SOURCES:
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else \
                func.attr if isinstance(func, ast.Attribute) else ""
            # writing into the atomic writer's file object (fh) or an in-memory buffer (buf)
            # that is then handed to atomic_write_bytes is fine; a path is not
            in_memory = bool(node.args) and isinstance(node.args[0], ast.Name) \
                and node.args[0].id in {"fh", "buf"}
            if name in {"write_text", "write_bytes", "to_csv"} or \
                    (name in {"savez", "savez_compressed"} and not in_memory):
                problems.append(f"{path.name}:{node.lineno} {name}")
            if name == "savefig" and node.args and not in_memory:
                problems.append(f"{path.name}:{node.lineno} savefig to a path")
            if name == "open" and isinstance(func, ast.Name):
                mode = node.args[1] if len(node.args) > 1 else next(
                    (kw.value for kw in node.keywords if kw.arg == "mode"), None)
                text = mode.value if isinstance(mode, ast.Constant) else "r"
                if set(text) & set("wax+") and (path.name, text) not in APPEND_ALLOWLIST:
                    problems.append(f"{path.name}:{node.lineno} open(..., {text!r})")
    assert problems == []


class Boom(Exception):
    pass


@pytest.mark.parametrize("exc", [Boom, KeyboardInterrupt])
def test_atomic_write_leaves_old_file_or_nothing(tmp_path, exc):
    target = tmp_path / "sub" / "out.json"

    def failing(fh):
        fh.write(b"half a cert")
        raise exc

    with pytest.raises(exc):
        atomic_write_bytes(target, failing)
    assert not target.exists()
    assert list((tmp_path / "sub").iterdir()) == []
    atomic_write_bytes(target, lambda fh: fh.write(b"complete"))
    with pytest.raises(exc):
        atomic_write_bytes(target, failing)
    assert target.read_bytes() == b"complete"
    assert [p.name for p in (tmp_path / "sub").iterdir()] == ["out.json"]


def test_interrupt_while_writing_certificate_exits_130(tmp_path, capsys, monkeypatch):
    """Ctrl-C exactly during the write: exit 130, one line, no file, no temp file."""
    import exactnorm.certificate.write as certificate

    def interrupted(doc):
        # the streaming writer has opened its temporary file and written a first piece
        yield "{"
        raise KeyboardInterrupt

    monkeypatch.setattr(certificate, "_encode_stream", interrupted)
    out = tmp_path / "c.json"
    code, _, err = run_cli(["certify", "--demo", "--out", str(out)], capsys)
    assert code == 130
    # off a terminal, progress lines ("theorem1: 3/3 target layers, …") precede the message
    err = "\n".join(line for line in err.splitlines()
                    if not re.match(r"^\w+: \d+/\d+ ", line))
    assert err.strip().splitlines() == [
        "exactnorm: interrupted; files are written atomically, so no partial output file was kept"]
    assert list(tmp_path.iterdir()) == []


def _wait_for_cpu_seconds(pid: int, seconds: float, timeout: float = 60.0) -> None:
    """Wait until process ``pid`` has used ``seconds`` of CPU time (Linux ``/proc``; elsewhere a
    fixed sleep). Wall time is no measure on a loaded machine: a signal sent during the imports
    tests the interpreter, not exactnorm's interrupt handling."""
    stat = Path(f"/proc/{pid}/stat")
    if not stat.exists():
        time.sleep(seconds)
        return
    tick = os.sysconf("SC_CLK_TCK")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, IndexError):
            return  # the process ended; the caller's poll() says so
        if (int(fields[11]) + int(fields[12])) / tick >= seconds:
            return
        time.sleep(0.05)


def test_sigint_during_long_certify_leaves_no_file(tmp_path):
    """A real SIGINT into ``python -m exactnorm.cli certify`` on a 24×24 target with 40-bit
    frozen weights (about 8 s of work): exit 130, one line on stderr (after any progress line), no
    output, no temp file."""
    target = tmp_path / "big.json"
    save_target(random_target((24, 24), seed=3), target)
    out = tmp_path / "X.json"
    proc = subprocess.Popen([sys.executable, "-m", "exactnorm.cli", "certify", "--target",
                             str(target), "--out", str(out), "--distribution", "bits:40",
                             "--construction", "theorem1"],  # the plan would take the fast
                            # trade-off for this target
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for_cpu_seconds(proc.pid, 2.5)  # past the imports, inside the exact solve
    assert proc.poll() is None, "certify finished before the interrupt; make the target bigger"
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    # off a terminal, plain progress lines (a heartbeat during a long layer) may come first
    # the estimate is printed before the work
    lines = [ln for ln in stderr.strip().splitlines()
             if not ln.startswith(("theorem1", "--jobs auto"))]
    assert lines == [
        "exactnorm: interrupted; no certificate was written (a construction keeps no partial "
        "state); run the same command again to start over"], stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.json"]


# ----------------------------------------------------------------------------- limits


def test_max_width_limit_and_override(tmp_path, capsys):
    path = tmp_path / "t.json"
    save_target(random_target((3, 3), seed=1), path)
    code, _, err = run_cli(["certify", "--target", str(path), "--out", str(tmp_path / "c.json"),
                            "--max-width", "2"], capsys)
    assert code == 2 and "--max-width" in err and len(err.strip().splitlines()) == 1
    code, _, _ = run_cli(["certify", "--target", str(path), "--out", str(tmp_path / "c.json"),
                          "--max-width", "3", "--retry", "8"], capsys)
    assert code == 0


def test_max_digits_limit_and_override(tmp_path, capsys):
    doc = {"domain": {"lower": [0], "upper": [1]},
           "target": {"layers": [{"weight": [["1" + "0" * 40]], "bias": [7 * 10**40],
                                  "activation": "identity"}]}}
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    out = tmp_path / "c.json"
    code, _, err = run_cli(["certify", "--target", str(path), "--out", str(out),
                            "--max-digits", "20"], capsys)
    assert code == 2 and "more than 20 digits" in err and not out.exists()
    code, _, _ = run_cli(["certify", "--target", str(path), "--out", str(out),
                          "--max-digits", "41", "--retry", "8"], capsys)
    assert code == 0 and out.exists()


def test_long_json_integer_refused_before_quadratic_conversion(tmp_path):
    """A 3-million-digit integer literal would take CPython minutes to convert; it is refused
    from its length alone."""
    path = tmp_path / "t.json"
    path.write_text('{"domain": {"lower": [0], "upper": [1]}, "target": {"layers": '
                    '[{"weight": [[' + "9" * 3_000_000 + ']], "bias": [0]}]}}')
    t0 = time.perf_counter()
    with pytest.raises(LimitExceededError, match="more than"):
        load_target(path)
    assert time.perf_counter() - t0 < 5


def test_max_bytes_on_check_and_gzip_bomb(tmp_path, capsys):
    cert = tmp_path / "c.json"
    assert run_cli(["certify", "--out", str(cert)], capsys)[0] == 0
    size = cert.stat().st_size
    code, _, err = run_cli(["check", str(cert), "--max-bytes", str(size - 1)], capsys)
    assert code == 2 and "--max-bytes" in err
    assert run_cli(["check", str(cert), "--max-bytes", str(size)], capsys)[0] == 0
    # 200 MB of blanks compress to about 200 kB; the limit stops inflation at 1 MB
    bomb = tmp_path / "bomb.json.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as fh:
        chunk = b" " * (1 << 20)
        for _ in range(200):
            fh.write(chunk)
    t0 = time.perf_counter()
    code, _, err = run_cli(["check", str(bomb), "--max-bytes", "1000000"], capsys)
    assert code == 2 and "above the limit 1000000" in err and "gzip trailer" in err
    assert time.perf_counter() - t0 < 5
    # a trailer that lies (announces 0 bytes) does not help: inflation stops at the limit
    data = bytearray(bomb.read_bytes())
    data[-4:] = b"\0\0\0\0"
    bomb.write_bytes(data)
    t0 = time.perf_counter()
    code, _, err = run_cli(["check", str(bomb), "--max-bytes", "1000000"], capsys)
    assert code == 2 and "exceeds 1000000 bytes" in err
    assert time.perf_counter() - t0 < 5
    with pytest.raises(LimitExceededError):
        load_certificate(bomb, max_bytes=10**6)


def test_corrupt_gzip_certificate_is_unreadable_input_not_a_crash(tmp_path, capsys):
    """A corrupt, truncated or fake ``.gz`` is unreadable input (exit 2, with or without
    --debug), said to be a gzip problem, for every verb that reads a certificate, and for a
    target file too (not "bad JSON")."""
    cert = tmp_path / "c.json.gz"
    assert run_cli(["certify", "--out", str(cert)], capsys)[0] == 0
    raw = bytearray(cert.read_bytes())
    truncated = tmp_path / "t.json.gz"
    truncated.write_bytes(bytes(raw[:len(raw) // 2]))
    fake = tmp_path / "fake.json.gz"
    fake.write_text("hello")
    raw[len(raw) // 2] ^= 0xFF
    cert.write_bytes(bytes(raw))
    for path in (cert, truncated, fake):
        for argv in (["check", str(path)], ["report", str(path), "--out", "-"],
                     ["export", str(path), "--format", "json", "--out",
                      str(tmp_path / "e.json")], ["check", str(path), "--debug"]):
            code, _, err = run_cli(argv, capsys)
            last = err.strip().splitlines()[-1]
            assert code == 2 and "truncated or corrupt gzip" in last, (argv, err)
            assert len(err.strip().splitlines()) == 1 or "--debug" in argv
    code, _, err = run_cli(["certify", "--target", str(truncated), "--out",
                            str(tmp_path / "x.json")], capsys)
    assert code == 2 and "truncated gzip file" in err and "JSON" not in err


def test_npz_bomb_refused_from_header(tmp_path, capsys):
    """A 2 MB-compressed .npz declaring a 10^6 × 2 weight is refused before loading it."""
    path = tmp_path / "t.npz"
    np.savez_compressed(path, W1=np.zeros((10**6, 2)), b1=np.zeros(10**6))
    code, _, err = run_cli(["certify", "--target", str(path), "--box", "0:1", "--out",
                            str(tmp_path / "c.json")], capsys)
    assert code == 2 and "width limit" in err


def test_npz_floats_convert_exactly_and_pickles_are_refused(tmp_path):
    path = tmp_path / "t.npz"
    np.savez(path, W1=np.array([[0.1, -2.5]]), b1=np.array([1 / 3]))
    g = load_target(path, box=(Fraction(0), Fraction(1)))
    w = g.layers[0].weight
    assert Fraction(int(w[0, 0].numer()), int(w[0, 0].denom())) == Fraction(0.1)
    obj = tmp_path / "o.npz"
    np.savez(obj, W1=np.array([[1, 2]], dtype=object), b1=np.array([0]))
    with pytest.raises(InputError):
        load_target(obj, box=(Fraction(0), Fraction(1)))


def test_load_certificate_limits(tmp_path):
    cert = tmp_path / "c.json"
    cert.write_bytes(b'{"format": "exactnorm.certificate", "version": 1, "x": ' +
                     b"1" * 500 + b"}")
    with pytest.raises(LimitExceededError):
        load_certificate(cert, max_bytes=100)
    with pytest.raises(LimitExceededError):
        load_certificate(cert, max_digits=100)
    assert load_certificate(cert)["version"] == 1


def test_stderr_is_not_flooded_by_a_huge_bad_value(tmp_path, capsys):
    doc = {"domain": {"lower": [0], "upper": [1]},
           "target": {"layers": [{"weight": [["x" * 100_000]], "bias": [0]}]}}
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    code, _, err = run_cli(["certify", "--target", str(path), "--out", str(tmp_path / "c")],
                           capsys)
    assert code == 2 and len(err) < 400
