"""``exactnorm tables``: regenerate the proof tables, or compare them with the checked-in ones."""

from __future__ import annotations

import argparse

from exactnorm.commands._common import console, err_console, output_path
from exactnorm.commands._json import add_json_option, emit

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tables", help="regenerate the proof tables in proofs/")
    p.add_argument("--out", default="proofs", help="output folder (default proofs)")
    p.add_argument("--only", default=None, help="comma-separated table keys, e.g. T1,T3")
    p.add_argument("--check", action="store_true",
                   help="regenerate into a temporary folder and compare with --out; exit 1 on "
                        "any difference")
    add_json_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from exactnorm.api import tables

    only = [k.strip() for k in args.only.split(",")] if args.only else None
    output_path(args.out, directory=True)
    if args.check:
        problems = tables(args.out, only, check=True).differences
        for problem in problems:
            console.print(problem)
        summary = "tables up to date" if not problems else f"{len(problems)} difference(s)"
        console.print(summary)
        return emit(args, "DIFFERENT" if problems else "SAME", 1 if problems else 0, summary,
                    paths={"tables": args.out},
                    details={"written": [], "differences": list(problems)})
    paths = tables(args.out, only,
                   progress=lambda k: err_console.print(f"generating {k} ...")).written
    for p in paths:
        console.print(f"wrote {p}")
    return emit(args, "DONE", 0, f"wrote {len(paths)} file(s) into {args.out}",
                paths={"tables": args.out},
                details={"written": [str(p) for p in paths], "differences": []})
