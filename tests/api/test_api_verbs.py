"""The API is the CLI: same choices, same bytes, same refusals; boxes, progress, reprs, messages.

Every check here compares two independent paths (the command line and the library call, a file
box and the same box given as lists, a regenerated certificate and the written one) or mutates
an input and demands the refusal.
"""

from __future__ import annotations

import json
import pickle
import re
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from exactnorm import api
from exactnorm.certificate import save_target
from exactnorm.cli import main, render_error
from exactnorm.errors import InputError, LimitExceededError, NotACertificateError, ShapeError
from exactnorm.model.targets import random_target
from tests.helpers import checkout_env


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def _mlp_npz(path, widths=(6, 5, 3), seed=0):
    """A float32 MLP as ``W1, b1, …`` arrays without a box (as a framework would save it)."""
    rng = np.random.default_rng(seed)
    arrays = {}
    for i, (d_in, d_out) in enumerate(zip(widths, widths[1:]), 1):
        arrays[f"W{i}"] = rng.standard_normal((d_out, d_in)).astype(np.float32)
        arrays[f"b{i}"] = rng.standard_normal(d_out).astype(np.float32)
    np.savez(path, **arrays)
    return path


# ------------------------------------------------------------------ byte-identical certificates


def test_api_and_cli_give_identical_certificates_for_the_demo(tmp_path, capsys):
    assert main(["certify", "--demo", "--out", "cli.json"]) == 0
    api.write_certificate(api.certify(api.demo_target()), tmp_path / "api.json")
    assert (tmp_path / "cli.json").read_bytes() == (tmp_path / "api.json").read_bytes()


@pytest.mark.parametrize("extra", [[], ["--construction", "tradeoff"], ["--max-system", "16"]])
def test_api_and_cli_give_identical_certificates_for_an_mlp(tmp_path, capsys, extra):
    npz = _mlp_npz(tmp_path / "mlp.npz")
    assert main(["certify", str(npz), "--box", "-1:1", "--out", "cli.json", *extra]) == 0
    options = {"--construction": "construction", "--max-system": "max_system"}
    kw = {options[k]: (int(v) if v.isdigit() else v) for k, v in zip(extra[::2], extra[1::2])}
    c = api.certify(npz, box="-1:1", **kw)
    api.write_certificate(c, tmp_path / "api.json")
    assert (tmp_path / "cli.json").read_bytes() == (tmp_path / "api.json").read_bytes()
    # the choice is the cost model's, not the construction's default
    if extra == ["--max-system", "16"]:
        assert c.name == "tradeoff" and c.plan.note.startswith("tradeoff chosen")
    # a TargetNetwork gives the same bytes as its file
    g = api.load_target(npz, box=("-1", "1"))
    api.write_certificate(api.certify(g, **kw), tmp_path / "api2.json")
    assert (tmp_path / "api2.json").read_bytes() == (tmp_path / "cli.json").read_bytes()


@pytest.mark.slow
def test_api_and_cli_agree_on_a_784_128_10_mlp(tmp_path, capsys):
    npz = _mlp_npz(tmp_path / "mlp.npz", widths=(784, 128, 10))
    assert main(["certify", str(npz), "--box", "0:1", "--out", "cli.json.gz", "--no-check"]) == 0
    api.write_certificate(api.certify(npz, box="0:1"), tmp_path / "api.json.gz")
    assert (tmp_path / "cli.json.gz").read_bytes() == (tmp_path / "api.json.gz").read_bytes()


@pytest.mark.parametrize("box", ["0:1", (0.0, 1.0), (0, Fraction(1))])
def test_api_and_cli_give_identical_certificates_for_a_cnn_onnx(tmp_path, capsys, box):
    from tests.model.test_conv import _onnx_cnn

    _onnx_cnn(tmp_path / "cnn.onnx")
    assert main(["certify", "cnn.onnx", "--box", "0:1", "--out", "cli.json", "--no-check"]) == 0
    api.write_certificate(api.certify(tmp_path / "cnn.onnx", box=box), tmp_path / "api.json")
    assert (tmp_path / "cli.json").read_bytes() == (tmp_path / "api.json").read_bytes()
    # the seed derived from the target (rule "target.v2") is the default for a CNN too, and the
    # checker verifies it
    doc = api.load_certificate(tmp_path / "cli.json")
    assert (doc["version"], doc["seed_rule"]) == (3, "target.v2")
    assert api.check(doc).facts["seed_rule"] == "target.v2"


