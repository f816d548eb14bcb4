"""The export of a transformer certificate: the rewritten transformer as a drop-in ONNX model
(its predictions against the source model under onnxruntime and against the float64 reference of
the original), the exact JSON export and its read-back, the refusals; the small exported model in
the default suite, the trained ones (slow)."""

from __future__ import annotations

import copy
import gzip
import json

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

import onnx  # noqa: E402

from exactnorm import checker_flint  # noqa: E402
from exactnorm.api import certify, export  # noqa: E402
from exactnorm.api._transformer import certify_transformer, plan_transformer  # noqa: E402
from exactnorm.api._transformer_outputs import json_difference  # noqa: E402
from exactnorm.certificate.transformer import read_transformer, transformer_of  # noqa: E402
from exactnorm.errors import InputError, InvalidCertificateError  # noqa: E402
from exactnorm.exact.rationals import strict_json_loads  # noqa: E402
from exactnorm.model.interop.transformer_build import onnx_transformer  # noqa: E402
from exactnorm.outputs.export.transformer import transformer_onnx  # noqa: E402
from exactnorm.outputs.transformer_runs import (  # noqa: E402
    TokenModel,
    reference_logits,
    rewritten_logits,
    task_sequences,
)
from tests.helpers import ROOT, run_cli  # noqa: E402

DATA = ROOT / "tests" / "model" / "data"
TINY = DATA / "tiny_preln.onnx"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """The small exported model's certificate: (path, document)."""
    doc = certify(str(TINY), jobs=1).document
    path = tmp_path_factory.mktemp("tiny") / "tiny.json.gz"
    path.write_bytes(gzip.compress(json.dumps(doc).encode(), mtime=0))
    return path, doc


def _run(path, tokens):
    return TokenModel(path, "export").run(tokens)


def test_reference_is_the_transformers_own_float_evaluation(tiny) -> None:
    """Two implementations of §11.1 in float64: the batched reference and the model's own."""
    tr = transformer_of(tiny[1])
    rng = np.random.default_rng(3)
    for length in (1, 2, 3):
        tokens = rng.integers(0, tr.vocabulary, size=(17, length))
        ref = reference_logits(tr, tokens)
        own = np.stack([tr.evaluate_float(t) for t in tokens])
        assert np.abs(ref - own).max() <= 1e-12 * max(1.0, np.abs(own).max())


def test_onnx_export_equals_source_on_every_sequence(tiny, tmp_path) -> None:
    out = tmp_path / "tiny.onnx"
    result = export(tiny[0], out, format="onnx", verify=10**6, source=TINY)
    m = result.verification
    s = m["sequences"]
    assert s["every"] and s["sequences"] == 24 ** 3 and s["positions"] == 3 * 24 ** 3
    # predictions equal to the source's and to the reference's at every position
    assert s["agreement"]["equal"] == s["positions"]
    assert s["export"]["changed"] == 0 and s["source"]["changed"] == 0
    assert s["export"]["max_rel"] < 1e-8  # float64 arithmetic; the source is float32
    assert s["source"]["max_rel"] < 1e-4
    # independently of the verification code: the export against the source model itself
    tokens, _ = task_sequences(24, 3, 300, seed=5)
    mine = _run(out, tokens)
    src = TokenModel(TINY, "source").run(tokens)
    assert (mine.argmax(-1) == src.argmax(-1)).all()
    assert np.abs(mine - src).max() < 1e-3 * np.abs(src).max()
    assert m["bytes"] == out.stat().st_size and m["latency"] > 0 and m["source_latency"] > 0


def test_onnx_export_is_a_drop_in(tiny, tmp_path) -> None:
    out = tmp_path / "tiny.onnx"
    export(tiny[0], out, format="onnx", source=TINY, timing=False)
    mine, theirs = onnx.load(out).graph, onnx.load(TINY).graph

    def face(values):
        return [(v.name, v.type.tensor_type.elem_type,
                 [d.dim_value or None for d in v.type.tensor_type.shape.dim][1:])
                for v in values]

    assert face(mine.input) == face(theirs.input)
    assert face(mine.output) == face(theirs.output)
    # the rewritten transformer: one BatchNormalization per frozen layer of every slot, the
    # original's LayerNorms, one Softmax per head, and no weight matrix of the original
    doc = tiny[1]
    frozen = sum(len(s["network"]["layers"]) for s in doc["slots"].values())
    ops = [n.op_type for n in mine.node]
    tr = transformer_of(doc)
    assert ops.count("BatchNormalization") == frozen
    assert ops.count("LayerNormalization") == sum(n.op == "layernorm" for n in tr.nodes)
    assert ops.count("Softmax") == sum(len(n.heads) for n in tr.nodes)
    assert "Gather" not in [n.op_type for n in mine.node if "embed" in n.name]
    originals = {onnx.numpy_helper.to_array(t).tobytes() for t in theirs.initializer
                 if len(t.dims) == 2}
    assert not originals & {onnx.numpy_helper.to_array(t).tobytes() for t in mine.initializer}


