"""Nothing uncertified leaves, reports on the user's data, and the sharp edges of issue 34:
export and report check first (a tampered certificate exits 1 and nothing is written), the
accuracies on ``--data X.npy --labels y.npy`` for an MLP and a CNN (cross-checked with
independent evaluations), dependency checks before work, estimates before work, progress totals
from the start and ETAs that move, exact decimal exponents in boxes, precise messages for
folders, empty and truncated files, and reports without overlong lines."""

from __future__ import annotations

import io
import json
import sys
from fractions import Fraction

import numpy as np
import pytest

from exactnorm import api
from exactnorm.certificate import expand_document, save_certificate
from exactnorm.cli import main
from exactnorm.errors import InvalidCertificateError
from exactnorm.exact.rationals import strict_json_loads


def run(argv, capsys):
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def demo_doc():
    return api.certificate_document(api.certify(api.demo_target(), seed=1))


def _tampered(doc):
    bad = expand_document(doc)
    g0 = bad["network"]["layers"][0]["gamma"][0]
    bad["network"]["layers"][0]["gamma"][0] = f"{g0}1" if isinstance(g0, str) else g0 + 1
    return bad


# ----------------------------------------------------------------------------- check first


@pytest.mark.parametrize("format", ["json", "npz", "onnx"])
def test_export_of_a_tampered_certificate_exits_1_and_writes_nothing(tmp_path, capsys,
                                                                     demo_doc, format):
    if format == "onnx":
        pytest.importorskip("onnx")
    bad = tmp_path / "bad.json"
    save_certificate(_tampered(demo_doc), bad)
    out = tmp_path / f"e.{format}"
    code, _, err = run(["export", str(bad), "--format", format, "--out", str(out)], capsys)
    assert code == 1 and not out.exists()
    # the checker's own reason: the same rule and message as `exactnorm check`
    verdict = api.check_file(bad)
    assert not verdict.ok and f"INVALID (rule {verdict.rule})" in err
    assert verdict.message[:60] in err
    code, stdout, _ = run(["export", str(bad), "--format", format, "--out", str(out),
                           "--no-check"], capsys)
    assert code == 0 and out.exists() and "not checked (--no-check)" in stdout


def test_the_api_accepts_a_verdict_from_the_same_process(tmp_path, demo_doc, monkeypatch):
    from exactnorm import checker_flint

    verdict = api.check(demo_doc)
    calls = []
    real = checker_flint.check_certificate
    monkeypatch.setattr(checker_flint, "check_certificate",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    result = api.export(demo_doc, tmp_path / "a.json", checked=verdict)
    assert calls == [] and result.verdict.ok
    api.export(demo_doc, tmp_path / "b.json")
    assert calls == [1]  # without one, the checker runs
    bad = _tampered(demo_doc)
    with pytest.raises(InvalidCertificateError, match="INVALID"):
        api.export(bad, tmp_path / "c.json", checked=api.check(bad))
    with pytest.raises(InvalidCertificateError):
        api.report(bad, tmp_path / "r")
    assert not (tmp_path / "c.json").exists() and not (tmp_path / "r").exists()


# ----------------------------------------------------------------------------- user's data


def _accuracies(stdout):
    got = {}
    for line in stdout.splitlines():
        if "accuracy" in line:
            name = ("exact" if "exact target" in line else
                    "float32" if "float32" in line else "float64")
            got[name] = float(line.rsplit("accuracy ", 1)[1].rstrip("%")) / 100
    return got


def test_report_on_data_prints_both_accuracies_for_an_mlp(tmp_path, capsys, demo_doc):
    g = api.demo_target()
    rng = np.random.default_rng(0)
    lo = np.array([float(v) for v in g.lower])
    hi = np.array([float(v) for v in g.upper])
    X = lo + rng.random((40, 3)) * (hi - lo)
    X[0] = hi + 1  # one sample outside the certified box: said so
    y = rng.integers(0, 2, 40)
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)
    cert = tmp_path / "c.json"
    save_certificate(demo_doc, cert)
    code, stdout, _ = run(["report", str(cert), "--out", str(tmp_path / "r"), "--data",
                           str(tmp_path / "X.npy"), "--labels", str(tmp_path / "y.npy")],
                          capsys)
    assert code == 0
    exact = np.array([np.argmax([Fraction(int(v.p), int(v.q))
                                 for v in g.evaluate([Fraction(t) for t in x])]) for x in X])
    acc = _accuracies(stdout)
    assert acc["exact"] == pytest.approx(np.mean(exact == y), abs=1e-4)
    assert acc["float64"] == pytest.approx(np.mean(exact == y), abs=1e-4)
    md = (tmp_path / "r" / "report.md").read_text()
    assert "## On your data" in md and "1 of 40 samples lie outside the certified box" in md
    assert "| exact target (the source) |" in md


