"""The edges a practitioner meets: ``check`` of a path, boxes from image arrays, ONNX weights in
an external data file, ``export --source`` checked before anything is written, the capacity
verb's hint about float rounding, and a verdict's short form cut between words."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from flint import fmpq

from exactnorm import api
from exactnorm.cli import main
from exactnorm.errors import InputError

onnx = pytest.importorskip("onnx")


def _mlp(path: Path, *, input_name: str = "x", output_name: str = "y", seed: int = 0,
         elem: int = 1, external: bool = False) -> Path:
    """A 4-3-2 ReLU MLP as ONNX (Gemm, Relu, Gemm), float32 weights."""
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(seed)
    dtype = np.float32 if elem == 1 else np.float64
    inits = [numpy_helper.from_array(rng.normal(size=(3, 4)).astype(dtype), "W1"),
             numpy_helper.from_array(rng.normal(size=3).astype(dtype), "b1"),
             numpy_helper.from_array(rng.normal(size=(2, 3)).astype(dtype), "W2"),
             numpy_helper.from_array(np.zeros(2, dtype), "b2")]
    nodes = [helper.make_node("Gemm", [input_name, "W1", "b1"], ["h"], transB=1),
             helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "W2", "b2"], [output_name], transB=1)]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info(input_name, elem,
                                                                            ["N", 4])],
                              [helper.make_tensor_value_info(output_name, elem, ["N", 2])],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    if external:
        onnx.save_model(model, str(path), save_as_external_data=True,
                        all_tensors_to_one_file=True, location=path.name + ".data",
                        size_threshold=0)
    else:
        onnx.save(model, str(path))
    return path


# --------------------------------------------------------------------------- check(path)


def test_check_takes_a_path_and_refuses_other_things(tmp_path):
    c = api.certify(api.demo_target(), seed=0)
    api.write_certificate(c, tmp_path / "c.json")
    assert api.check(tmp_path / "c.json") == api.check(api.certificate_document(c))
    assert api.check(str(tmp_path / "c.json"), pure=True).ok
    with pytest.raises(InputError, match="no such"):
        api.check(tmp_path / "missing.json")
    with pytest.raises(InputError, match="a dict"):
        api.check(["not", "a", "document"])  # type: ignore[arg-type]


def test_a_short_verdict_is_cut_between_words():
    v = api.Verdict(True, "valid", "word " * 60)
    shown = repr(v)
    assert shown.endswith(" …)") and "wor …" not in shown and len(shown) < 200


# ------------------------------------------------------------- boxes from image arrays


def test_box_from_data_takes_image_arrays(tmp_path):
    rng = np.random.default_rng(1)
    images = rng.random((5, 1, 2, 2)).astype(np.float32)
    np.save(tmp_path / "img.npy", images)
    np.save(tmp_path / "flat.npy", images.reshape(5, -1))
    g_img = api.load_target(_mlp(tmp_path / "m.onnx"), box_from_data=tmp_path / "img.npy")
    g_flat = api.load_target(tmp_path / "m.onnx", box_from_data=tmp_path / "flat.npy")
    assert (g_img.lower, g_img.upper) == (g_flat.lower, g_flat.upper)
    exact = Fraction(float(images[:, 0, 1, 1].min()))  # C order, the float exactly
    assert g_img.lower[3] == fmpq(exact.numerator, exact.denominator)
    np.save(tmp_path / "one.npy", np.zeros(4))
    with pytest.raises(InputError, match="n ≥ 1 samples"):
        api.load_target(tmp_path / "m.onnx", box_from_data=tmp_path / "one.npy")


# ---------------------------------------------------------------- external ONNX data


def test_external_data_is_read_and_a_missing_file_named(tmp_path, capsys):
    model = _mlp(tmp_path / "ext.onnx", external=True)
    assert (tmp_path / "ext.onnx.data").exists()
    inline = _mlp(tmp_path / "inline.onnx")
    g_ext = api.load_target(model, box="0:1")
    g_inline = api.load_target(inline, box="0:1")
    assert g_ext.layers[0].weight == g_inline.layers[0].weight
    (tmp_path / "ext.onnx.data").rename(tmp_path / "elsewhere.data")
    code = main(["certify", str(model), "--box", "0:1", "--out", str(tmp_path / "c.json")])
    err = capsys.readouterr().err
    assert code == 2 and "ext.onnx.data, which is missing" in err and "truncated" not in err


def test_external_data_outside_the_model_folder_is_refused(tmp_path):
    model = _mlp(tmp_path / "ext.onnx", external=True)
    proto = onnx.load(str(model), load_external_data=False)
    for t in proto.graph.initializer:
        for entry in t.external_data:
            if entry.key == "location":
                entry.value = "../../etc/passwd"
    onnx.save(proto, str(model))
    with pytest.raises(InputError, match="outside the model's folder"):
        api.load_target(model, box="0:1")


# ------------------------------------------------------------------- export --source


@pytest.fixture
def certified(tmp_path, capsys) -> Path:
    pytest.importorskip("onnxruntime")
    _mlp(tmp_path / "m.onnx")
    assert main(["certify", str(tmp_path / "m.onnx"), "--box", "0:1", "--out",
                 str(tmp_path / "m.json")]) == 0
    capsys.readouterr()
    return tmp_path / "m.json"


@pytest.mark.parametrize("kind,words", [
    ("name", ["input name 'input'", "output names ['logits']"]),
    ("dtype", ["input dtype float64"]),
    ("weights", ["computes another function"]),
])
def test_a_wrong_source_is_refused_before_anything_is_written(certified, tmp_path, capsys,
                                                               kind, words):
    source = {"name": lambda p: _mlp(p, input_name="input", output_name="logits"),
              "dtype": lambda p: _mlp(p, elem=11),
              "weights": lambda p: _mlp(p, seed=5)}[kind](tmp_path / "other.onnx")
    out = tmp_path / "e.onnx"
    code = main(["export", str(certified), "--format", "onnx", "--out", str(out), "--source",
                 str(source)])
    err = capsys.readouterr().err
    assert code == 2 and not out.exists(), err
    line = [ln for ln in err.splitlines() if ln.startswith("exactnorm: error:")]
    assert len(line) == 1 and "--source" in line[0] and "nothing was written" in line[0]
    for w in words:
        assert w in line[0], line[0]
    assert not line[0].rstrip().endswith("does")  # never a cut foreign message


def test_the_right_source_is_accepted(certified, tmp_path, capsys):
    out = tmp_path / "e.onnx"
    assert main(["export", str(certified), "--format", "onnx", "--out", str(out), "--source",
                 str(tmp_path / "m.onnx"), "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert out.exists() and obj["paths"]["source"].endswith("m.onnx")


# ------------------------------------------------------------ capacity: float rounding


def test_capacity_hints_when_the_target_differs_by_float_rounding(tmp_path, capsys):
    W1 = np.array([[1.0, 0.5], [-0.25, 1], [1, 1]])
    W2 = np.array([[1.0, 2, 3], [2, -1, 1]])
    b1 = np.array([0.5, 0.25, -0.125])
    np.savez(tmp_path / "given.npz", W1=W1, b1=b1, W2=W2, b2=np.zeros(2))
    rounded = W1.copy()
    rounded[0, 0] = np.nextafter(1.0, 2.0)  # one unit in the last place
    np.savez(tmp_path / "rounded.npz", W1=rounded, b1=b1, W2=W2, b2=np.zeros(2))
    code = main(["capacity", str(tmp_path / "given.npz"), "--box", "0:1", "--target",
                 str(tmp_path / "rounded.npz"), "--json"])
    obj = json.loads(capsys.readouterr().out)
    assert code in (1, 4) and "float rounding" in obj["details"]["hint"]
    far = W1.copy()
    far[0, 0] = 3.0  # a real difference: no hint
    np.savez(tmp_path / "far.npz", W1=far, b1=b1, W2=W2, b2=np.zeros(2))
    code = main(["capacity", str(tmp_path / "given.npz"), "--box", "0:1", "--target",
                 str(tmp_path / "far.npz"), "--json"])
    obj = json.loads(capsys.readouterr().out)
    assert code in (1, 4) and obj["details"]["hint"] is None