@pytest.mark.parametrize("shortcut", ["proj", "optionA"])
def test_api_and_cli_give_identical_certificates_for_a_resnet_onnx(tmp_path, capsys, shortcut):
    onnx = pytest.importorskip("onnx")
    from tests.model.resnet_onnx import small_resnet_onnx

    onnx.save(small_resnet_onnx(7, shortcut=shortcut, den=8), tmp_path / "resnet.onnx")
    assert main(["certify", str(tmp_path / "resnet.onnx"), "--box", "0:1", "--out",
                 str(tmp_path / "cli.json")]) == 0
    api.write_certificate(api.certify(tmp_path / "resnet.onnx", box=(0.0, 1.0)),
                          tmp_path / "api.json")
    assert (tmp_path / "cli.json").read_bytes() == (tmp_path / "api.json").read_bytes()
    doc = api.load_certificate(tmp_path / "cli.json")
    assert any("residual" in layer for layer in doc["network"]["layers"])
    assert api.check(doc).ok and api.check(doc, pure=True).ok


# ------------------------------------------------------------------ the budget, in both places


def test_api_refuses_theorem1_beyond_the_budget_at_once_naming_parameters(capsys):
    g = random_target((784, 128, 10), seed=0)
    t0 = time.perf_counter()
    with pytest.raises(LimitExceededError) as info:
        api.certify(g, "theorem1")
    assert time.perf_counter() - t0 < 30  # an estimate, not a 75 GiB allocation
    message = str(info.value)
    assert "max_system" in message and "100352" in message and "--" not in message
    # the command line says the same in its own words
    assert render_error(info.value).count("--max-system") == 2
    assert "--construction theorem1" in render_error(info.value)


def test_auto_is_a_construction_and_chooses_like_the_cli():
    g = random_target((80, 64, 2), seed=0)
    c = api.certify(g, "auto", seed=1)
    assert c.name == "tradeoff" and c.plan.options["block"] == 1
    assert c.plan.options["distribution"] == "nonzero:8"
    assert api.certify(random_target((3, 2), seed=0)).name == "theorem1"


@pytest.mark.parametrize("kwargs, parameter", [
    ({"construction": "magic"}, "construction"),
    ({"block": 2}, "block"),                       # auto: block belongs to tradeoff
    ({"construction": "theorem1", "routing": "mask"}, "routing"),
    ({"construction": "tradeoff", "sparsity": "1/2"}, "sparsity"),
    ({"construction": "theorem1", "rank": 2}, "rank"),
    ({"jobs": 0}, "jobs"),
    ({"jobs": "many"}, "jobs"),
    ({"retry": -1}, "retry"),
    ({"max_system": 0}, "max_system"),
    ({"mask_side": "left"}, "mask_side"),
    ({"box": "-1:1"}, "box"),                      # a TargetNetwork has its box
])
def test_api_options_are_validated_by_parameter_name(kwargs, parameter):
    with pytest.raises(InputError) as info:
        api.certify(api.demo_target(), **kwargs)
    names = info.value.parameter
    assert parameter == names or parameter in names
    assert "--" not in str(info.value)


# ------------------------------------------------------------------ command-line conventions


def test_target_is_positional_and_the_same_as_dash_dash_target(tmp_path, capsys):
    path = tmp_path / "t.json"
    save_target(random_target((3, 3, 2), seed=4), path)
    assert main(["certify", str(path), "--out", "a.json"]) == 0
    assert main(["certify", "--target", str(path), "--out", "b.json"]) == 0
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    capsys.readouterr()
    assert main(["certify", str(path), "--target", str(tmp_path / "other.json")]) == 2
    assert "two targets" in capsys.readouterr().err
    assert main(["certify", str(path), "--demo"]) == 2


def test_the_demo_is_announced_unless_asked_for(tmp_path, capsys):
    assert main(["certify"]) == 0
    err = capsys.readouterr().err
    assert "embedded demo target" in err and "--demo" in err
    assert main(["certify", "--demo", "--out", "d.json"]) == 0
    assert "embedded demo" not in capsys.readouterr().err