def test_numpy_copy_and_onnxruntime_agree(tiny, tmp_path) -> None:
    """The float64 rewritten transformer in NumPy (the report's) and under onnxruntime (the
    export) are the same computation."""
    from exactnorm.outputs.data_eval import float_copy

    doc = tiny[1]
    tr = transformer_of(doc)
    copies = {name: float_copy(d) for name, d in doc["slots"].items()}
    out = tmp_path / "tiny.onnx"
    out.write_bytes(transformer_onnx(doc).SerializeToString())
    tokens, _ = task_sequences(24, 3, 200, seed=2)
    a = rewritten_logits(tr, copies, tokens, np.float64)
    b = _run(out, tokens)
    assert np.abs(a - b).max() < 1e-9 * np.abs(a).max()


def test_a_changed_slot_is_refused_and_seen(tiny, tmp_path) -> None:
    doc = copy.deepcopy(tiny[1])
    layer = doc["slots"]["block0.o"]["network"]["layers"][0]
    g = layer["gamma"]
    if isinstance(g, dict):
        g["num"][0] = int(g["num"][0]) * 3 + int(g["den"])
    else:
        g[0] = "7/3"
    out = tmp_path / "bad.onnx"
    with pytest.raises(InvalidCertificateError):
        export(doc, out, format="onnx")
    assert not out.exists()
    # unchecked, the export computes another function: the verification sees it
    result = export(doc, out, format="onnx", check=False, verify=500, source=TINY)
    s = result.verification["sequences"]
    assert s["export"]["max_abs"] > 1e-3
    assert s["agreement"]["max_abs_diff"] > 1e-3


def test_another_source_is_refused_before_writing(tiny, tmp_path) -> None:
    out = tmp_path / "x.onnx"
    # the same interface (tokens [1, 3] → logits [1, 3, 23]), another function
    with pytest.raises(InputError, match="computes another function"):
        export(tiny[0], out, format="onnx", source=DATA / "modadd_1l_preln.onnx")
    assert not out.exists()


def test_json_export_is_exact_and_read_back(tiny, tmp_path) -> None:
    out = tmp_path / "tiny.json"
    result = export(tiny[0], out, format="json")
    assert result.warning is None and "read back" in result.text
    written = strict_json_loads(out.read_bytes(), what="export")
    assert written["architecture"] == tiny[1]["architecture"]
    assert json_difference(tiny[1], out) is None
    # every slot's γ̂ = γ·s and β̂ = β + γ·μ (here s = 1, μ = 0): the certificate's numbers
    _, networks = read_transformer(tiny[1])
    from fractions import Fraction

    for name, body in written["slots"].items():
        frozen = networks[name][1]
        for j, layer in enumerate(body["layers"]):
            assert [Fraction(x) for x in layer["gamma_hat"]] == [
                Fraction(int(x.p), int(x.q)) for x in frozen.layers[j].gamma]
    # a changed byte is found and named
    text = out.read_text()
    bad = tmp_path / "bad.json"
    first = written["slots"]["unembed"]["layers"][0]["beta_hat"][0]
    bad.write_text(text.replace(json.dumps(first), json.dumps("0"), 1))
    assert json_difference(tiny[1], bad) is not None


@pytest.mark.parametrize("fmt", ["npz", "torch"])
def test_array_formats_are_refused_naming_what_works(tiny, tmp_path, fmt) -> None:
    if fmt == "torch":
        pytest.importorskip("torch")  # without torch the missing package is named first
    done = run_cli("export", str(tiny[0]), "--format", fmt, "--out", str(tmp_path / "x"))
    assert done.returncode == 2 and "onnx" in done.stderr and "json" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_cli_export_with_source_verify_and_data(tiny, tmp_path) -> None:
    tokens = np.array([[a, b, 23] for a in range(23) for b in range(23)], dtype=np.int64)
    labels = np.arange(len(tokens)) % 23
    np.save(tmp_path / "tokens.npy", tokens)
    np.save(tmp_path / "y.npy", labels)
    out = tmp_path / "tiny.onnx"
    done = run_cli("export", str(tiny[0]), "--format", "onnx", "--out", str(out), "--source",
                   str(TINY), "--verify", "50", "--data", str(tmp_path / "tokens.npy"),
                   "--labels", str(tmp_path / "y.npy"))
    assert done.returncode == 0, done.stderr
    assert "TRANSFORMER VALID" in done.stdout
    assert "seeded sequences: 50 sequences of 3 tokens" in done.stdout
    assert f"equal predictions at {3 * 529}/{3 * 529} positions" in done.stdout
    assert "accuracy" in done.stdout and "latency" in done.stdout


