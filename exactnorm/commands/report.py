"""``exactnorm report CERT [--out DIR]``: Markdown/HTML report with bit-size histograms."""

from __future__ import annotations

import argparse

from exactnorm.commands._common import console, verdict_line
from exactnorm.exact.rationals import DEFAULT_MAX_DIGITS

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="write report.md/report.html for a certificate")
    p.add_argument("certificate", metavar="CERT", help="certificate file (.json or .json.gz)")
    p.add_argument("--out", metavar="DIR", default="report",
                   help="output directory (default ./report)")
    p.add_argument("--max-digits", type=int, default=DEFAULT_MAX_DIGITS, metavar="N",
                   help=f"refuse numbers with more than N digits (default {DEFAULT_MAX_DIGITS})")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from exactnorm.api import report

    result = report(args.certificate, args.out, max_digits=args.max_digits)
    console.print(verdict_line(result["verdict"], str(args.certificate), "flint"))
    counts = result["counts"]
    console.print(f"tuned {counts['tuned']}, frozen {counts['frozen']}, target {counts['target']}"
                  f" parameters; wrote {args.out}/report.md and report.html")
    # the report is written either way; the exit code says whether the certificate is valid
    return 0 if result["verdict"].ok else 1