def test_an_existing_output_is_never_overwritten_without_force(tmp_path, capsys):
    out = tmp_path / "certificate.json"
    out.write_text("precious")
    assert main(["certify", "--demo"]) == 2
    err = capsys.readouterr().err
    assert "certificate.json exists" in err and "--force" in err
    assert out.read_text() == "precious"
    assert main(["certify", "--demo", "--force"]) == 0
    assert json.loads(out.read_text())["format"] == "exactnorm.certificate"


def test_a_model_given_to_check_is_not_a_certificate_exit_2(tmp_path, capsys):
    onnx_like = tmp_path / "model.onnx"
    onnx_like.write_bytes(b"\x08\x07\x12\x07pytorch\x1a\x032.1" + bytes(range(200)))
    assert main(["check", str(onnx_like)]) == 2
    err = capsys.readouterr().err
    assert "is not a certificate" in err and err.count("\n") == 1
    with pytest.raises(NotACertificateError):
        api.check_file(onnx_like)
    # a target file is not a certificate either
    save_target(api.demo_target(), tmp_path / "t.json")
    assert main(["check", str(tmp_path / "t.json")]) == 2
    assert "not a certificate (a target file?)" in capsys.readouterr().err
    # a malformed JSON certificate stays invalid (exit 1): it is a certificate that fails
    (tmp_path / "c.json").write_text('{"format": "exactnorm.certificate"')
    assert main(["check", str(tmp_path / "c.json")]) == 1


def test_interrupt_during_the_check_names_the_kept_certificate(tmp_path, monkeypatch, capsys):
    import exactnorm.api._check

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    # the check of the written bytes, before the file gets its name
    monkeypatch.setattr(exactnorm.api._check, "check_file", interrupted)
    assert main(["certify", "--demo", "--out", "c.json"]) == 130
    err = capsys.readouterr().err
    assert "the complete certificate c.json was kept" in err and "exactnorm check c.json" in err
    assert "no partial output file" not in err
    assert (tmp_path / "c.json").exists()
    # and the next command's interrupt speaks of itself again
    monkeypatch.setattr("exactnorm.commands.check.run", interrupted)
    assert main(["check", "c.json"]) == 130
    assert "atomically" in capsys.readouterr().err


# ------------------------------------------------------------------ boxes


def test_per_feature_boxes_from_files_and_data_agree(tmp_path, capsys):
    npz = _mlp_npz(tmp_path / "mlp.npz", widths=(3, 2, 1))
    lower, upper = ["-1/2", 0, -2], [1, "1/3", 5]
    (tmp_path / "box.json").write_text(json.dumps({"lower": lower, "upper": upper}))
    np.savez(tmp_path / "box.npz", lower=np.array([-0.5, 0, -2]), upper=np.array([1, 0.25, 5]))
    np.save(tmp_path / "box.npy", np.array([[-0.5, 0, -2], [1, 0.25, 5]]))
    samples = np.array([[-0.5, 0.25, 5], [1, 0, -2], [0, 0.125, 0]])
    np.save(tmp_path / "data.npy", samples)
    from_json = api.load_target(npz, box_file=tmp_path / "box.json")
    assert [Fraction(str(x)) for x in from_json.lower] == [Fraction(x) for x in lower]
    assert [Fraction(str(x)) for x in from_json.upper] == [Fraction(x) for x in upper]
    same = [api.load_target(npz, box_file=tmp_path / "box.npz"),
            api.load_target(npz, box_file=tmp_path / "box.npy"),
            api.load_target(npz, box_from_data=tmp_path / "data.npy"),
            api.load_target(npz, box=([-0.5, 0, -2], [1, 0.25, 5]))]
    assert len({(g.lower, g.upper) for g in same}) == 1
    assert same[0].upper != from_json.upper  # 1/3 vs 0.25: the files were really read
    # the command line builds the same box
    assert main(["certify", str(npz), "--box-from-data", str(tmp_path / "data.npy"),
                 "--out", "c.json"]) == 0
    doc = json.loads((tmp_path / "c.json").read_text())
    assert api.load_certificate(tmp_path / "c.json")["domain"] == doc["domain"]
    assert [Fraction(str(x)) for x in doc["domain"]["upper"]] == [1, Fraction(1, 4), 5]


