"""``--json``: every verb's outcome as one JSON object on standard output, with stable keys.

Contract
--------
With ``--json`` a verb prints exactly one JSON object (one line) on standard output and nothing
else there; progress and notes stay on standard error, the human text is not printed. The object
has the keys of :data:`ENVELOPE` always, whatever happened — a verdict, a plan, an input error
(``verdict`` ``ERROR``), an internal error, an interrupt or a deadline — and ``details`` holds
the verb's own keys (:data:`DETAILS`). :data:`SCHEMA` is the JSON Schema (draft 2020-12) of the
object; ``docs/cli-output.schema.json`` is this schema written out by ``docs/gen_cli.py``, and
``tests/commands/test_json_output.py`` validates every verb's output against it.

Keys are added, never renamed or removed, while ``version`` stays 1.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import sys
from collections.abc import Mapping
from typing import Any

__all__ = ["OUTPUT_FORMAT", "OUTPUT_VERSION", "ENVELOPE", "DETAILS", "VERDICTS", "SCHEMA",
           "add_json_option", "json_requested", "outcome", "emit", "emit_failure",
           "verdict_fields", "json_ready"]

OUTPUT_FORMAT = "exactnorm.cli-output"
OUTPUT_VERSION = 1

#: every verdict word a verb may give, with what it means
VERDICTS = {
    "VALID": "the certificate (or document) is valid: checked by the independent checker",
    "INVALID": "the checker refused the certificate (rule, layer, neuron say where)",
    "DISAGREE": "check --both: the two arithmetics gave different verdicts (a bug)",
    "UNCHECKED": "written or read without a check (--no-check)",
    "REACHABLE": "capacity, realizable: the target is reached (capacity: with a certificate)",
    "UNREACHABLE": "capacity, realizable: no tuning reaches the target (capacity: with a "
                   "witness)",
    "UNDECIDED": "capacity: not settled in the classes it decides",
    "PROFILE": "capacity without a target: the capacity profile",
    "PLAN": "--dry-run: the plan and its estimates; nothing was built",
    "DONE": "tables, sparse-sweep, detpoly: the files were written",
    "SAME": "tables --check: the tables are up to date",
    "DIFFERENT": "tables --check: some table differs",
    "ERROR": "usage, input or internal error (exit_code says which); nothing was checked",
    "INTERRUPTED": "Ctrl-C, SIGINT or SIGTERM: the work stopped, workers ended",
    "TIMEOUT": "--timeout passed: the work stopped",
}

_NUMBER_MAP = {"type": "object", "additionalProperties": {"type": "number", "minimum": 0}}
_INT_MAP = {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}}
_TEXT_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
_NULLABLE_INT = {"type": ["integer", "null"]}
_NULLABLE_TEXT = {"type": ["string", "null"]}
_ANY_OBJECT = {"type": "object"}
_NULLABLE_OBJECT = {"type": ["object", "null"]}

#: the keys every object has: name → (schema, meaning)
ENVELOPE: dict[str, tuple[dict[str, Any], str]] = {
    "format": ({"const": OUTPUT_FORMAT}, f'always "{OUTPUT_FORMAT}"'),
    "version": ({"const": OUTPUT_VERSION}, "version of these keys (keys are only added)"),
    "command": ({"type": "string"}, "the verb (certify, check, capacity, …)"),
    "verdict": ({"enum": sorted(VERDICTS)}, "one word: what happened (table below)"),
    "exit_code": ({"type": "integer", "minimum": 0}, "the process's exit code"),
    "message": ({"type": "string"}, "the one-line message: the checker's, the plan's, the "
                                    "error's"),
    "rule": (_NULLABLE_TEXT, "the checker's rule of an INVALID verdict (valid for a valid one), "
                            "else null"),
    "layer": (_NULLABLE_INT, "the frozen layer of an INVALID verdict, else null"),
    "neuron": (_NULLABLE_INT, "the neuron of an INVALID verdict, else null"),
    "seconds": (_NUMBER_MAP, "wall time of each stage (read, plan, build, write, check, …)"),
    "bytes": (_INT_MAP, "size of each file read or written, by role (certificate, output, …)"),
    "paths": (_TEXT_MAP, "each file read or written, by role"),
    "details": (_ANY_OBJECT, "the verb's own keys (below)"),
}

_VERDICT_JSON = {"type": "object", "required": ["ok", "rule", "message"],
                 "properties": {"ok": {"type": "boolean"}, "rule": {"type": "string"},
                                "message": {"type": "string"}, "layer": _NULLABLE_INT,
                                "neuron": _NULLABLE_INT, "facts": _NULLABLE_OBJECT},
                 "additionalProperties": False}
_ESTIMATE = {"type": "object",
             "required": ["seconds", "peak_bytes", "certificate_bytes", "depth", "systems",
                          "system_size"],
             "additionalProperties": {"type": ["number", "string", "null", "array", "object"]}}

#: per verb: its ``details`` keys → (schema, meaning); every key is present (null when unknown)
DETAILS: dict[str, dict[str, tuple[dict[str, Any], str]]] = {
    "certify": {
        "construction": (_NULLABLE_TEXT, "the construction built (or planned)"),
        "plan": (_ANY_OBJECT, "what the plan settled: construction, options, note, estimate "
                              "(seconds, peak_bytes, certificate_bytes, depth, systems, "
                              "system_size), runs, per-layer rows"),
        "layers": ({"type": "array", "items": _ANY_OBJECT},
                   "per target layer: d_in, d_out, widths, systems, system_size, rank, "
                   "gamma_bits, beta_bits, draws, seconds (empty for a plan)"),
        "version": (_NULLABLE_INT, "certificate format version written"),
        "check": ({"oneOf": [_VERDICT_JSON, {"type": "null"}]},
                  "the checker's verdict on the written bytes (null: not checked)"),
        "target": (_ANY_OBJECT, "widths, kinds and box dimension of the target"),
    },
    "check": {
        "ok": ({"type": "boolean"}, "the verdict (the same in every arithmetic run)"),
        "claim": (_NULLABLE_TEXT, "what a valid document proves: REACHABLE (a certificate) or "
                                  "UNREACHABLE (an impossibility document)"),
        "facts": (_NULLABLE_OBJECT, "the checker's facts: box, widths, construction, seed rule, "
                                    "draw bits, …"),
        "checker": ({"type": "string"}, "the arithmetics run: flint, pure or pure+flint"),
        "agree": ({"type": "boolean"}, "whether the arithmetics agree (always true for one)"),
        "verdicts": ({"type": "object", "additionalProperties": _VERDICT_JSON},
                     "each arithmetic's verdict"),
    },
    "capacity": {
        "class": (_NULLABLE_TEXT, "the class of tunings an UNREACHABLE or UNDECIDED covers"),
        "reason": (_NULLABLE_TEXT, "why: the decision's reason"),
        "witness": ({}, "the impossibility witness (null otherwise)"),
        "profile": ({"type": "array", "items": _ANY_OBJECT},
                    "per pair of frozen linear layers: rank of its Khatri–Rao matrix and the "
                    "size a universal pair needs"),
        "best": (_NULLABLE_OBJECT, "--best: the least-squares optimum of the stable class"),
        "check": ({"oneOf": [_VERDICT_JSON, {"type": "null"}]},
                  "the checker's verdict on the written bytes of the document"),
        "hint": (_NULLABLE_TEXT, "a note when the target equals the frozen network up to float "
                                 "rounding only"),
        "plan": (_NULLABLE_OBJECT, "--dry-run: the sizes of the work, per pair"),
        "questions": ({"type": ["array", "null"], "items": _ANY_OBJECT},
                      "a transformer: every local LayerNorm question, its answer and witness "
                      "(null for other networks)"),
    },
    "export": {
        "format": ({"type": "string"}, "json, npz, onnx or torch"),
        "certified": ({"type": "boolean"}, "true for the exact json format only"),
        "check": ({"oneOf": [_VERDICT_JSON, {"type": "null"}]},
                  "the checker's verdict on the certificate before the export"),
        "read_back": (_NULLABLE_TEXT, "json: how the written bytes were read back and compared "
                                      "with the certificate"),
        "verification": (_NULLABLE_OBJECT, "onnx: the measured error on the box and on data, "
                                           "sizes, latencies"),
        "warning": (_NULLABLE_TEXT, "the not-certified warning of a float format"),
    },
    "report": {
        "check": ({"oneOf": [_VERDICT_JSON, {"type": "null"}]},
                  "the checker's verdict on the certificate"),
        "counts": (_ANY_OBJECT, "tuned, frozen and target parameters"),
        "float_errors": (_NULLABLE_OBJECT, "the error of float32/float64 copies on the box"),
        "data": (_NULLABLE_OBJECT, "the float copies on --data"),
        "plots": ({"type": "boolean"}, "whether plots were drawn"),
    },
    "realizable": {
        "d_in": ({"type": "integer"}, "input width of W"),
        "d_out": ({"type": "integer"}, "output width of W"),
        "width": ({"type": "integer"}, "the frozen width m"),
        "rank_K": ({"type": "integer"}, "rank of the Khatri–Rao matrix K"),
        "rank_augmented": ({"type": "integer"}, "rank of [K | vec W]"),
        "dimension": ({"type": "integer"}, "dimension of the reachable set"),
        "codimension": ({"type": "integer"}, "its codimension in d_in·d_out"),
        "profile": ({"type": "array", "items": {"type": "array"}},
                    "per width m: [m, rank K, this W reachable]"),
    },
    "detpoly": {
        "d_in": (_NULLABLE_INT, "input width"),
        "d_out": (_NULLABLE_INT, "output width"),
        "mode": ({"enum": ["expand", "matching", "check"]}, "what was done"),
        "facts": (_ANY_OBJECT, "degree, terms, witness value, … of the mode"),
    },
    "tables": {
        "written": ({"type": "array", "items": {"type": "string"}}, "files written"),
        "differences": ({"type": "array", "items": {"type": "string"}},
                        "--check: the differences found"),
    },
    "sparse-sweep": {
        "command": ({"type": "string"}, "the reproducing command line"),
        "rows": ({"type": "integer"}, "task rows"),
        "cells": ({"type": "integer"}, "aggregated grid cells"),
        "written": ({"type": "array", "items": {"type": "string"}}, "files written"),
    },
}


def _details_schema(command: str) -> dict[str, Any]:
    keys = DETAILS[command]
    return {"type": "object", "required": sorted(keys),
            "properties": {k: schema for k, (schema, _) in keys.items()},
            "additionalProperties": False}


#: the JSON Schema of the object (written out as docs/cli-output.schema.json)
SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://exactnorm.invalid/cli-output.schema.json",
    "title": "exactnorm --json output",
    "description": "The one JSON object a verb prints with --json (docs/cli.md).",
    "type": "object",
    "required": sorted(ENVELOPE),
    "properties": {k: schema for k, (schema, _) in ENVELOPE.items()},
    "additionalProperties": False,
    "allOf": [
        {"if": {"properties": {"command": {"const": name}},
                "not": {"properties": {"verdict": {"enum": ["ERROR", "INTERRUPTED",
                                                            "TIMEOUT"]}}}},
         "then": {"properties": {"details": {"$ref": f"#/$defs/{name}"}}}}
        for name in sorted(DETAILS)],
    "$defs": {name: _details_schema(name) for name in sorted(DETAILS)},
}


def add_json_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true",
                   help="print the outcome as one JSON object on standard output (verdict, "
                        "exit_code, rule, layer, neuron, message, seconds, bytes, paths, "
                        "details; schema in docs/cli.md); human text is not printed")


def json_requested(args: argparse.Namespace | None, argv: list[str] | None = None) -> bool:
    """``--json`` was given (parsed, or among the words of an unparsable command line)."""
    if args is not None:
        return bool(getattr(args, "json", False))
    return argv is not None and "--json" in argv


def json_ready(value: Any) -> Any:
    """``value`` with every key a string and every leaf a JSON value (exact numbers become their
    text ``p/q``; paths, sets and tuples their JSON counterparts; a dataclass its fields)."""
    if isinstance(value, Mapping):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else value
        return [json_ready(v) for v in items]
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else str(value)
    if hasattr(value, "as_dict"):
        return json_ready(value.as_dict())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return json_ready({f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
    return str(value)


def verdict_fields(verdict: Any) -> dict[str, Any]:
    """``rule``, ``layer``, ``neuron`` of a checker verdict (or of none)."""
    if verdict is None:
        return {"rule": None, "layer": None, "neuron": None}
    return {"rule": verdict.rule, "layer": verdict.layer, "neuron": verdict.neuron}


def outcome(command: str, verdict: str, exit_code: int, message: str = "", *,
            rule: str | None = None, layer: int | None = None, neuron: int | None = None,
            seconds: Mapping[str, float] | None = None, bytes: Mapping[str, int] | None = None,
            paths: Mapping[str, Any] | None = None,
            details: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The object of the module doc, every key present."""
    if verdict not in VERDICTS:
        raise ValueError(f"unknown verdict word {verdict!r}")
    known = DETAILS.get(command, {})
    shown = dict.fromkeys(known) if verdict not in ("ERROR", "INTERRUPTED", "TIMEOUT") else {}
    shown.update(details or {})
    for key in ("layers", "profile", "written", "differences"):
        if key in known and shown.get(key) is None and key in shown:
            shown[key] = []
    return {"format": OUTPUT_FORMAT, "version": OUTPUT_VERSION, "command": command,
            "verdict": verdict, "exit_code": int(exit_code), "message": message,
            "rule": rule, "layer": layer, "neuron": neuron,
            "seconds": {k: round(float(v), 4) for k, v in (seconds or {}).items()},
            "bytes": {k: int(v) for k, v in (bytes or {}).items() if v is not None},
            "paths": {k: str(v) for k, v in (paths or {}).items() if v is not None},
            "details": json_ready(shown)}


def emit(args: argparse.Namespace, verdict: str, exit_code: int, message: str = "",
         **fields: Any) -> int:
    """With ``--json``: print the object of :func:`outcome` (one line); return ``exit_code``."""
    if getattr(args, "json", False):
        _print(outcome(_command(args), verdict, exit_code, message, **fields))
    return exit_code


def emit_failure(args: argparse.Namespace | None, argv: list[str], verdict: str,
                 exit_code: int, message: str) -> None:
    """With ``--json``: the object of an error, interrupt or deadline (no ``details`` keys)."""
    if not json_requested(args, argv):
        return
    command = _command(args) if args is not None else next(
        (w for w in argv if not w.startswith("-")), "")
    with contextlib.suppress(OSError):  # a closed stdout (BrokenPipeError is an OSError)
        _print(outcome(command, verdict, exit_code, message))


def _command(args: argparse.Namespace) -> str:
    return str(getattr(args, "command", "") or "")


def _print(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj, sort_keys=True, ensure_ascii=False,
                                allow_nan=False) + "\n")
    sys.stdout.flush()
