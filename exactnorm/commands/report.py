"""``exactnorm report CERT [--out DIR] [--data X.npy [--labels y.npy]]``: Markdown/HTML report:
what is proven, the verdict, the architecture, bit sizes and magnitudes of γ, β, the error a
float export would have, and what the float copies do on the user's data. The checker runs
first; an INVALID certificate gets no report (exit 1, the checker's reason; ``--no-check``
writes it unchecked and says so).

Without matplotlib the report is written without plots and says so (exit code unchanged).
"""

from __future__ import annotations

import argparse
import os
import time

from exactnorm.commands._common import (
    add_timeout_option,
    console,
    err_console,
    output_path,
    progress_hook,
    verdict_line,
)
from exactnorm.commands._defaults import DEFAULT_MAX_DIGITS, FLOAT_ERROR_POINTS
from exactnorm.commands._json import add_json_option, emit, verdict_fields
from exactnorm.errors import InputError

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
    p.add_argument("--data", metavar="X.npy", default=None,
                   help="samples (n, d) or images: the float32/float64 copies' largest error "
                        "against the exact target and the predictions they change on them")
    p.add_argument("--labels", metavar="y.npy", default=None,
                   help="with --data: integer labels, for the accuracy of the exact target "
                        "and of each copy")
    p.add_argument("--no-check", action="store_true",
                   help="write the report without running the checker (it says so); by "
                        "default an INVALID certificate is refused with exit code 1")
    add_timeout_option(p)
    add_json_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from exactnorm.api import report

    out = output_path(args.out, directory=True, stdout_ok=True)
    if out is None and args.json:
        raise InputError("--json prints its object on standard output, which --out - gives to "
                         "the report: write the report to a folder")
    replaced = out is not None and (out / "report.md").exists()  # said after the write
    t0 = time.perf_counter()
    with progress_hook("report", "steps") as hook:
        result = report(args.certificate, out, max_digits=args.max_digits,
                        float_points=args.float_points, data=args.data, labels=args.labels,
                        check=not args.no_check, progress=hook)
    seconds = {"report": time.perf_counter() - t0}
    line = ("not checked (--no-check): run `exactnorm check` before relying on it"
            if result.verdict is None else
            verdict_line(result.verdict, str(args.certificate), "flint"))
    if out is None:
        # one stream: the Markdown, without images (there is no folder to put them in)
        print(result.markdown, end="")
        err_console.print(line, markup=False)
        return 0
    console.print(line, markup=False)
    counts = result.counts
    console.print(f"tuned {counts['tuned']}, frozen {counts['frozen']}, target {counts['target']}"
                  f" parameters; wrote {out}/report.md and report.html", markup=False)
    if replaced:
        err_console.print(f"note: replaced the existing report in {out}", markup=False)
    if result.data is not None:
        for name in ("float32", "float64"):
            e = result.data[name]
            acc = f", accuracy {e['accuracy']:.2%}" if "accuracy" in e else ""
            console.print(f"on {args.data}: {name} copy changes {e['changed']}/"
                          f"{result.data['samples']} predictions, max abs error "
                          f"{e['max_abs']:.3g}{acc}", markup=False)
        if "exact_accuracy" in result.data:
            console.print(f"on {args.data}: exact target (the source) accuracy "
                          f"{result.data['exact_accuracy']:.2%}", markup=False)
    if not result.plots:
        err_console.print(f"note: {result.no_plots}", markup=False)
    # an INVALID certificate got no report (exit 1, raised by the API)
    v = result.verdict
    files = {name: p for name, p in result.paths.items()}
    return emit(args, "UNCHECKED" if v is None else "VALID", 0,
                "not checked (--no-check)" if v is None else v.message, **verdict_fields(v),
                seconds=seconds, paths={"certificate": args.certificate, **files},
                bytes={name: os.path.getsize(p) for name, p in files.items()
                       if os.path.isfile(p)},
                details={"check": None if v is None else v.to_json(), "counts": counts,
                         "float_errors": result.float_errors, "data": result.data,
                         "plots": bool(result.plots)})
