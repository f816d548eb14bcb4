"""``exactnorm report CERT [--out DIR]``: Markdown/HTML report: what is proven, the verdict, the
architecture, bit sizes and magnitudes of γ, β, and the error a float export would have.

Without matplotlib the report is written without plots and says so (exit code unchanged).
"""

from __future__ import annotations

import argparse

from exactnorm.commands._common import (
    console,
    err_console,
    output_path,
    progress_hook,
    verdict_line,
)
from exactnorm.commands._defaults import DEFAULT_MAX_DIGITS, FLOAT_ERROR_POINTS

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="write report.md/report.html for a certificate")
    p.add_argument("certificate", metavar="CERT", help="certificate file (.json or .json.gz)")
    p.add_argument("--out", metavar="DIR", default="report",
                   help="output directory (default ./report; its parent must exist); "
                        "- prints the Markdown to standard output")
    p.add_argument("--max-digits", type=int, default=DEFAULT_MAX_DIGITS, metavar="N",
                   help=f"refuse numbers with more than N digits (default {DEFAULT_MAX_DIGITS})")
    p.add_argument("--float-points", type=int, default=FLOAT_ERROR_POINTS, metavar="N",
                   help="measure the error of a float32/float64 copy of the network at N seeded "
                        f"points of the box (default {FLOAT_ERROR_POINTS}; 0: not measured)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from exactnorm.api import report

    out = output_path(args.out, directory=True, stdout_ok=True)
    replaced = out is not None and (out / "report.md").exists()  # said after the write
    with progress_hook("report", "steps") as hook:
        result = report(args.certificate, out, max_digits=args.max_digits,
                        float_points=args.float_points, progress=hook)
    if out is None:
        # one stream: the Markdown, without images (there is no folder to put them in)
        print(result.markdown, end="")
        err_console.print(verdict_line(result.verdict, str(args.certificate), "flint"),
                          markup=False)
        return 0 if result.verdict.ok else 1
    console.print(verdict_line(result.verdict, str(args.certificate), "flint"), markup=False)
    counts = result.counts
    console.print(f"tuned {counts['tuned']}, frozen {counts['frozen']}, target {counts['target']}"
                  f" parameters; wrote {out}/report.md and report.html", markup=False)
    if replaced:
        err_console.print(f"note: replaced the existing report in {out}", markup=False)
    if not result.plots:
        err_console.print(f"note: {result.no_plots}", markup=False)
    # the report is written either way; the exit code says whether the certificate is valid
    return 0 if result.verdict.ok else 1