def test_report_on_data_prints_both_accuracies_for_a_cnn(tmp_path, capsys):
    from exactnorm.certificate import read_networks as conv_networks_from_dict
    from tests.checker.test_fuzz import conv_certificate_pool

    doc = strict_json_loads(conv_certificate_pool()[0].encode(), what="pool")
    g, f = conv_networks_from_dict(doc)
    shape = f.layers[0].operator.geometry.input_shape
    rng = np.random.default_rng(1)
    X = rng.random((24, *shape))
    y = rng.integers(0, g.widths[-1], 24)
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)
    cert = tmp_path / "c.json"
    save_certificate(doc, cert)
    code, stdout, _ = run(["report", str(cert), "--out", str(tmp_path / "r"), "--data",
                           str(tmp_path / "X.npy"), "--labels", str(tmp_path / "y.npy")],
                          capsys)
    assert code == 0
    from flint import fmpq

    flat = X.reshape(len(X), -1)
    exact = np.array([np.argmax([Fraction(int(v.p), int(v.q)) for v in g.evaluate(
        [fmpq(*float(t).as_integer_ratio()) for t in x])]) for x in flat])
    other = np.argmax(f.evaluate_float(flat), axis=1)  # the exact network's own float path
    acc = _accuracies(stdout)
    assert acc["exact"] == pytest.approx(np.mean(exact == y), abs=1e-4)
    assert acc["float64"] == pytest.approx(np.mean(other == y), abs=1e-4)
    result = api.report(cert, None, data=X, labels=y, float_points=4)
    assert result.data["float64"]["changed"] == int(np.sum(other != exact))


def test_export_verify_on_data_against_the_source(tmp_path, capsys):
    """export --verify --source --data --labels: the export and the source on the same inputs,
    with sizes, latencies and the reason the export is larger."""
    pytest.importorskip("onnxruntime")
    from tests.model.test_interop_mainstream import _torch_like_onnx

    _torch_like_onnx(tmp_path / "t.onnx")
    cert = tmp_path / "c.json"
    assert main(["certify", str(tmp_path / "t.onnx"), "--box", "-1:1", "--out", str(cert)]) == 0
    rng = np.random.default_rng(2)
    X = rng.uniform(-1, 1, (30, 2, 2)).astype(np.float32)
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", rng.integers(0, 3, 30))
    capsys.readouterr()
    code, stdout, _ = run(["export", str(cert), "--format", "onnx", "--out",
                           str(tmp_path / "e.onnx"), "--verify", "5", "--source",
                           str(tmp_path / "t.onnx"), "--data", str(tmp_path / "X.npy"),
                           "--labels", str(tmp_path / "y.npy")], capsys)
    assert code == 0, stdout
    assert "verified on the box: 5 samples" in stdout and "on " in stdout
    assert "predictions changed 0/30" in stdout and "output 'output'" in stdout
    assert "(the source: " in stdout and "; the source: " in stdout
    assert "why larger" in stdout
    acc = [line for line in stdout.splitlines() if "accuracy" in line]
    assert len(acc) == 3  # the export, the exact target and the source
    with pytest.raises(Exception, match="labels go with data"):
        api.export(cert, tmp_path / "f.onnx", format="onnx", labels=tmp_path / "y.npy")


