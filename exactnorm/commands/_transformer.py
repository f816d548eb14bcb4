"""``exactnorm certify model.onnx`` when the model is a transformer (an ONNX graph that reads
token ids): the plan in one line, a progress bar over slots, a table of the slots, the document,
then the independent check (docs/transformers.md)."""

from __future__ import annotations

import argparse
import time
from typing import Any

from exactnorm.commands._common import (
    check_written_certificate,
    console,
    err_console,
    progress_hook,
)
from exactnorm.commands._defaults import THEOREM1_MAX_SYSTEM
from exactnorm.errors import InputError

__all__ = ["run_transformer", "slot_table"]

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


def run_transformer(args: argparse.Namespace, path: str) -> int:
    from exactnorm.api import save_certificate
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
    t0 = time.perf_counter()
    plan = plan_transformer(path, seed=args.seed, jobs=args.jobs,
                            distribution=args.distribution, block=args.block,
                            routing=args.routing,
                            max_system=None if args.max_system == THEOREM1_MAX_SYSTEM
                            else args.max_system,
                            retry=args.retry, shift_mode=args.shift_mode, solver=args.solver)
    err_console.print(f"{plan.summary} [read and planned in {time.perf_counter() - t0:.2f} s]",
                      markup=False)
    with progress_hook("transformer", "slots", total=len(plan.slots)) as hook:
        result = certify_transformer(plan, scheduler=args.scheduler,
                                     frozen_weights=args.frozen_weights, progress=hook)
    t1 = time.perf_counter()
    size = save_certificate(result.document, args.out)
    console.print(slot_table(result))
    console.print(f"certificate written to {args.out} ({size} bytes, {TRANSFORMER}, built in "
                  f"{result.seconds:.1f} s, written in {time.perf_counter() - t1:.1f} s)")
    if args.no_check:
        console.print("not checked (--no-check): run `exactnorm check` before relying on it")
        return 0
    del result
    return check_written_certificate(args.out, pure=args.pure)


TRANSFORMER = "exactnorm.transformer version 1"
