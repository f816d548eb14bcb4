"""``exactnorm sparse-sweep``: generic invertibility of sparse Theorem 1 patterns over a grid.

Writes ``cells.csv/.md`` (transition curves), ``thresholds.csv/.md`` (p*(d) against √(log d/d),
log d/d and 2 log d/d) and ``transitions.png`` into ``--out``, plus the resumable task log
``tasks.jsonl`` (or the file given to ``--resume``). Output is identical for any ``--jobs`` and
for a Dask ``--scheduler``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from exactnorm.commands._common import (
    add_timeout_option,
    console,
    err_console,
    output_path,
    set_interrupt_note,
)
from exactnorm.commands._defaults import MASK_SIDES
from exactnorm.commands._json import add_json_option, emit
from exactnorm.errors import InputError, require_extra

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sparse-sweep",
                       help="structural rank of sparse Khatri–Rao patterns over d, p and width")
    p.add_argument("--preset", choices=["ci", "large"], default="ci",
                   help="grid to start from (ci: the T4 grid; large: d up to 32, finer p); "
                        "the options below override it")
    p.add_argument("--sizes", default=None, help="comma-separated d values, e.g. 4,8,16")
    p.add_argument("--factors", default=None,
                   help="width factors, m = round(factor·d²), e.g. 1,1.5,2")
    p.add_argument("--p-grid", default=None,
                   help="keep probabilities: list '0.1,0.2' or inclusive range 'start:stop:step'")
    p.add_argument("--draws", type=int, default=None, help="mask draws per grid point")
    p.add_argument("--chunk", type=int, default=None,
                   help="draws per task (parallel granularity; results do not depend on it)")
    p.add_argument("--seed", type=int, default=None, help="base seed (default 0)")
    p.add_argument("--mask-side", choices=list(MASK_SIDES), default=None,
                   help="which frozen matrix is masked (default both)")
    p.add_argument("--values", default=None, metavar="DIST",
                   help="also fill every generically invertible pattern with integers from DIST "
                        "(e.g. int:8) and certify its exact rank (Schwartz–Zippel comparison)")
    p.add_argument("--jobs", type=int, default=1, help="local worker processes (default 1)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="run on a Dask distributed scheduler (needs exactnorm[dask])")
    p.add_argument("--resume", default=None, metavar="FILE",
                   help="task log (jsonl) of an interrupted run: skip its finished tasks and "
                        "keep appending to it")
    p.add_argument("--out", default="sparse-sweep", help="output folder (default sparse-sweep)")
    p.add_argument("--no-plot", action="store_true", help="do not write transitions.png")
    add_timeout_option(p)
    add_json_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from exactnorm.api import sparse_sweep

    try:
        sizes = [int(x) for x in args.sizes.split(",") if x.strip()] if args.sizes else None
    except ValueError:
        raise InputError(f"--sizes must be comma-separated integers, got {args.sizes!r}") from None
    factors = [f.strip() for f in args.factors.split(",") if f.strip()] if args.factors else None
    output_path(args.out, directory=True)
    if not args.no_plot:
        # fail before hours of work, not at the plot
        require_extra("matplotlib", "the transition plot (or pass --no-plot)")
    log = Path(args.resume) if args.resume else Path(args.out) / "tasks.jsonl"
    set_interrupt_note(f"finished tasks are kept in the task log {log}; rerun the same command "
                       f"with --resume {log} to continue")
    with Progress(TextColumn("sparse-sweep"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("tasks"), TimeElapsedColumn(), console=err_console,
                  transient=True) as progress:
        bar = progress.add_task("sweep", total=None)

        def hook(done: int, total: int) -> None:
            progress.update(bar, completed=done, total=total)

        res = sparse_sweep(preset=args.preset, sizes=sizes, factors=factors, p_grid=args.p_grid,
                           draws=args.draws, chunk=args.chunk, seed=args.seed,
                           mask_side=args.mask_side, values=args.values, jobs=args.jobs,
                           scheduler=args.scheduler, resume=args.resume, out=args.out,
                           plot=not args.no_plot, progress=hook)
    log, written = res.log, res.written
    th = res.thresholds
    table = Table(title="sparse-sweep: threshold p*(d) (≥ 99 % generically invertible)")
    keep = ["d", "width factor", "m", "p*(d)", "grid point below p*", "√(log d/d)", "log d/d",
            "2 log d/d", "p*·d/log d", "nnz / d²√d"]
    idx = [th.columns.index(c) for c in keep]
    for c in keep:
        table.add_column(c, justify="right")
    for row in th.rows:
        table.add_row(*(str(row[i]) for i in idx))
    console.print(table)
    console.print(f"task log {log}; wrote " + ", ".join(str(p) for p in written))
    return emit(args, "DONE", 0, f"{len(res.rows)} task rows, {len(res.cells)} cells",
                paths={"out": args.out, "log": log},
                details={"command": res.command, "rows": len(res.rows), "cells": len(res.cells),
                         "written": [str(p) for p in written]})
