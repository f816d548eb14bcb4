"""``--json``: every verb prints one JSON object that validates against the documented schema
(docs/cli-output.schema.json, generated from :data:`exactnorm.commands._json.SCHEMA`), whatever
happened — a verdict, a plan, an error, a deadline — and nothing else on standard output.

The validator below is a small implementation of the JSON Schema keywords the schema uses
(standard library only; the project takes no ``jsonschema`` dependency); a test shows it refuses
mutated outputs, so that a passing validation means something.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from exactnorm.cli import build_parser, main
from exactnorm.commands._json import DETAILS, SCHEMA, VERDICTS
from tests.helpers import ROOT

_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def _is_type(value: Any, name: str) -> bool:
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, _TYPES[name])


def errors(value: Any, schema: dict[str, Any], root: dict[str, Any] | None = None,
           where: str = "$") -> list[str]:
    """Where ``value`` breaks ``schema`` (empty: valid). Keywords: type, const, enum, required,
    properties, additionalProperties, items, minimum, oneOf, allOf, if/then, not, $ref."""
    root = schema if root is None else root
    out: list[str] = []
    if "$ref" in schema:
        ref = schema["$ref"]
        assert ref.startswith("#/$defs/"), ref
        out += errors(value, root["$defs"][ref.removeprefix("#/$defs/")], root, where)
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_is_type(value, n) for n in names):
            return out + [f"{where}: {value!r:.60} is not of type {names}"]
    if "const" in schema and value != schema["const"]:
        out.append(f"{where}: {value!r:.60} is not {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        out.append(f"{where}: {value!r:.60} is not one of {schema['enum']}")
    if "minimum" in schema and _is_type(value, "number") and value < schema["minimum"]:
        out.append(f"{where}: {value} < {schema['minimum']}")
    if isinstance(value, dict):
        for key in schema.get("required", ()):
            if key not in value:
                out.append(f"{where}: missing key {key!r}")
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, v in value.items():
            if key in props:
                out += errors(v, props[key], root, f"{where}.{key}")
            elif extra is False:
                out.append(f"{where}: unexpected key {key!r}")
            elif isinstance(extra, dict):
                out += errors(v, extra, root, f"{where}.{key}")
    if isinstance(value, list) and "items" in schema:
        for i, v in enumerate(value):
            out += errors(v, schema["items"], root, f"{where}[{i}]")
    if "oneOf" in schema:
        passing = sum(not errors(value, s, root, where) for s in schema["oneOf"])
        if passing != 1:
            out.append(f"{where}: matches {passing} of the oneOf schemas, not exactly one")
    for sub in schema.get("allOf", ()):
        out += errors(value, sub, root, where)
    if "not" in schema and not errors(value, schema["not"], root, where):
        out.append(f"{where}: matches a schema it must not match")
    if "if" in schema and not errors(value, schema["if"], root, where):
        out += errors(value, schema.get("then", {}), root, where)
    return out


def run_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    """``main(argv + ["--json"])``: the exit code and the one object of standard output,
    validated against the schema."""
    code = main([*argv, "--json"])
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert len(lines) == 1, out  # one object, nothing else on standard output
    obj = json.loads(lines[0])
    problems = errors(obj, SCHEMA)
    assert not problems, problems
    assert obj["exit_code"] == code
    assert obj["command"] == argv[0]
    return code, obj


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def certificate(tmp_path: Path, capsys) -> Path:
    out = tmp_path / "c.json"
    assert main(["certify", "--demo", "--out", str(out)]) == 0
    capsys.readouterr()
    return out


# ------------------------------------------------------------------------ the validator


def test_the_validator_refuses_what_the_schema_excludes(certificate, capsys):
    _, obj = run_json(["check", str(certificate)], capsys)
    mutants = []
    for key in ("verdict", "exit_code", "details", "seconds"):
        m = copy.deepcopy(obj)
        del m[key]
        mutants.append(m)
    for key, value in (("verdict", "MAYBE"), ("exit_code", "0"), ("layer", "1"),
                       ("format", "other"), ("seconds", {"check": "fast"}),
                       ("bytes", {"certificate": -1}), ("extra", 1)):
        m = copy.deepcopy(obj)
        m[key] = value
        mutants.append(m)
    m = copy.deepcopy(obj)
    m["details"]["unknown"] = True  # a verb's keys are closed too
    mutants.append(m)
    m = copy.deepcopy(obj)
    del m["details"]["agree"]
    mutants.append(m)
    m = copy.deepcopy(obj)
    m["details"]["check"] = "VALID"
    mutants.append(m)
    for mutant in mutants:
        assert errors(mutant, SCHEMA), mutant


def test_the_documented_schema_file_is_the_schema():
    written = json.loads((ROOT / "docs" / "cli-output.schema.json").read_text())
    assert written == json.loads(json.dumps(SCHEMA)), "regenerate with python docs/gen_cli.py"


def test_every_verb_has_json_and_details_keys():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, p in sub.choices.items():
        assert "--json" in p.format_help(), name
        assert name in DETAILS, name
    assert set(VERDICTS) == set(SCHEMA["properties"]["verdict"]["enum"])


# ------------------------------------------------------------------------ every verb


def test_certify_json(tmp_path, capsys):
    code, obj = run_json(["certify", "--demo", "--out", str(tmp_path / "a.json")], capsys)
    assert (code, obj["verdict"]) == (0, "VALID")
    assert obj["details"]["check"]["ok"] and obj["paths"]["certificate"].endswith("a.json")
    assert obj["bytes"]["certificate"] == (tmp_path / "a.json").stat().st_size
    assert len(obj["details"]["layers"]) == 3 and obj["seconds"]["check"] >= 0
    code, obj = run_json(["certify", "--demo", "--out", str(tmp_path / "b.json"), "--no-check"],
                         capsys)
    assert (code, obj["verdict"], obj["details"]["check"]) == (0, "UNCHECKED", None)
    code, obj = run_json(["certify", "--demo", "--out", str(tmp_path / "c.json"), "--dry-run"],
                         capsys)
    assert (code, obj["verdict"]) == (0, "PLAN") and not (tmp_path / "c.json").exists()
    assert obj["details"]["plan"]["estimate"]["seconds"] >= 0
    code, obj = run_json(["certify", str(tmp_path / "missing.json")], capsys)
    assert (code, obj["verdict"], obj["details"]) == (2, "ERROR", {})
    assert "missing.json" in obj["message"]


def test_check_json(certificate, capsys):
    code, obj = run_json(["check", str(certificate), "--both"], capsys)
    assert (code, obj["verdict"], obj["rule"]) == (0, "VALID", "valid")
    assert obj["details"]["checker"] == "pure+flint" and obj["details"]["agree"]
    assert obj["details"]["claim"] == "REACHABLE"
    doc = json.loads(certificate.read_text())
    doc["domain"]["lower"][0] = "-2"
    certificate.write_text(json.dumps(doc))
    code, obj = run_json(["check", str(certificate)], capsys)
    assert (code, obj["verdict"]) == (1, "INVALID") and obj["rule"] != "valid"
    assert obj["message"] and not obj["details"]["ok"]


def _capacity_files(tmp_path: Path) -> tuple[Path, Path, Path]:
    np.savez(tmp_path / "frozen.npz", W1=np.array([[1.0, 0], [0, 1], [1, 1]]), b1=np.zeros(3),
             W2=np.array([[1.0, 2, 3], [2, 0, 1]]), b2=np.zeros(2))
    np.savez(tmp_path / "target.npz", W1=np.array([[2.0, 3], [-1, 0.5]]),
             b1=np.array([1.0, -2]), activations=np.array(["identity"]))
    np.savez(tmp_path / "far.npz", W1=np.array([[1.0, 0], [0, 1]]), b1=np.zeros(2),
             W2=np.array([[1.0, -1], [1, 1]]), b2=np.zeros(2))
    return tmp_path / "frozen.npz", tmp_path / "target.npz", tmp_path / "far.npz"


def test_capacity_json(tmp_path, capsys):
    frozen, target, _ = _capacity_files(tmp_path)
    code, obj = run_json(["capacity", str(frozen), "--box", "0:1", "--target", str(target),
                          "--out", str(tmp_path / "r.json")], capsys)
    assert (code, obj["verdict"]) == (0, "REACHABLE") and obj["details"]["check"]["ok"]
    assert obj["paths"]["document"].endswith("r.json")
    code, obj = run_json(["capacity", str(frozen)], capsys)
    assert (code, obj["verdict"]) == (0, "PROFILE") and obj["details"]["profile"]
    code, obj = run_json(["capacity", str(frozen), "--box", "0:1", "--target", str(target),
                          "--dry-run"], capsys)
    assert (code, obj["verdict"]) == (0, "PLAN")
    assert obj["details"]["plan"]["pairs"][0]["rows"] == 2 * 2


def test_capacity_json_of_a_no(tmp_path, capsys):
    """UNREACHABLE (exit 1) with its class and witness; UNDECIDED (exit 4) with its class."""
    _, target, far = _capacity_files(tmp_path)
    np.savez(tmp_path / "t.npz", W1=np.array([[1.0, 5], [7, -2]]), b1=np.array([1.0, -2]),
             activations=np.array(["identity"]))
    code, obj = run_json(["capacity", str(far), "--box", "0:1", "--target",
                          str(tmp_path / "t.npz")], capsys)
    assert (code, obj["verdict"], obj["details"]["class"]) == (1, "UNREACHABLE", "every")
    assert obj["details"]["witness"] and obj["details"]["check"]["facts"]["claim"] == \
        "UNREACHABLE"
    np.savez(tmp_path / "lin.npz", W1=np.eye(4)[:2], b1=np.zeros(2), W2=np.ones((1, 2)),
             b2=np.zeros(1))
    np.savez(tmp_path / "kink.npz", W1=np.array([[1.0, -1, 0, 0]]), b1=np.zeros(1),
             activations=np.array(["relu"]))
    code, obj = run_json(["capacity", str(tmp_path / "lin.npz"), "--box", "-1:1", "--target",
                          str(tmp_path / "kink.npz")], capsys)
    assert (code, obj["verdict"]) == (4, "UNDECIDED") and obj["details"]["class"]


def test_export_and_report_json(certificate, tmp_path, capsys):
    code, obj = run_json(["export", str(certificate), "--format", "json", "--out",
                          str(tmp_path / "e.json")], capsys)
    assert (code, obj["verdict"]) == (0, "VALID") and obj["details"]["certified"]
    assert "read back" in obj["details"]["read_back"]
    code, obj = run_json(["export", str(certificate), "--format", "npz", "--out",
                          str(tmp_path / "e.npz"), "--no-check"], capsys)
    assert (code, obj["verdict"]) == (0, "UNCHECKED") and not obj["details"]["certified"]
    assert obj["bytes"]["output"] == (tmp_path / "e.npz").stat().st_size
    code, obj = run_json(["export", str(certificate), "--format", "json", "--out", "-"], capsys)
    assert (code, obj["verdict"]) == (2, "ERROR")
    code, obj = run_json(["report", str(certificate), "--out", str(tmp_path / "rep"),
                          "--float-points", "4"], capsys)
    assert (code, obj["verdict"]) == (0, "VALID")
    assert obj["paths"]["report.md"].endswith("report.md")


def test_realizable_detpoly_tables_sweep_json(tmp_path, capsys):
    code, obj = run_json(["realizable", "--width", "4", "--d-in", "2", "--d-out", "2", "--w",
                          "reachable"], capsys)
    assert (code, obj["verdict"]) == (0, "REACHABLE") and obj["details"]["rank_K"] == 4
    code, obj = run_json(["detpoly", "--d-in", "2", "--d-out", "2", "--out",
                          str(tmp_path / "d.json")], capsys)
    assert (code, obj["verdict"], obj["details"]["mode"]) == (0, "DONE", "expand")
    code, obj = run_json(["detpoly", "--check", str(tmp_path / "d.json")], capsys)
    assert (code, obj["verdict"]) == (0, "VALID")
    code, obj = run_json(["tables", "--only", "T1", "--check", "--out", str(tmp_path)], capsys)
    assert (code, obj["verdict"]) == (1, "DIFFERENT") and obj["details"]["differences"]
    code, obj = run_json(["sparse-sweep", "--sizes", "2", "--factors", "1", "--p-grid", "0.5",
                          "--draws", "2", "--no-plot", "--out", str(tmp_path / "sw")], capsys)
    assert (code, obj["verdict"]) == (0, "DONE") and obj["details"]["rows"] >= 1


def test_usage_error_and_deadline_json(capsys, tmp_path):
    code, obj = run_json(["check", "--no-such-option", "x"], capsys)
    assert (code, obj["verdict"]) == (2, "ERROR") and "--no-such-option" in obj["message"]
    code, obj = run_json(["certify", "--demo", "--out", str(tmp_path / "t.json"), "--timeout",
                          "0.000001"], capsys)
    assert (code, obj["verdict"]) == (124, "TIMEOUT") and not (tmp_path / "t.json").exists()


def test_transformer_dry_run_json(tmp_path, capsys):
    pytest.importorskip("onnx")
    model = ROOT / "tests" / "model" / "data" / "tiny_preln.onnx"
    code, obj = run_json(["certify", str(model), "--dry-run", "--out",
                          str(tmp_path / "t.json")], capsys)
    assert (code, obj["verdict"]) == (0, "PLAN") and not (tmp_path / "t.json").exists()
    slots = obj["details"]["plan"]["slots"]
    assert len(slots) == obj["details"]["target"]["slots"] > 0
    assert all(s["estimate"]["seconds"] >= 0 for s in slots)
