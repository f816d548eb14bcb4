"""The CLI: exit codes 0/1/2, one-line errors without tracebacks, summary output."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pytest

from exactnorm.certificate import decode_compact
from exactnorm.cli import main


def run(argv, capsys):
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path, monkeypatch):
    """A command without --out writes ./certificate.json, which the next would refuse to
    overwrite: every test runs in its own folder."""
    monkeypatch.chdir(tmp_path)


GOOD = {"domain": {"lower": [-1, 0], "upper": [1, "1/2"]},
        "target": {"layers": [{"weight": [[1, "1/2"], [0, -1]], "bias": [0, 1],
                               "activation": "relu"},
                              {"weight": [[2, 3]], "bias": ["-1/3"], "activation": "identity"}]}}


def write(tmp_path, name, obj):
    p = tmp_path / name
    p.write_text(obj if isinstance(obj, str) else json.dumps(obj))
    return str(p)


def test_certify_demo_and_check(tmp_path, capsys):
    out = str(tmp_path / "c.json")
    code, stdout, _ = run(["certify", "--out", out], capsys)
    assert code == 0
    assert "VALID" in stdout and "exact rank" in stdout
    for extra in ([], ["--pure"], ["--both"]):
        code, stdout, _ = run(["check", out, *extra], capsys)
        assert code == 0 and "VALID" in stdout


def test_check_rejects_tampered_certificate(tmp_path, capsys):
    out = tmp_path / "c.json"
    assert run(["certify", "--target", write(tmp_path, "t.json", GOOD), "--out", str(out)],
               capsys)[0] == 0
    doc = json.loads(out.read_text())
    doc["network"]["layers"][1]["beta"][0] = "12345/7"
    out.write_text(json.dumps(doc))
    code, stdout, err = run(["check", str(out)], capsys)
    assert code == 1 and "INVALID" in stdout and "Traceback" not in err


BAD_TARGETS = {
    "float": json.dumps(GOOD).replace('"1/2"]}', '0.5]}'),
    "nan": json.dumps(GOOD).replace('"-1/3"', "NaN"),
    "ragged": {**GOOD, "target": {"layers": [{"weight": [[1, 2], [3]], "bias": [0, 0]}]}},
    "width": {**GOOD, "target": {"layers": [{"weight": [[1, 2, 3]], "bias": [0]}]}},
    "inverted": {**GOOD, "domain": {"lower": [1, 0], "upper": [-1, 1]}},
    "empty": {**GOOD, "target": {"layers": []}},
    "activation": {**GOOD, "target": {"layers": [{"weight": [[1, 2]], "bias": [0],
                                                  "activation": "tanh"}]}},
    "bias": {**GOOD, "target": {"layers": [{"weight": [[1, 2]], "bias": [0, 1]}]}},
    "not json": "{oops",
    "zero den": json.dumps(GOOD).replace('"-1/3"', '"1/0"'),
    "bool": json.dumps(GOOD).replace('"-1/3"', "true"),
    "no domain": {"target": GOOD["target"]},
    "list": [1, 2, 3],
}


@pytest.mark.parametrize("name", sorted(BAD_TARGETS))
def test_bad_targets_exit_2_one_line(tmp_path, capsys, name):
    path = write(tmp_path, "bad.json", BAD_TARGETS[name])
    code, _, err = run(["certify", "--target", path, "--out", str(tmp_path / "c.json")], capsys)
    assert code == 2, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("exactnorm: error:"), err
    assert "Traceback" not in err
    assert not (tmp_path / "c.json").exists()


def test_box_option_and_npz(tmp_path, capsys):
    npz = tmp_path / "t.npz"
    np.savez(npz, W1=np.array([[0.5, -0.25], [1.0, 2.0]]), b1=np.array([0.1, 0.0]),
             W2=np.array([[1, -1]]), b2=np.array([3]))
    code, _, err = run(["certify", "--target", str(npz), "--out", str(tmp_path / "c.json")],
                       capsys)
    assert code == 2 and "--box" in err
    code, stdout, _ = run(["certify", "--target", str(npz), "--box", "-1:1", "--out",
                           str(tmp_path / "c.json")], capsys)
    assert code == 0 and "VALID" in stdout
    doc = decode_compact(json.loads((tmp_path / "c.json").read_text()))
    # 0.1 became its exact dyadic value, not 1/10
    assert doc["target"]["layers"][0]["bias"][0] == "3602879701896397/36028797018963968"
    assert run(["certify", "--box", "1:-1"], capsys)[0] == 2


@pytest.mark.parametrize("argv", [
    ["certify", "--seed", "-1"], ["certify", "--distribution", "uniform"],
    ["certify", "--distribution", "int:x"], ["certify", "--retry", "-2"],
    ["check", "/no/such/file.json"], ["nosuchcommand"], ["certify", "--max-width", "2"],
])
def test_usage_errors_exit_2(tmp_path, capsys, argv):
    code, _, err = run(argv + (["--out", str(tmp_path / "c.json")] if argv[0] == "certify"
                               and "--max-width" not in argv else []), capsys)
    if argv == ["certify", "--max-width", "2"]:
        # the demo is not read from a file, so the width limit does not apply to it
        assert code == 0
        return
    assert code == 2 and "Traceback" not in err


def test_max_width_limits_files(tmp_path, capsys):
    path = write(tmp_path, "t.json", GOOD)
    code, _, err = run(["certify", "--target", path, "--max-width", "1"], capsys)
    assert code == 2 and "width" in err


def test_corrupted_certificate_files_exit_1(tmp_path, capsys):
    for text in ["{", '{"format": "exactnorm.certificate", "version": 1}', "[]",
                 '{"format": "exactnorm.certificate", "version": 1, "domain": 1.5}']:
        p = write(tmp_path, "c.json", text)
        for extra in ([], ["--pure"]):
            code, stdout, err = run(["check", p, *extra], capsys)
            assert code == 1, (text, stdout, err)
            assert "Traceback" not in err


def test_singular_draw_is_exit_2_with_rank(tmp_path, capsys):
    path = write(tmp_path, "t.json", GOOD)
    for seed in range(100):
        code, _, err = run(["certify", "--target", path, "--distribution", "set:0,1", "--seed",
                            str(seed), "--out", str(tmp_path / "c.json")], capsys)
        if code != 0:
            assert code == 2 and "exact rank" in err
            return
    pytest.fail("no singular draw found for set:0,1")


def test_console_script_runs():
    res = subprocess.run([sys.executable, "-m", "exactnorm.cli", "--version"],
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0 and "exactnorm" in res.stdout


# --------------------------------------------------------------------------- conventions


def test_debug_flag_before_or_after_the_subcommand(tmp_path, capsys):
    from exactnorm.errors import InputError

    assert run(["check", str(tmp_path / "missing.json")], capsys)[0] == 2
    for argv in (["--debug", "check", str(tmp_path / "missing.json")],
                 ["check", str(tmp_path / "missing.json"), "--debug"]):
        # the traceback, then the one-line error, and the documented exit code (2, not 1)
        code, _, err = run(argv, capsys)
        assert code == 2 and "Traceback" in err and InputError.__name__ in err
        assert err.strip().splitlines()[-1].startswith("exactnorm: error: no such")


def test_pure_and_both_are_mutually_exclusive(tmp_path, capsys):
    code, _, err = run(["check", "--pure", "--both", str(tmp_path / "c.json")], capsys)
    assert code == 2 and "not allowed with argument" in err


def test_exit_code_3_for_internal_errors_and_130_for_interrupts(monkeypatch, capsys):
    import exactnorm.commands.check as check_cmd

    def boom(args):
        raise RuntimeError("a bug")

    monkeypatch.setattr(check_cmd, "run", boom)
    code, _, err = run(["check", "x.json"], capsys)
    assert code == 3 and "internal error" in err and "--debug" in err

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(check_cmd, "run", interrupted)
    code, _, err = run(["check", "x.json"], capsys)
    assert code == 130 and "interrupted" in err and "atomically" in err


def test_interrupted_sweep_says_what_was_kept_and_how_to_resume(tmp_path, monkeypatch, capsys):
    import exactnorm.analysis.sweeps

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(exactnorm.analysis.sweeps, "run_sweep", interrupted)
    out = tmp_path / "sw"
    code, _, err = run(["sparse-sweep", "--sizes", "2", "--draws", "1", "--no-plot",
                        "--out", str(out)], capsys)
    assert code == 130
    assert f"task log {out / 'tasks.jsonl'}" in err and f"--resume {out / 'tasks.jsonl'}" in err


def test_missing_out_folder_is_an_error_not_created(tmp_path, capsys):
    typo = tmp_path / "no_such_dir"
    for argv in (["certify", "--out", str(typo / "c.json")],
                 ["sparse-sweep", "--sizes", "2", "--draws", "1", "--out", str(typo / "s")],
                 ["tables", "--only", "T1", "--out", str(typo / "p")]):
        code, _, err = run(argv, capsys)
        assert code == 2 and "does not exist" in err and "Traceback" not in err
        assert not typo.exists()
    code, _, err = run(["certify", "--out", "-"], capsys)
    assert code == 2 and "standard output" in err


def test_without_matplotlib_sweep_and_t4_name_the_extra(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    code, _, err = run(["sparse-sweep", "--sizes", "2", "--draws", "1",
                        "--out", str(tmp_path / "s")], capsys)
    assert code == 2 and "exactnorm[plot]" in err and "--no-plot" in err
    assert err.count("\n") == 1
    code, _, err = run(["tables", "--only", "T1,T4", "--out", str(tmp_path / "p")], capsys)
    assert code == 2 and "the plot of table T4 needs matplotlib" in err
    assert "exactnorm[plot]" in err and not (tmp_path / "p").exists()
    from exactnorm.outputs.tables.sparse import plot_transitions

    with pytest.raises(Exception, match=r"exactnorm\[plot\]"):
        plot_transitions([], tmp_path / "t.png")


def test_readme_exit_code_table_is_complete():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text()
    section = readme.split("### Exit codes", 1)[1].split("\n## ", 1)[0]
    codes = {int(c) for c in re.findall(r"^\| `(\d+)` \|", section, flags=re.M)}
    guide = (root / "docs" / "user-guide.md").read_text()
    guide_codes = {int(c) for c in re.findall(r"^\| `(\d+)` \| ", guide, flags=re.M)}
    # the README's table is the user guide's, and names every status the CLI returns
    assert codes == guide_codes
    from exactnorm.api._capacity import EXIT_UNDECIDED
    from exactnorm.checker.vocabulary import EXIT_BROKEN_PIPE
    assert {0, 1, 2, 3, 124, 130, EXIT_BROKEN_PIPE, EXIT_UNDECIDED} <= codes
    assert "realizable" in section and "not reachable" in section