def test_box_refusals_name_the_box_not_a_layer(tmp_path, capsys):
    npz = _mlp_npz(tmp_path / "mlp.npz", widths=(3, 2, 1))
    np.save(tmp_path / "box.npy", np.zeros((2, 4)))
    with pytest.raises(ShapeError, match="the box has 4 coordinates but the network input has 3"):
        api.load_target(npz, box_file=tmp_path / "box.npy")
    bad = {"domain": {"lower": [0, 0], "upper": [1, 1]},
           "target": {"layers": [{"weight": [[1, 2, 3]], "bias": [0]}]}}
    (tmp_path / "t.json").write_text(json.dumps(bad))
    assert main(["certify", str(tmp_path / "t.json")]) == 2
    err = capsys.readouterr().err
    assert "the box has 2 coordinates but the network input has 3" in err
    assert "expects" not in err
    assert main(["certify", str(npz), "--box", "0:1", "--box-file", "x.json"]) == 2
    assert "--box and --box-file" in capsys.readouterr().err
    (tmp_path / "box.json").write_text(json.dumps({"lower": [0, 0], "upper": [1, 1]}))
    assert main(["certify", str(tmp_path / "t.json"), "--box-file", "box.json"]) == 2
    assert "has its own 'domain' and --box-file was given too" in capsys.readouterr().err
    assert main(["certify", str(npz)]) == 2
    assert "it needs --box LO:HI" in capsys.readouterr().err
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(InputError, match="pickles are refused"):
        api.load_target(npz, box_from_data=tmp_path / "obj.npy")
    np.save(tmp_path / "nan.npy", np.array([[0.0, np.nan, 1.0]]))
    with pytest.raises(InputError, match="NaN"):
        api.load_target(npz, box_from_data=tmp_path / "nan.npy")


# ------------------------------------------------------------------ messages


def test_a_pickled_model_is_refused_as_a_pickle(tmp_path, capsys):
    model = tmp_path / "model.pkl"
    model.write_bytes(pickle.dumps({"coefs_": [[1.0]]}))
    assert main(["certify", str(model), "--box", "0:1"]) == 2
    err = capsys.readouterr().err
    assert "pickles are refused" in err and "target_from_sklearn" in err
    assert "JSON" not in err
    renamed = tmp_path / "model.json"  # the content decides, not only the name
    renamed.write_bytes(model.read_bytes())
    with pytest.raises(InputError, match="pickles are refused"):
        api.load_target(renamed)


def test_foreign_messages_lose_terminal_escapes_and_are_cut_at_a_word():
    from exactnorm.cli import _first_line

    exc = ValueError("\x1b[1mWeights only load failed.\x1b[0m Re-running with "
                     "\x1b[31mweights_only\x1b[0m set to False will likely succeed")
    line = _first_line(exc)
    assert "\x1b" not in line and line.startswith("Weights only load failed. Re-running")
    long = _first_line(ValueError("word " * 100), limit=42)
    assert long.endswith(" …") and "wor …" not in long and len(long) <= 44
    assert "\x1b" not in render_error(InputError("bad \x1b[31mred\x1b[0m file"))


def test_verdicts_show_a_decimal_next_to_long_fractions(tmp_path, capsys):
    third = "33333333333333333/100000000000000000"
    doc = {"domain": {"lower": [0, 0], "upper": [third, 1]},
           "target": {"layers": [{"weight": [[1, 2]], "bias": [0]}]}}
    (tmp_path / "t.json").write_text(json.dumps(doc))
    assert main(["certify", str(tmp_path / "t.json"), "--out", "c.json"]) == 0
    out = capsys.readouterr().out
    assert f"{third} (≈ 0.333333)" in out
    assert "1 (≈" not in out  # short numbers stay as they are


def test_summary_table_has_a_legend_honours_columns_and_labels_wall_time(tmp_path):
    import subprocess
    import sys

    env = checkout_env({"COLUMNS": "70", "PATH": "/usr/bin:/bin"})
    res = subprocess.run([sys.executable, "-m", "exactnorm.cli", "certify", "--demo",
                          "--out", str(tmp_path / "c.json")], capture_output=True, text=True,
                         env=env, check=True)
    table = [line for line in res.stdout.splitlines() if line.startswith(("┏", "│", "└"))]
    assert table and max(len(line) for line in table) <= 70
    assert "solve s" in res.stdout and "wall" in res.stdout
    assert "systems: Khatri–Rao systems solved" in res.stdout


