"""The bytes checked are the bytes written: every verb that writes a document says the word a
fresh ``exactnorm check`` of the written file says (a subprocess of the checkout, nothing edited
in between), and a writer that corrupts the bytes it writes cannot get a valid word printed —
the document is then not written at all."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from exactnorm import api
from exactnorm.cli import main
from exactnorm.errors import InvalidCertificateError
from tests.helpers import checkout_env, run_cli


def fresh_check(path) -> tuple[int, str]:
    """``exactnorm check PATH --json`` in a new process: exit code and verdict line's word."""
    r = run_cli("check", str(path), "--json", timeout=300)
    obj = json.loads(r.stdout)
    word = obj["verdict"] if obj["verdict"] != "VALID" else \
        ("VALID" if obj["details"]["claim"] == "REACHABLE" else f"{obj['details']['claim']} VALID")
    return r.returncode, word


def verb_word(out: str) -> str:
    """The word of the verdict line a verb printed: ``VALID``, ``UNREACHABLE VALID``, …"""
    line = next(ln for ln in out.splitlines() if " checker) " in ln)
    return line.split(" (")[0]


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def _capacity_inputs(tmp_path):
    np.savez(tmp_path / "frozen.npz", W1=np.array([[1.0, 0], [0, 1], [1, 1]]), b1=np.zeros(3),
             W2=np.array([[1.0, 2, 3], [2, 0, 1]]), b2=np.zeros(2))
    np.savez(tmp_path / "reach.npz", W1=np.array([[2.0, 3], [-1, 0.5]]),
             b1=np.array([1.0, -2]), activations=np.array(["identity"]))
    np.savez(tmp_path / "far.npz", W1=np.array([[1.0, 0], [0, 1]]), b1=np.zeros(2),
             W2=np.array([[1.0, -1], [1, 1]]), b2=np.zeros(2))
    np.savez(tmp_path / "t.npz", W1=np.array([[1.0, 5], [7, -2]]), b1=np.array([1.0, -2]),
             activations=np.array(["identity"]))


@pytest.mark.parametrize("out", ["c.json", "c.json.gz"])
def test_certify_says_what_a_fresh_check_says(tmp_path, capsys, out):
    assert main(["certify", "--demo", "--out", out]) == 0
    said = verb_word(capsys.readouterr().out)
    assert (0, said) == fresh_check(tmp_path / out) and said == "VALID"


@pytest.mark.parametrize("frozen,target,word", [("frozen.npz", "reach.npz", "VALID"),
                                                ("far.npz", "t.npz", "UNREACHABLE VALID")])
def test_capacity_says_what_a_fresh_check_says(tmp_path, capsys, frozen, target, word):
    _capacity_inputs(tmp_path)
    code = main(["capacity", frozen, "--box", "0:1", "--target", target, "--out", "d.json"])
    said = verb_word(capsys.readouterr().out)
    assert said == word and code in (0, 1)
    assert fresh_check(tmp_path / "d.json") == (0, said)


def test_api_writers_check_what_they_write(tmp_path):
    c = api.certify(api.demo_target(), seed=0)
    size = api.write_certificate(c, tmp_path / "w.json.gz")
    assert size == (tmp_path / "w.json.gz").stat().st_size
    assert fresh_check(tmp_path / "w.json.gz") == (0, "VALID")
    api.save_certificate(api.certificate_document(c), tmp_path / "s.json")
    assert fresh_check(tmp_path / "s.json") == (0, "VALID")
    assert api.check(tmp_path / "s.json").ok  # check takes a path too
    assert api.check(str(tmp_path / "s.json")).ok


