"""``exactnorm report`` on a transformer certificate: the slot table (roles, box rules, widths,
bits) against the document read independently, the float error section, the data section, an
INVALID document refused."""

from __future__ import annotations

import copy
import gzip
import json

import numpy as np
import pytest

from exactnorm.api import certify, report
from exactnorm.errors import InvalidCertificateError
from tests.helpers import ROOT, run_cli

DATA = ROOT / "tests" / "model" / "data"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    doc = certify(str(DATA / "tiny_preln.onnx"), jobs=1).document
    path = tmp_path_factory.mktemp("tiny") / "tiny.json.gz"
    path.write_bytes(gzip.compress(json.dumps(doc).encode(), mtime=0))
    return path, doc


def _max_bits(v) -> int:
    """Largest ``max(bits(|p|), bits(q))`` of a vector as the document writes it (compact
    ``{"den", "num"}`` or ``"p/q"`` strings), read here without the library's readers."""
    from fractions import Fraction

    if isinstance(v, dict):
        values = [Fraction(int(n), int(v["den"])) for n in v["num"]]
    else:
        values = [Fraction(x) for x in v]
    return max(max(abs(x.numerator).bit_length(), x.denominator.bit_length(), 1)
               for x in values)


def test_slot_table_matches_the_document(tiny) -> None:
    path, doc = tiny
    result = report(path, None, float_points=0)
    rows = {r["slot"]: r for r in result["slots"]}
    assert list(rows) == [n for n in _slot_order(doc)]
    arch = doc["architecture"]["nodes"]
    for name, body in doc["slots"].items():
        r = rows[name]
        layers = body["network"]["layers"]
        assert r["frozen_layers"] == len(layers)
        assert r["gamma_bits"] == max(_max_bits(layer["gamma"]) for layer in layers)
        assert r["beta_bits"] == max(_max_bits(layer["beta"]) for layer in layers)
        assert r["role"] == doc["provenance"]["slots"][name]["role"]
        read = arch[r["reads"]]["op"]
        rule = {"input": "one-hot cube", "layernorm": "LayerNorm", "attention": "value hull",
                "slot": "interval image", "add": "interval sum"}[read]
        assert rule in r["box_rule"]
        # the box's widest interval from the declared domain (the checker compares it with
        # the derived box): an independent read of the same numbers
        dom = body["domain"]
        lo, hi = (_values(dom["lower"]), _values(dom["upper"]))
        assert r["widest"] == pytest.approx(float(max(h - low for low, h in zip(lo, hi))))
    assert result.counts["tuned"] == sum(2 * len(_values(layer["gamma"]))
                                         for body in doc["slots"].values()
                                         for layer in body["network"]["layers"])
    md = result.markdown
    assert "## What is proven" in md and "**VALID**" in md
    for name in rows:
        assert f"| {name} |" in md


def _values(v):
    from fractions import Fraction

    if isinstance(v, dict):
        return [Fraction(int(n), int(v["den"])) for n in v["num"]]
    return [Fraction(x) for x in v]


def _slot_order(doc):
    out = []
    for node in doc["architecture"]["nodes"]:
        if node["op"] == "slot":
            out.append(node["slot"])
        for h in node.get("heads", []):
            out += [h["q"], h["k"], h["v"]]
    return out


def test_float_and_data_sections(tiny, tmp_path) -> None:
    path, _ = tiny
    tokens = np.array([[a, b, 23] for a in range(23) for b in range(23)], dtype=np.int64)
    np.save(tmp_path / "t.npy", tokens)
    np.save(tmp_path / "y.npy", (tokens[:, 0] + tokens[:, 1]) % 23)
    result = report(path, tmp_path / "rep", float_points=100, data=tmp_path / "t.npy",
                    labels=tmp_path / "y.npy")
    text = (tmp_path / "rep" / "report.md").read_text()
    assert "## Float error of an export" in text and "## On the data" in text
    assert (tmp_path / "rep" / "report.html").exists()
    d = result.data
    assert d["sequences"] == 529 and d["samples"] == 3 * 529
    assert d["float64"]["max_rel"] < 1e-8 and d["float64"]["changed"] == 0
    assert 0 <= d["exact_accuracy"] <= 1 and d["float64"]["accuracy"] == d["exact_accuracy"]
    assert result.float_errors["sequences"] == 100


def test_an_invalid_document_gets_no_report(tiny, tmp_path) -> None:
    doc = copy.deepcopy(tiny[1])
    node = next(n for n in doc["architecture"]["nodes"] if n["op"] == "attention")
    node["scale"] = "1/3"
    with pytest.raises(InvalidCertificateError):
        report(doc, tmp_path / "rep")
    assert not (tmp_path / "rep" / "report.md").exists()
    unchecked = report(doc, None, check=False, float_points=0)
    assert "NOT CHECKED" in unchecked.markdown


def test_cli_report(tiny, tmp_path) -> None:
    done = run_cli("report", str(tiny[0]), "--out", str(tmp_path / "r"), "--float-points", "8")
    assert done.returncode == 0, done.stderr
    assert "TRANSFORMER VALID" in done.stdout and "wrote" in done.stdout
    assert "| block0.mlp | mlp |" in (tmp_path / "r" / "report.md").read_text()