# ------------------------------------------------------------------ progress and reprs


def test_progress_reaches_callbacks_for_every_long_verb(tmp_path):
    seen: dict[str, list[tuple[int, int]]] = {"certify": [], "check": []}
    c = api.certify(random_target((3, 4, 3, 2), seed=1),
                    progress=lambda d, t: seen["certify"].append((d, t)))
    assert seen["certify"][-1] == (3, 3)  # Theorem 1: one step per target layer
    api.write_certificate(c, tmp_path / "c.json")
    assert api.check_file(tmp_path / "c.json",
                          progress=lambda d, t: seen["check"].append((d, t))).ok
    assert seen["check"][-1][0] == seen["check"][-1][1] == c.network.depth
    # a bar for notebooks and terminals (rich when tqdm is absent), same result
    c2 = api.certify(random_target((3, 4, 3, 2), seed=1), progress=True)
    assert api.certificate_document(c2) == api.certificate_document(c)
    with pytest.raises(InputError, match="progress must be"):
        api.certify(api.demo_target(), progress="yes")


def test_reprs_are_short_at_real_size():
    g = random_target((784, 128, 10), seed=0)
    assert len(repr(g)) < 200 and "784-128-10" in repr(g)
    assert "784-128-10" in g._repr_html_() and len(g._repr_html_()) < 2000
    c = api.certify(api.demo_target())
    assert len(repr(c)) < 300 and "theorem1" in repr(c) and "3-4-3-2" in repr(c)
    assert "<table>" in c._repr_html_()
    assert repr(c.network) == (f"FrozenNetwork(input_dim=3, depth={c.network.depth}, "
                               f"checkpoints={len(c.network.checkpoints)})")
    v = api.check(api.certificate_document(c))
    assert repr(v).startswith("Verdict(VALID: f = g on") and len(repr(v)) < 250
    assert "VALID" in v._repr_html_()
    big = api.Verdict(True, "ok", "x" * 10**6, facts={"box": list(range(784))})
    assert len(repr(big)) < 250 and len(big._repr_html_()) < 3000


def test_export_and_report_say_when_they_replace_a_file(tmp_path, capsys):
    assert main(["certify", "--demo", "--out", "c.json"]) == 0
    capsys.readouterr()
    assert main(["export", "c.json", "--format", "json", "--out", "p.json"]) == 0
    assert "replaced" not in capsys.readouterr().err
    assert main(["export", "c.json", "--format", "json", "--out", "p.json"]) == 0
    assert "note: replaced the existing file p.json" in capsys.readouterr().err
    assert main(["report", "c.json", "--out", "r"]) == 0
    assert "replaced" not in capsys.readouterr().err
    assert main(["report", "c.json", "--out", "r"]) == 0
    assert "replaced the existing report in r" in capsys.readouterr().err


def test_plain_progress_has_a_heartbeat_during_a_long_step(monkeypatch, capsys):
    """Off a terminal, a step without callbacks (one long Theorem 1 layer) still prints lines."""
    from exactnorm.commands import _common

    monkeypatch.setattr(_common, "PLAIN_PROGRESS_SECONDS", 0.05)
    monkeypatch.setattr(_common, "progress_enabled", lambda: False)
    with _common.progress_hook("theorem1", "target layers") as hook:
        time.sleep(0.3)  # no callback: the layer is still being solved
        hook(1, 2)
    err = capsys.readouterr().err
    assert "theorem1: 0/? target layers" in err and "working" in err
    lines = [ln for ln in err.splitlines() if ln.startswith("theorem1: 0/?")]
    assert len(lines) >= 2


# ------------------------------------------------------------------ every kind, every target


