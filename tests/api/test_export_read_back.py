"""The exact export's read-back (:func:`exactnorm.api._export_check.export_difference`) finds
any difference between the written bytes and the certificate: a frozen entry, a BatchNorm
statistic, a draw record, a copied field, a float, a layer too many — and none in what
``export`` writes, for dense, convolutional and residual certificates."""

from __future__ import annotations

import json

import pytest

from exactnorm import api
from exactnorm.api._export_check import export_difference
from exactnorm.model.targets import random_target
from exactnorm.outputs.export import export_document
from exactnorm.outputs.export.json import export_bytes

DIGITS = 200_000


@pytest.fixture(scope="module")
def certificate() -> dict:
    return api.certificate_document(api.certify(random_target((3, 4, 2), seed=2), seed=0))


def _written(tmp_path, doc: dict) -> object:
    path = tmp_path / "e.json"
    path.write_bytes(export_bytes(doc))
    return path


def test_what_export_writes_reads_back_equal(certificate, tmp_path):
    exported = export_document(certificate, mean="1/3", scale=2)
    assert export_difference(certificate, _written(tmp_path, exported), DIGITS) is None


def _mutants(exported: dict) -> dict[str, dict]:
    out = {}

    def change(name, fn):
        m = json.loads(json.dumps(exported))
        fn(m)
        out[name] = m

    change("weight", lambda m: m["layers"][0]["weight"][0].__setitem__(0, 12345))
    change("mean", lambda m: m["layers"][1]["mean"].__setitem__(0, "1/7"))
    change("gamma_hat", lambda m: m["layers"][0]["gamma_hat"].__setitem__(0, "5"))
    change("beta_hat", lambda m: m["layers"][0]["beta_hat"].__setitem__(0, "-5/3"))
    change("source", lambda m: m["layers"][0]["source"].__setitem__("seed", 1))
    change("activation", lambda m: m["layers"][0].__setitem__("activation", "identity"))
    change("checkpoints", lambda m: m.__setitem__("checkpoints", m["checkpoints"][:-1]))
    change("domain", lambda m: m["domain"]["upper"].__setitem__(0, "9"))
    change("layers", lambda m: m["layers"].append(m["layers"][-1]))
    change("missing", lambda m: m["layers"][0].pop("scale"))
    return out


def test_every_difference_is_found(certificate, tmp_path):
    exported = export_document(certificate)
    assert exported["layers"][0].get("source"), "the first matrix is by reference"
    for name, mutant in _mutants(exported).items():
        found = export_difference(certificate, _written(tmp_path, mutant), DIGITS)
        assert found, name


def test_a_float_in_the_bytes_is_found(certificate, tmp_path):
    path = tmp_path / "e.json"
    text = export_bytes(export_document(certificate)).decode()
    path.write_text(text.replace('"scale":[1,', '"scale":[1.0,', 1))
    assert "do not parse strictly" in export_difference(certificate, path, DIGITS)


@pytest.mark.parametrize("shortcut", ["proj", "A"])
def test_convolutional_and_residual_exports_read_back_equal(tmp_path, shortcut):
    """A small ResNet (convolutions, an identity and a projection or option-A shortcut): the
    export verb's read-back and a second one here agree with the certificate."""
    onnx = pytest.importorskip("onnx")
    from tests.model.resnet_onnx import small_resnet_onnx

    onnx.save(small_resnet_onnx(7, shortcut=shortcut, den=8, bn=False), tmp_path / "r.onnx")
    doc = api.certificate_document(api.certify(tmp_path / "r.onnx", box="0:1"))
    result = api.export(doc, tmp_path / "e.json", format="json")
    assert result.read_back is not None
    assert export_difference(doc, tmp_path / "e.json", DIGITS) is None
    exported = json.loads((tmp_path / "e.json").read_bytes())
    layer = next(i for i, L in enumerate(exported["layers"]) if "gamma_hat" in L)
    exported["layers"][layer]["gamma_hat"][0] = "1/9"
    assert export_difference(doc, _written(tmp_path, exported), DIGITS)
