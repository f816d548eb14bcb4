"""``exactnorm report``: files written, counts equal an independent count from the JSON."""

from __future__ import annotations

import copy
import json
import math
import re
import sys

import numpy as np
import pytest

from exactnorm import api
from exactnorm.certificate import (
    certificate_document,
    expand_document,
    float_network,
    read_frozen,
    save_certificate,
)
from exactnorm.cli import main
from exactnorm.constructions.theorem1 import certify_theorem1
from exactnorm.errors import InvalidCertificateError, MissingExtraError
from exactnorm.model.targets import demo_target, random_target
from exactnorm.outputs.report import (
    FLOAT_ERROR_POINTS,
    NO_PLOTS,
    _histogram_png,
    architecture_lines,
    markdown_to_html,
    parameter_counts,
    report_markdown,
    write_report,
)

pytest.importorskip("matplotlib")


def _independent_counts(doc):
    """Counts straight from the certificate's JSON lists (no exactnorm parsing)."""
    doc = expand_document(doc)  # plain lists, frozen weights written out
    layers = doc["network"]["layers"]
    tuned = sum(len(L["gamma"]) + len(L["beta"]) for L in layers)
    frozen = sum(len(L["weight"]) * len(L["weight"][0]) for L in layers)
    frozen += sum(len(s["weight"]) * len(s["weight"][0]) for L in layers
                  for s in L.get("skip", []) if s["kind"] == "random")
    target = sum(len(T["weight"]) * len(T["weight"][0]) + len(T["bias"])
                 for T in doc["target"]["layers"])
    return {"tuned": tuned, "frozen": frozen, "target": target}


@pytest.fixture(scope="module", params=["demo", "random"])
def cert(request):
    g = api.demo_target() if request.param == "demo" else random_target([2, 3, 1], seed=4)
    doc = api.certificate_document(api.certify(g, seed=3), version=1)
    # round trip through JSON so that the independent count sees what a file holds
    return json.loads(json.dumps(expand_document(doc)))