def test_the_api_certifies_a_cnn_target_network_with_progress_and_a_short_repr(tmp_path):
    from tests.certificate.test_golden_certificates import lenet_small

    seen = []
    c = api.certify(lenet_small(), progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (4, 4) and [d for d, _ in seen] == sorted(d for d, _ in seen)
    c2 = api.certify(lenet_small(), progress=True)  # the bar works for every kind
    assert api.certificate_document(c2) == api.certificate_document(c)
    assert c.name == "conv" and c.plan.runs and len(repr(c)) < 300
    assert "kinds=conv,avgpool,conv,dense" in repr(c)
    assert api.check(api.certificate_document(c)).ok


def _fitted_mlp():
    sklearn = pytest.importorskip("sklearn.neural_network")
    rng = np.random.default_rng(0)
    X = rng.random((30, 3))
    return sklearn.MLPRegressor(hidden_layer_sizes=(4,), max_iter=5, random_state=0).fit(
        X, X.sum(axis=1))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_the_api_certifies_models_in_memory_like_their_target_networks(tmp_path):
    from exactnorm.model.interop import target_from_sklearn, target_from_state_dict

    clf = _fitted_mlp()
    for box in ("0:1", (0, 1), (0.0, 1.0), ([0, 0, 0], [1.0, 1.0, 1.0])):
        c = api.certify(clf, box=box)
        assert c.target == target_from_sklearn(clf, 0, 1) == target_from_sklearn(clf, [0] * 3,
                                                                                  [1] * 3)
    assert api.certificate_document(c) == \
        api.certificate_document(api.certify(target_from_sklearn(clf, 0, 1)))
    arrays = {"0.weight": clf.coefs_[0].T, "0.bias": clf.intercepts_[0],
              "2.weight": clf.coefs_[1].T, "2.bias": clf.intercepts_[1]}
    sd = api.certify(arrays, box=(0, 1), activations="relu,identity")
    assert sd.target == c.target == target_from_state_dict(arrays, 0, 1, "relu,identity")
    with pytest.raises(InputError) as info:
        api.certify(clf)
    assert "box" in info.value.parameter
    with pytest.raises(InputError) as info:
        api.certify(object(), box="0:1")
    assert info.value.parameter == "target"
    with pytest.raises(InputError, match="not fitted"):
        api.certify(type(clf)(), box="0:1")
    with pytest.raises(InputError) as info:
        api.certify(clf, box="0:1", activations="relu,identity")
    assert info.value.parameter == "activations"


@pytest.mark.parametrize("box", [(0.0, 1.0), (0, 1), ("0", "1"), (Fraction(0), 1),
                                 (np.float32(0), np.float64(1)), (np.int64(0), np.array(1.0))])
def test_a_box_is_a_pair_of_numbers_of_any_type(tmp_path, box):
    npz = _mlp_npz(tmp_path / "mlp.npz")
    assert api.load_target(npz, box=box) == api.load_target(npz, box="0:1")


def test_float_box_ends_are_taken_exactly():
    from flint import fmpq

    g = api.load_target(_mlp_npz("m.npz"), box=(0.1, 1))
    assert g.lower[0] == fmpq(*(0.1).as_integer_ratio()) != fmpq(1, 10)
    assert api.load_target("m.npz", box=("0.1", 1)).lower[0] == fmpq(1, 10)
    with pytest.raises(InputError):
        api.load_target("m.npz", box=(float("nan"), 1))
    with pytest.raises(InputError):
        api.load_target("m.npz", box=(True, 1))


def test_every_result_has_a_short_repr():
    r = api.realizable(2, d_in=2, d_out=2, w="reachable")
    d = api.detpoly(2, 2)
    t = api.TablesResult(written=[Path(f"t{i}.md") for i in range(500)])
    for result in (r, d, t):
        assert len(repr(result)) < 200, repr(result)[:300]
    assert repr(d) == "DetpolyResult(d_in=2, d_out=2, mode=expansion, verified=True)"


def test_the_api_reference_lists_every_public_function():
    """docs/api.md documents every name of ``exactnorm.api.__all__`` that is a function or a
    class (constants are named in their functions' parameters)."""
    import inspect

    text = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text()
    documented = set(re.findall(r"\.\. auto(?:function|class):: exactnorm\.api\.(\w+)", text))
    public = {n for n in api.__all__ if inspect.isfunction(getattr(api, n))
              or inspect.isclass(getattr(api, n))}
    assert public <= documented, sorted(public - documented)
    assert documented <= public, sorted(documented - public)
