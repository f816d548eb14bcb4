"""``exactnorm certify model.onnx`` when the model is a transformer (an ONNX graph that reads
token ids): the plan in one line (``--dry-run``: the plan of every slot, and nothing built), a
progress bar over slots, a table of the slots, then the document written beside its name,
checked as written and renamed only when valid (docs/transformers.md)."""

from __future__ import annotations

import argparse
import time
from typing import Any

from exactnorm.commands._common import (
    console,
    err_console,
    progress_hook,
    set_interrupt_note,
    verdict_line,
    write_checked_document,
)
from exactnorm.commands._defaults import THEOREM1_MAX_SYSTEM
from exactnorm.commands._json import emit, json_ready, verdict_fields
from exactnorm.errors import InputError, InvalidCertificateError

__all__ = ["run_transformer", "slot_table", "transformer_plan_facts"]

#: options of ``certify`` that describe a target file's box or a whole-target construction:
#: a transformer derives its boxes and realizes each slot by the automatic choice
_NOT_FOR_TRANSFORMERS = ("box", "box_file", "box_from_data", "activations", "rank",
                         "sparsity", "factors")


def slot_table(result: Any) -> Any:
    """One row per slot: what it reads, its widths, its frozen widths, construction, bits."""
    from rich.table import Table

    tr = result.plan.transformer
    reads = tr.slot_reads()
    t = Table(title=f"exactnorm certify: transformer, {len(tr.slots)} slots")
    for col in ("slot", "reads node", "d_in→d_out", "construction", "frozen widths", "γ bits",
                "β bits"):
        t.add_column(col, justify="right")
    for name in tr.slot_order():
        doc = result.document["slots"][name]
        layers = doc["network"]["layers"]
        widths = [_rows(layer) for layer in layers]
        gbits = max(_bits(layer["gamma"]) for layer in layers)
        bbits = max(_bits(layer["beta"]) for layer in layers)
        slot = tr.slots[name]
        t.add_row(name, f"{reads[name]} ({tr.nodes[reads[name]].op})",
                  f"{slot.input_size}→{slot.width}",
                  str(doc.get("provenance", {}).get("construction", ""))[:24],
                  _short(widths), str(gbits), str(bbits))
    return t


def _rows(layer: dict[str, Any]) -> int:
    gamma = layer["gamma"]
    return len(gamma["num"] if isinstance(gamma, dict) else gamma)


def _bits(v: Any) -> int:
    if isinstance(v, dict):
        den = int(v["den"])
        return max([den.bit_length()] + [abs(int(x)).bit_length() for x in v["num"]])
    return max((len(str(x)) * 10 // 3 for x in v), default=0)


def _short(widths: list[int]) -> str:
    if len(widths) <= 6:
        return ",".join(map(str, widths))
    return f"{','.join(map(str, widths[:3]))},…,{widths[-1]} ({len(widths)} layers)"


def transformer_plan_facts(plan: Any) -> dict[str, Any]:
    """What ``--dry-run --json`` prints of a transformer's plan: the summary, the estimate and
    each slot's construction, widths and estimate (the slot targets themselves are not
    printed)."""
    return json_ready({
        "construction": "transformer slots", "summary": plan.summary, "jobs": plan.jobs,
        "seed_rule": plan.seed_rule, "estimate": plan.estimate.as_dict(plan.jobs),
        "slots": [{"name": sp.name, "widths": list(sp.target.widths),
                   "construction": sp.plan.construction, "note": sp.plan.note,
                   "estimate": sp.plan.estimates()} for sp in plan.slots]})


def run_transformer(args: argparse.Namespace, path: str) -> int:
    from exactnorm.api._transformer import certify_transformer, plan_transformer

    for name in _NOT_FOR_TRANSFORMERS:
        if getattr(args, name, None) not in (None, False, "both"):
            raise InputError(f"{name} does not apply to a transformer: its slots' boxes are "
                             f"derived from the architecture (docs/transformers.md)",
                             parameter=name)
    if args.construction != "auto":
        raise InputError("a transformer's slots are each realized by the automatic choice; "
                         "--construction does not apply", parameter="construction")
    if args.format_version != 3:
        raise InputError("a transformer's slots are version-3 certificates",
                         parameter="format_version")
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    plan = plan_transformer(path, seed=args.seed, jobs=args.jobs,
                            distribution=args.distribution, block=args.block,
                            routing=args.routing,
                            max_system=None if args.max_system == THEOREM1_MAX_SYSTEM
                            else args.max_system,
                            retry=args.retry, shift_mode=args.shift_mode, solver=args.solver)
    seconds["plan"] = time.perf_counter() - t0
    facts = {"widths": [], "kinds": ["transformer"], "slots": len(plan.slots)}
    if args.dry_run:
        console.print(f"plan for {path}: {plan.summary}", markup=False)
        from exactnorm.constructions.costs import short_seconds

        for sp in plan.slots:  # a slot's seconds are its process's (one each)
            e = sp.plan.estimate
            console.print(f"  slot {sp.name}: widths {list(sp.target.widths)}, "
                          f"{sp.plan.construction}, ≈ {short_seconds(e.seconds)}, frozen depth "
                          f"{e.depth}", markup=False)
        console.print("nothing was built (--dry-run): the same command without --dry-run "
                      "builds this plan", markup=False)
        return emit(args, "PLAN", 0, plan.summary, seconds=seconds, paths={"target": path},
                    details={"construction": "transformer slots",
                             "plan": transformer_plan_facts(plan), "layers": [],
                             "version": args.format_version, "target": facts})
    err_console.print(f"{plan.summary} [read and planned in {seconds['plan']:.2f} s]",
                      markup=False)
    set_interrupt_note("no certificate was written (a construction keeps no partial state); "
                       "run the same command again to start over")
    with progress_hook("transformer", "slots", total=len(plan.slots)) as hook:
        result = certify_transformer(plan, scheduler=args.scheduler,
                                     frozen_weights=args.frozen_weights, progress=hook)
    set_interrupt_note(None)
    seconds["build"] = result.seconds
    console.print(slot_table(result))
    written = write_checked_document(result.document, args.out, check=not args.no_check,
                                     pure=args.pure)
    del result
    seconds["write"] = written.write_seconds
    common = {"seconds": seconds, "paths": {"target": path, "certificate": args.out},
              "bytes": {"certificate": written.bytes}}
    details = {"construction": "transformer slots", "plan": transformer_plan_facts(plan),
               "layers": [], "version": args.format_version, "target": facts,
               "check": None if written.verdict is None else written.verdict.to_json()}
    if written.verdict is None:
        console.print(f"certificate written to {args.out} ({written.bytes} bytes, "
                      f"{TRANSFORMER})")
        console.print("not checked (--no-check): run `exactnorm check` before relying on it")
        return emit(args, "UNCHECKED", 0, "not checked (--no-check)", **common, details=details)
    v = written.verdict
    seconds["check"] = written.check_seconds
    console.print(verdict_line(v, args.out, "pure" if args.pure else "flint")
                  + f" [{written.check_seconds:.2f} s]")
    if not written.kept:
        if args.json:
            return emit(args, "INVALID", 1, v.message, **verdict_fields(v), **common,
                        details=details)
        raise InvalidCertificateError(f"the constructed certificate was rejected, so {args.out} "
                                      f"was not written: {v.message}")
    console.print(f"certificate written to {args.out} ({written.bytes} bytes, {TRANSFORMER}; "
                  f"the written bytes checked)")
    return emit(args, "VALID", 0, v.message, **verdict_fields(v), **common, details=details)


TRANSFORMER = "exactnorm.transformer version 1"