def test_exact_export_is_read_back_and_equal_to_the_certificate(tmp_path, capsys):
    """The export is not a certificate (``check`` says so, exit 2); what its verb says is the
    certificate's word and that the written bytes give the certificate's network exactly, which
    a fresh process confirms."""
    assert main(["certify", "--demo", "--out", "c.json"]) == 0
    capsys.readouterr()
    assert main(["export", "c.json", "--format", "json", "--out", "e.json"]) == 0
    out = capsys.readouterr().out
    assert verb_word(out) == "VALID" and "read back: the written bytes were read back" in out
    assert fresh_check(tmp_path / "c.json") == (0, "VALID")
    assert run_cli("check", str(tmp_path / "e.json")).returncode == 2
    code = ("from exactnorm.certificate import load_certificate, read_frozen\n"
            "from exactnorm.outputs.export import read_exported_json\n"
            "import sys\n"
            "same = read_exported_json('e.json') == read_frozen(load_certificate('c.json'))\n"
            "sys.exit(0 if same else 1)\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=checkout_env(),
                       capture_output=True, text=True, check=False, timeout=300)
    assert r.returncode == 0, r.stderr


# ------------------------------------------------- a corrupting writer gets no valid word


def _float_in_provenance(write):
    """A writer that puts a float where an exact number belongs (the BatchNorm ε of issue 38)."""
    def corrupt(doc_or_c, path, **kw):
        size = write(doc_or_c, path, **kw)
        import gzip
        from pathlib import Path

        p = Path(path)
        raw = gzip.decompress(p.read_bytes()) if p.name.endswith(".gz") else p.read_bytes()
        doc = json.loads(raw)
        doc["provenance"]["epsilon"] = 9.999999747378752e-06
        text = json.dumps(doc).encode()
        p.write_bytes(gzip.compress(text) if p.name.endswith(".gz") else text)
        return size
    return corrupt


def test_capacity_never_calls_a_refused_document_valid(tmp_path, capsys, monkeypatch):
    import exactnorm.api._capacity as capacity_api

    _capacity_inputs(tmp_path)
    monkeypatch.setattr(capacity_api, "save_certificate",
                        _float_in_provenance(capacity_api.save_certificate))
    code = main(["capacity", "frozen.npz", "--box", "0:1", "--target", "reach.npz", "--out",
                 "d.json"])
    out, err = capsys.readouterr()
    assert code == 3 and "VALID" not in out and "not kept" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["far.npz", "frozen.npz",
                                                         "reach.npz", "t.npz"]


def test_certify_never_calls_a_refused_certificate_valid(tmp_path, capsys, monkeypatch):
    import exactnorm.certificate as certificate

    monkeypatch.setattr(certificate, "write_certificate",
                        _float_in_provenance(certificate.write_certificate))
    code = main(["certify", "--demo", "--out", "c.json"])
    out, err = capsys.readouterr()
    assert code == 1 and "INVALID" in out and "was not written" in err
    assert list(tmp_path.iterdir()) == []


def test_api_save_refuses_what_the_checker_refuses(tmp_path):
    doc = api.certificate_document(api.certify(api.demo_target(), seed=0))
    doc["domain"]["upper"][0] = "7"  # a different box: the certificate no longer holds
    with pytest.raises(InvalidCertificateError, match="not kept"):
        api.save_certificate(doc, tmp_path / "bad.json")
    assert list(tmp_path.iterdir()) == []
    assert api.save_certificate(doc, tmp_path / "bad.json", check=False) > 0


def test_export_never_writes_bytes_that_differ_from_the_certificate(tmp_path, capsys,
                                                                   monkeypatch):
    import exactnorm.api._outputs as outputs

    assert main(["certify", "--demo", "--out", "c.json"]) == 0
    capsys.readouterr()
    render = outputs.render_export

    def changed(doc, fmt, **kw):
        from exactnorm.outputs.export.json import export_bytes

        data, warning = render(doc, fmt, **kw)
        exported = json.loads(data)
        exported["layers"][0]["gamma_hat"][0] = "12345/7"  # one number, well formed
        return export_bytes(exported), warning

    monkeypatch.setattr(outputs, "render_export", changed)
    code = main(["export", "c.json", "--format", "json", "--out", "e.json"])
    _, err = capsys.readouterr()
    assert code == 3 and "differs from the certificate" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.json"]