# ----------------------------------------------------------------------------- sharp edges


def test_a_missing_package_fails_before_any_work(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # as if torch were not installed
    missing = tmp_path / "missing.json"  # never read: the package is checked first
    code, _, err = run(["export", str(missing), "--format", "torch", "--out",
                        str(tmp_path / "t.pt")], capsys)
    assert code == 2 and "torch" in err and "missing.json" not in err
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    code, _, err = run(["export", str(missing), "--format", "onnx", "--out",
                        str(tmp_path / "t.onnx"), "--verify", "3"], capsys)
    assert code == 2 and "onnxruntime" in err and "missing.json" not in err


def test_estimates_are_printed_before_the_work(tmp_path, capsys, monkeypatch):
    import exactnorm.api as api_module

    seen = []
    real = api_module.certify_target

    def spy(*args, **kwargs):
        seen.append(capsys.readouterr().err)  # what the user saw when the work started
        return real(*args, **kwargs)

    monkeypatch.setattr(api_module, "certify_target", spy)
    assert main(["certify", "--demo", "--construction", "tradeoff", "--block", "1", "--out",
                 str(tmp_path / "c.json")]) == 0
    assert "tradeoff: " in seen[0] and "peak ≈" in seen[0] and "(estimated)" in seen[0]


def test_convolutional_estimate_before_the_work(tmp_path, capsys, monkeypatch):
    pytest.importorskip("onnx")
    import exactnorm.api as api_module
    from tests.model.test_conv import _onnx_cnn

    _onnx_cnn(tmp_path / "cnn.onnx")
    seen = []
    real = api_module.certify_target

    def spy(*args, **kwargs):
        seen.append(capsys.readouterr().err)
        return real(*args, **kwargs)

    monkeypatch.setattr(api_module, "certify_target", spy)
    assert main(["certify", str(tmp_path / "cnn.onnx"), "--box", "0:1", "--out",
                 str(tmp_path / "c.json")]) == 0
    # the plan, run by run, with its systems and cost, before the first system is solved
    assert "target layer 1 conv: Theorem 1 over channels" in seen[0]
    assert "system(s) of size" in seen[0] and "peak ≈" in seen[0]


@pytest.mark.parametrize("construction", ["theorem1", "tradeoff", "lowrank"])
def test_progress_knows_its_total_from_the_start(construction):
    seen: list[tuple[int, int]] = []
    options = {"block": 1} if construction == "tradeoff" else {}
    api.certify(api.demo_target(), construction, progress=lambda d, t: seen.append((d, t)),
                **options)
    assert seen[0][0] == 0 and seen[0][1] is not None
    assert {t for _, t in seen} == {seen[-1][1]} and seen[-1][0] == seen[-1][1]


def test_conv_progress_knows_its_total_from_the_start():
    from exactnorm.certificate import read_target as conv_target_from_dict
    from exactnorm.constructions.plan import construct
    from tests.checker.test_fuzz import conv_certificate_pool

    doc = strict_json_loads(conv_certificate_pool()[0].encode(), what="pool")
    target = conv_target_from_dict(doc)
    seen: list[tuple[int, int]] = []
    construct(target, progress=lambda d, t: seen.append((d, t)))
    assert seen[0] == (0, target.depth) and {t for _, t in seen} == {target.depth}


def test_progress_shows_no_none_and_the_eta_moves():
    from rich.progress import Progress

    from exactnorm.commands._common import PlainProgress, _CountColumn

    with Progress(disable=True) as p:
        task = p.add_task("x", total=None)
        assert str(_CountColumn("steps").render(p.tasks[task])) == "0/? steps"
    out = io.StringIO()
    clock = iter([0, 10, 16, 22, 28]).__next__
    plain = PlainProgress("conv", out, every=5, clock=clock, unit="target layers", total=4)
    plain(1, 4)  # at 10 s: 1 of 4, so about 30 s to go
    plain.tick()
    plain.tick()
    plain.tick()
    etas = [line.rsplit("ETA ", 1)[1] for line in out.getvalue().splitlines()]
    assert etas[0] == "30 s" and len(set(etas)) == len(etas)  # counts down, never stands still


def test_decimal_exponents_in_a_box_are_exact(tmp_path, capsys):
    target = tmp_path / "t.json"
    doc = {"target": {"layers": [{"weight": [[1, 2]], "bias": [0], "activation": "identity"}]}}
    target.write_text(json.dumps(doc))
    cert = tmp_path / "c.json"
    code, _, err = run(["certify", str(target), "--box", "-2.5e-1:1e-3", "--out", str(cert)],
                       capsys)
    assert code == 0, err
    dom = api.load_certificate(cert)["domain"]
    values = dom["upper"]["num"] if isinstance(dom["upper"], dict) else dom["upper"]
    den = dom["upper"].get("den", 1) if isinstance(dom["upper"], dict) else 1
    assert {Fraction(v) / den for v in values} == {Fraction(1, 1000)}
    out = tmp_path / "e.json"
    assert main(["export", str(cert), "--out", str(out), "--format", "json", "--scale",
                 "5e-1"]) == 0
    assert json.loads(out.read_text())["layers"][0]["scale"][0] == "1/2"


def test_folders_empty_and_truncated_files_are_named(tmp_path, capsys):
    onnx = pytest.importorskip("onnx")
    from tests.model.test_interop_mainstream import _torch_like_onnx

    folder = tmp_path / "model.onnx"
    folder.mkdir()
    (tmp_path / "empty.onnx").write_bytes(b"")
    _torch_like_onnx(tmp_path / "t.onnx")
    raw = (tmp_path / "t.onnx").read_bytes()
    (tmp_path / "cut.onnx").write_bytes(raw[:len(raw) // 2])
    (tmp_path / "empty.json").write_bytes(b"")
    cases = [
        (["certify", str(folder), "--box", "0:1"], "is a folder, not an ONNX model"),
        (["certify", str(tmp_path / "empty.onnx"), "--box", "0:1"], "is empty (0 bytes)"),
        (["certify", str(tmp_path / "cut.onnx"), "--box", "0:1"],
         "truncated or not an ONNX model"),
        (["certify", str(tmp_path / "t.onnx"), "--box-file", str(tmp_path)],
         "is a folder, not a box file"),
        (["check", str(tmp_path / "empty.json")], "is empty (0 bytes)"),
        (["report", str(tmp_path / "empty.json")], "is empty (0 bytes)"),
    ]
    for argv, message in cases:
        code, _, err = run(argv + ["--out", str(tmp_path / "x")] if argv[0] == "certify"
                           else argv, capsys)
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1, (argv, err)
        assert "no such" not in err and "0 data inputs" not in err
    assert onnx is not None


def test_reports_have_no_overlong_lines(tmp_path):
    """A deep certificate (the trade-off: many frozen layers) and a convolutional one: widths
    lists are summarised and prose is wrapped (the LeNet report had a 5,652-character line)."""
    from tests.checker.test_fuzz import conv_certificate_pool

    deep = api.certificate_document(api.certify(api.demo_target(), "tradeoff", block=1))
    conv = strict_json_loads(conv_certificate_pool()[0].encode(), what="pool")
    for doc in (deep, conv):
        md = api.report(doc, None, float_points=4).markdown
        long = [ln for ln in md.splitlines() if len(ln) > 100 and not ln.startswith("|")]
        assert not long, long[:2]
    md = api.report(deep, None, float_points=0).markdown
    assert "values, from" in md  # the frozen widths, summarised