def test_report_files_and_counts(cert, tmp_path):
    result = write_report(cert, tmp_path / "r")
    names = sorted(p.name for p in (tmp_path / "r").iterdir())
    assert names == ["beta_bits.png", "float_error.png", "gamma_bits.png", "magnitudes.png",
                     "report.html", "report.md"]
    for png in ("beta_bits.png", "gamma_bits.png", "magnitudes.png", "float_error.png"):
        assert (tmp_path / "r" / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    expected = _independent_counts(cert)
    assert parameter_counts(cert) == expected == result["counts"]
    md = (tmp_path / "r" / "report.md").read_text()
    for kind, label in (("tuned", "tuned (γ, β)"), ("frozen", "frozen"), ("target", "target")):
        row = re.search(rf"^\| {re.escape(label)} \| (\d+) \|", md, flags=re.M)
        assert row and int(row.group(1)) == expected[kind]
    assert "For all x in the box D, f(x) = g(x)" in md and "**VALID**" in md
    html_text = (tmp_path / "r" / "report.html").read_text()
    assert html_text.startswith("<!DOCTYPE html>") and "s &gt; 0" in html_text
    assert "<td>" + str(expected["tuned"]) + "</td>" in html_text
    # one architecture line per node, checkpoints marked where the certificate says
    lines = architecture_lines(read_frozen(cert).float_copy())
    assert len(lines) == len(cert["network"]["layers"]) + 1
    marked = [int(m.group(1)) for m in (re.match(r"node (\d+) .*\[checkpoint", ln)
                                         for ln in lines) if m]
    assert marked == cert["network"]["checkpoints"]


def test_counts_with_skips(cert):
    """Random skip matrices are frozen parameters; identity/selection skips are structure."""
    doc = expand_document(cert)  # plain lists to edit
    layers = doc["network"]["layers"]
    w1, w2 = len(layers[1]["weight"]), len(layers[0]["weight"])
    d0 = len(doc["domain"]["lower"])
    # node 2 gets skips from node 0 (random) and node 1 (identity-shaped, declared selection)
    layers[1]["skip"] = [
        {"from": 0, "kind": "random", "weight": [[(r + c) % 3 - 1 for c in range(d0)]
                                                 for r in range(w1)]},
        {"from": 1, "kind": "selection", "weight": [[int(r == c) for c in range(w2)]
                                                    for r in range(w1)]},
    ]
    counts = parameter_counts(doc)
    assert counts == _independent_counts(doc)
    assert counts["frozen"] == _independent_counts(expand_document(cert))["frozen"] + w1 * d0
    # a skip on a checkpoint is refused by the checker's rules: the float view reads it
    assert "random from node 0, selection from node 1" in architecture_lines(
        float_network(doc))[2]


def test_report_is_deterministic(cert, tmp_path):
    write_report(cert, tmp_path / "a")
    write_report(cert, tmp_path / "b")
    names = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert len(names) == 6
    for name in names:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_cli_report_exit_codes(cert, tmp_path, capsys):
    cpath = tmp_path / "c.json"
    save_certificate(cert, cpath)
    assert main(["report", str(cpath), "--out", str(tmp_path / "ok")]) == 0
    assert (tmp_path / "ok" / "report.html").is_file()
    bad = expand_document(cert)  # plain lists to edit
    g0 = bad["network"]["layers"][0]["gamma"][0]
    bad["network"]["layers"][0]["gamma"][0] = f"{g0}1" if isinstance(g0, str) else g0 + 1
    save_certificate(bad, tmp_path / "bad.json")
    capsys.readouterr()
    # nothing uncertified leaves: the checker runs first and an INVALID certificate gets no
    # report, exit 1 with the checker's reason
    assert main(["report", str(tmp_path / "bad.json"), "--out", str(tmp_path / "bad")]) == 1
    err = capsys.readouterr().err
    assert "INVALID (rule" in err and "nothing was written" in err
    assert not (tmp_path / "bad").exists()
    # --no-check writes it and says so; the outputs layer still reports the INVALID verdict
    assert main(["report", str(tmp_path / "bad.json"), "--out", str(tmp_path / "bad"),
                 "--no-check"]) == 0
    assert "not checked (--no-check)" in capsys.readouterr().out
    unchecked = (tmp_path / "bad" / "report.md").read_text()
    assert "NOT CHECKED" in unchecked and "What is proven" not in unchecked
    write_report(bad, tmp_path / "direct")
    bad_md = (tmp_path / "direct" / "report.md").read_text()
    assert "**INVALID**" in bad_md and "NOT proven" in bad_md and "What is proven" not in bad_md
    assert main(["report", str(tmp_path / "missing.json"), "--out", str(tmp_path / "x")]) == 2
    capsys.readouterr()


def test_missing_matplotlib_writes_the_report_without_plots(cert, tmp_path, monkeypatch,
                                                            capsys):
    # import → ImportError, also for submodules that an earlier test already imported
    for name in ("matplotlib", "matplotlib.figure", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, name, None)
    result = write_report(cert, tmp_path / "r")
    assert result["plots"] is False
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == ["report.html", "report.md"]
    md = (tmp_path / "r" / "report.md").read_text()
    assert NO_PLOTS in md and ".png" not in md
    html_text = (tmp_path / "r" / "report.html").read_text()
    assert "<img" not in html_text and "matplotlib is not installed" in html_text
    cpath = tmp_path / "c.json"
    save_certificate(cert, cpath)
    assert main(["report", str(cpath), "--out", str(tmp_path / "cli")]) == 0
    assert "exactnorm[plot]" in capsys.readouterr().err
    # the histogram function itself names the extra
    with pytest.raises(MissingExtraError, match=r"pip install 'exactnorm\[plot\]'"):
        _histogram_png([1, 2], "γ")


def test_html_is_rendered_markdown_not_literal_markup(cert, tmp_path):
    """Bold, code and tables are HTML elements; raw HTML from a certificate stays text."""
    write_report(cert, tmp_path / "r")
    html_text = (tmp_path / "r" / "report.html").read_text()
    assert "<strong>VALID</strong>" in html_text and "**VALID**" not in html_text
    assert re.search(r"<code>[^<]+</code>", html_text) and "`" not in html_text
    assert "<table>" in html_text and "<h2>Verdict (python-flint checker)</h2>" in html_text
    evil = copy.deepcopy(cert)
    evil["provenance"] = {"construction": "<script>alert(1)</script>"}
    page = markdown_to_html(report_markdown(evil))
    assert "<script>" not in page and "&lt;script&gt;" in page


def test_report_markdown_to_stdout(cert, tmp_path, capsys):
    cpath = tmp_path / "c.json"
    save_certificate(cert, cpath)
    assert main(["report", str(cpath), "--out", "-"]) == 0
    out = capsys.readouterr()
    assert out.out.startswith("# exactnorm certificate report") and "**VALID**" in out.out
    assert "VALID (flint checker)" in out.err and not (tmp_path / "-").exists()


def test_report_out_with_missing_parent_is_an_error(cert, tmp_path, capsys):
    cpath = tmp_path / "c.json"
    save_certificate(cert, cpath)
    assert main(["report", str(cpath), "--out", str(tmp_path / "typo" / "r")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert not (tmp_path / "typo").exists()


def test_report_of_a_long_gamma_uses_integer_bit_sizes(tmp_path):
    """A γ with more than 4,300 decimal digits (an ordinary Theorem-1 certificate at 64-32-10
    has such numbers) is measured by bit_length, never through decimal text (it exited 3)."""
    import sys

    from exactnorm.outputs.report import write_report

    doc = certificate_document(certify_theorem1(demo_target(), seed=1), version=1)
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        doc["network"]["layers"][0]["gamma"][0] = f"1/{10**6000 + 1}"
    finally:
        sys.set_int_max_str_digits(old)
    out = write_report(doc, tmp_path)
    md = (tmp_path / "report.md").read_text()
    bits = (10**6000 + 1).bit_length()
    assert f"max {bits} bits" in md, md
    assert not out["verdict"].ok  # the edited γ breaks the identity: the report says so
    assert "NOT proven" in md


def test_long_architectures_are_summarised(tmp_path):
    from exactnorm.model.network import FrozenNetwork
    from exactnorm.outputs.report import ARCHITECTURE_LINES, architecture_lines

    c = certify_theorem1(demo_target(), seed=1)
    net = c.network
    layers = net.layers * (ARCHITECTURE_LINES // len(net.layers) + 2)
    long_net = FrozenNetwork(net.input_dim, layers, (len(layers),))
    lines = architecture_lines(long_net.float_copy())
    assert len(lines) <= 23 and any("..." in line for line in lines), lines


@pytest.mark.parametrize("construction,options", [("theorem1", {}), ("tradeoff", {"block": 1}),
                                                  ("tradeoff", {"block": 1, "routing": "mask"}),
                                                  ("lowrank", {})])
def test_report_reads_the_float_copy_and_agrees_with_the_exact_network(
        construction, options):
    """The report reads the frozen network as its float copy (no exact matrix is built); its
    counts, bit sizes and architecture equal those of the exact network's own float copy, and
    its γ, β are the exact values."""
    from exactnorm.outputs import report as rep

    g = random_target((3, 4, 2), seed=5)
    doc = api.certificate_document(api.certify(g, construction, seed=1, **options))
    target, light = rep._networks(doc)
    exact = read_frozen(doc)
    assert rep.parameter_counts(doc, (target, light)) == rep.parameter_counts(
        doc, (target, exact.float_copy()))
    assert [(x.gamma, x.beta) for x in light.layers] == [(tuple(x.gamma), tuple(x.beta))
                                                        for x in exact.layers]
    assert rep._bits(light) == rep._bits(exact)
    assert rep.architecture_lines(light) == rep.architecture_lines(exact.float_copy())


def test_report_progress_fills_once_and_monotonically(cert, tmp_path):
    seen: list[tuple[int, int]] = []
    api.report(cert, tmp_path / "r", progress=lambda d, t: seen.append((d, t)))
    depth = len(cert["network"]["layers"])
    totals = {t for _, t in seen}
    # check and float copy one step per frozen layer, then read, plots and write
    assert totals == {2 * depth + 3}
    done = [d for d, _ in seen]
    assert done == sorted(done) and done[-1] == 2 * depth + 3
    text_only: list[tuple[int, int]] = []
    api.report(cert, None, float_points=0, progress=lambda d, t: text_only.append((d, t)))
    # the check and the read of the float copy, one step per frozen layer, and the target
    assert text_only[-1] == (2 * depth + 1, 2 * depth + 1)


def test_report_magnitudes_are_those_of_the_exact_values(cert):
    """log10 |γ|, |β| from the integers, against Fraction arithmetic on the JSON lists."""
    import math
    from fractions import Fraction

    from exactnorm.outputs.report import _networks, magnitudes

    mag = magnitudes(_networks(cert)[1])
    plain = expand_document(cert)
    for name in ("gamma", "beta"):
        values = [Fraction(x) for L in plain["network"]["layers"] for x in L[name]]
        logs = [math.log10(abs(x)) for x in values if x]
        assert mag[f"{name}_zeros"] == sum(x == 0 for x in values)
        assert len(mag[name]) == len(logs)
        assert max(abs(a - b) for a, b in zip(mag[name], logs)) < 1e-9


def test_report_float_error_agrees_with_onnxruntime_and_flags_float32(tmp_path):
    """The report's float error is measured by NumPy on the float copy; onnxruntime on the
    exported model at the same points must see the same prediction changes. A target whose two
    outputs differ by 2^-40 is resolved exactly but not in float32: the report says so."""
    pytest.importorskip("onnxruntime")
    from fractions import Fraction

    from exactnorm.model.network import TargetNetwork

    tiny = Fraction(1, 2**40)
    g = TargetNetwork.from_lists([[[1], [1]]], [[0, tiny]], ["identity"], lower=[0], upper=[1])
    doc = certificate_document(certify_theorem1(g, seed=0))
    result = api.report(doc, tmp_path / "r", float_points=10)
    f32, f64 = result.float_errors["float32"], result.float_errors["float64"]
    assert f64["argmax_agree"] == 10 > f32["argmax_agree"]
    md = (tmp_path / "r" / "report.md").read_text()
    assert f"changes the largest output at {10 - f32['argmax_agree']} of 10 points" in md
    for dtype, errs in (("float32", f32), ("float64", f64)):
        text = api.export(doc, tmp_path / f"{dtype}.onnx", format="onnx", dtype=dtype,
                          normalization="muladd", verify=10, allow_float32_error=True)
        assert f"largest output agrees at {errs['argmax_agree']}/10" in text
    # the demo's float64 copy is accurate: the measurement is not always alarming
    demo = api.report(api.certificate_document(api.certify(demo_target(), seed=1)), None)
    assert demo.float_errors["float64"]["argmax_agree"] == FLOAT_ERROR_POINTS
    assert demo.float_errors["float64"]["max_rel"] < 1e-9


def test_report_rejects_bad_float_points(cert):
    from exactnorm.errors import InputError

    for bad in (-1, 1.5, True, 10**9):
        with pytest.raises(InputError, match="float_points"):
            api.report(cert, None, float_points=bad)


def test_report_of_a_convolutional_certificate(tmp_path):
    """Counts against the JSON itself (γ, β per channel; a kernel counted once; pooling free),
    the layer kinds in the architecture, and the float error of a convolutional export,
    measured by the report's float copy and cross-checked with the exact network's own float64
    evaluation (another code path) at the same points."""
    from exactnorm.certificate import decode_compact
    from exactnorm.exact.rationals import strict_json_loads
    from tests.checker.test_fuzz import conv_certificate_pool

    doc = strict_json_loads(conv_certificate_pool()[0].encode(), what="pool")
    result = api.report(doc, tmp_path / "r")
    plain = decode_compact(doc)
    layers = plain["network"]["layers"]
    tuned = sum(len(L["gamma"]) + len(L["beta"]) for L in layers if "gamma" in L)

    def entries(weight):
        if isinstance(weight, dict) and "random" in weight:
            return math.prod(weight["random"]["shape"])  # a 4-d kernel for a convolution
        return len(weight) * len(weight[0])

    frozen = sum(entries(L["weight"]) for L in layers if "weight" in L)
    target = sum(entries(T["weight"]) + len(T["bias"]) for T in plain["target"]["layers"]
                 if "weight" in T)
    assert result.counts == {"tuned": tuned, "frozen": frozen, "target": target}
    assert result.verdict.ok
    errs = result.float_errors
    assert errs["float64"]["argmax_agree"] == FLOAT_ERROR_POINTS
    from exactnorm.certificate import read_networks as conv_networks_from_dict
    from exactnorm.outputs.floatnet import box_points

    g, f = conv_networks_from_dict(doc)
    pts = box_points(g.lower, g.upper, FLOAT_ERROR_POINTS, 0)
    X = np.array([[float(v) for v in x] for x in pts])
    exact = np.array([[float(v) for v in g.evaluate(x)] for x in pts])
    reference = np.max(np.abs(f.evaluate_float(X) - exact))
    assert errs["float64"]["max_abs"] <= max(4 * reference, 1e-12) < 1e-6
    assert errs["float32"]["max_abs"] > errs["float64"]["max_abs"]
    md = (tmp_path / "r" / "report.md").read_text()
    kinds = [L.get("kind", "dense") for L in layers]
    for j, kind in enumerate(kinds, 1):
        line = next(ln for ln in md.splitlines() if ln.startswith(f"node {j} = layer {j}:"))
        assert line.startswith(f"node {j} = layer {j}: {kind}, "), line
    assert "fully connected certificates only" not in md and "| float32 |" in md


def test_report_of_a_document_the_reader_refuses_uses_the_exact_network(cert, tmp_path):
    """A skip declared identity that is not one: the checker's reader refuses the document, the
    report falls back to the exact network and still gives bit sizes and magnitudes (of fmpq
    values there), with the INVALID verdict."""
    from exactnorm.outputs.report import _networks, magnitudes

    bad = expand_document(cert)
    layer = bad["network"]["layers"][1]
    layer["skip"] = [{"from": 0, "kind": "identity",
                      "weight": [[2] * len(bad["domain"]["lower"])] * len(layer["gamma"])}]
    with pytest.raises(InvalidCertificateError, match="INVALID"):
        api.report(bad, tmp_path / "refused")  # the API refuses it: nothing uncertified leaves
    assert not (tmp_path / "refused").exists()
    result = write_report(bad, tmp_path / "r")
    assert not result["verdict"].ok
    md = (tmp_path / "r" / "report.md").read_text()
    assert "**INVALID**" in md and "## Magnitudes of the tuned parameters" in md
    # the fallback's magnitudes equal those the reader gives for the unedited certificate
    assert magnitudes(_networks(bad)[1]) == magnitudes(_networks(cert)[1])