@pytest.mark.parametrize("bad, words", [
    (np.zeros((4, 3)), "integers"),
    (np.full((4, 3), 24), "token ids lie in 0 … 23"),
    (np.zeros((4, 5), dtype=np.int64), "lengths 1 … 3"),
])
def test_bad_token_data_is_refused(tiny, tmp_path, bad, words) -> None:
    np.save(tmp_path / "bad.npy", bad)
    with pytest.raises(InputError, match=words):
        export(tiny[0], tmp_path / "x.onnx", format="onnx", data=tmp_path / "bad.npy")


def _certified(model):
    return certify_transformer(plan_transformer(model, jobs=1)).document


@pytest.mark.parametrize("options", [
    {"norm": "post"},                      # the queries, keys and values read the one-hot input
    {"norm": "none"},                      # boxes by interval propagation
    {"layernorm": "decomposed", "qkv": "fused", "mask": "add"},
])
def test_variants_against_their_source(tmp_path, options) -> None:
    model = onnx_transformer(1, vocabulary=5, d_model=4, heads=2, d_mlp=4, **options)
    src = tmp_path / "model.onnx"
    onnx.save(model, src)
    doc = _certified(model)
    out = tmp_path / "export.onnx"
    result = export(doc, out, format="onnx", verify=10**4, source=src, timing=False)
    s = result.verification["sequences"]
    assert s["every"] and s["agreement"]["equal"] == s["positions"], s
    assert s["export"]["max_rel"] < 1e-8, s


@pytest.mark.parametrize("mask", ["none", ("add", -7), ("fill", -5)])
def test_masks_follow_the_format(tmp_path, mask) -> None:
    """Each mask of §11.1 in the export equals the model's own float evaluation (the document's
    mask edited, so unchecked: its seeds name the causal one)."""
    doc = _certified(onnx_transformer(2, vocabulary=5, d_model=4, heads=2, d_mlp=4))
    for node in doc["architecture"]["nodes"]:
        if node["op"] == "attention":
            node["mask"] = mask if isinstance(mask, str) else {"causal": mask[0],
                                                                "value": str(mask[1])}
    assert not checker_flint.check_certificate(copy.deepcopy(doc)).ok
    tr = transformer_of(doc)
    out = tmp_path / "export.onnx"
    out.write_bytes(transformer_onnx(doc).SerializeToString())
    tokens, _ = task_sequences(5, 3, 125, seed=0)
    own = np.stack([tr.evaluate_float(t) for t in tokens])
    assert np.abs(_run(out, tokens) - own).max() < 1e-8 * np.abs(own).max()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["modadd_1l_preln", "modadd_2l_preln", "modadd_1l_postln"])
def test_trained_models_export_agrees_on_every_task_sequence(tmp_path, name) -> None:
    source = DATA / f"{name}.onnx"
    cert = tmp_path / f"{name}.json.gz"
    done = run_cli("certify", str(source), "--out", str(cert), timeout=1800)
    assert done.returncode == 0, done.stderr
    tokens = np.array([[a, b, 23] for a in range(23) for b in range(23)], dtype=np.int64)
    labels = (tokens[:, 0] + tokens[:, 1]) % 23
    for dtype in ("float64",):
        result = export(cert, tmp_path / "x.onnx", format="onnx", dtype=dtype, source=source,
                        data=tokens, labels=labels, verify=256)
        d = result.verification["data"]
        assert d["agreement"]["equal"] == d["positions"], d
        assert d["export"]["changed"] == 0 and d["export"]["accuracy"] == d["source"]["accuracy"]


def test_a_model_without_positions(tmp_path) -> None:
    """No position embedding: the certificate covers every length (T = 0); the export builds
    its causal mask from the sequence's own length."""
    model = onnx_transformer(3, vocabulary=5, d_model=4, heads=2, d_mlp=4)
    inits = {t.name: t for t in model.graph.initializer}
    add = next(n for n in model.graph.node if n.op_type == "Add"
               and any(i in inits and list(inits[i].dims) == [3, 4] for i in n.input))
    first = next(i for i in add.input if i not in inits)
    add.CopyFrom(onnx.helper.make_node("Identity", [first], list(add.output), name=add.name))
    src = tmp_path / "model.onnx"
    onnx.save(model, src)
    doc = _certified(model)
    assert doc["architecture"]["positions"] == 0
    out = tmp_path / "export.onnx"
    result = export(doc, out, format="onnx", verify=10**4, source=src, timing=False)
    s = result.verification["sequences"]
    assert s["every"] and s["agreement"]["equal"] == s["positions"], s
    # the export itself takes any length (the source only its own): against the model's own
    # float evaluation on shorter sequences
    tr = transformer_of(doc)
    plain = tmp_path / "plain.onnx"
    plain.write_bytes(transformer_onnx(doc).SerializeToString())
    for n in (1, 2, 5):
        tokens, _ = task_sequences(5, n, 40, seed=n)
        own = np.stack([tr.evaluate_float(t) for t in tokens])
        assert np.abs(_run(plain, tokens) - own).max() < 1e-8 * max(1.0, np.abs(own).max())
