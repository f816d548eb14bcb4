"""``exactnorm check CERT``: run the independent checker; exit 0 valid, 1 invalid, 2 unreadable.

The verdict line names what was proven (box, target widths, construction, frozen matrices
regenerated from their seed vs given explicitly); ``--json`` prints the same verdict as one JSON
object for scripts. The file is read by the checker's own size-limited reader
(:func:`exactnorm.certificate.read_certificate_bytes`) before any byte is parsed.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from exactnorm.commands._common import console, progress_hook, verdict_line
from exactnorm.commands._defaults import (
    DEFAULT_MAX_CERTIFICATE_BYTES,
    DEFAULT_MAX_DIGITS,
    DEFAULT_MAX_WORK,
    MAX_CERTIFICATE_BYTES_CAP,
    MIN_WORK,
    WORK_PER_BIT,
)

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help="check a certificate with the independent checker")
    p.add_argument("certificate", metavar="CERT", help="certificate file (.json or .json.gz)")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--pure", action="store_true",
                       help="standard-library checker (Fractions only) instead of python-flint")
    which.add_argument("--both", action="store_true",
                       help="run both checkers and demand agreement")
    p.add_argument("--json", action="store_true",
                   help="print the verdict as one JSON object (ok, rule, message, layer, neuron, "
                        "facts)")
    p.add_argument("--max-bytes", type=int, default=DEFAULT_MAX_CERTIFICATE_BYTES, metavar="N",
                   help=f"refuse certificates larger than N bytes, uncompressed "
                        f"(default {DEFAULT_MAX_CERTIFICATE_BYTES}, at most "
                        f"{MAX_CERTIFICATE_BYTES_CAP})")
    p.add_argument("--max-digits", type=int, default=DEFAULT_MAX_DIGITS, metavar="N",
                   help=f"refuse numbers with more than N digits, JSON integers and strings "
                        f"alike (default {DEFAULT_MAX_DIGITS})")
    p.add_argument("--max-work", type=int, default=DEFAULT_MAX_WORK, metavar="N",
                   help=f"the check's work budget in units (64-bit word operations), counted "
                        f"from the shapes and number sizes before each computation (default: "
                        f"{WORK_PER_BIT} per bit of the numbers the certificate writes, at least "
                        f"{MIN_WORK:.0e}; docs/certificate-format.md §7), for impossibility "
                        f"documents too (§9)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from exactnorm.api import check_file

    path = Path(args.certificate)
    modes = ["pure", "flint"] if args.both else (["pure"] if args.pure else ["flint"])
    verdicts = {}
    for mode in modes:
        with progress_hook(f"check ({mode})", "frozen layers") as hook:
            verdicts[mode] = check_file(path, pure=mode == "pure", max_bytes=args.max_bytes,
                                        max_digits=args.max_digits, progress=hook,
                                        max_work=args.max_work)
    first = next(iter(verdicts.values()))
    agree = all(v == first for v in verdicts.values())
    if args.json:
        out = {"certificate": str(path), **first.to_json(), "checker": "+".join(modes),
               "agree": agree}
        if not agree:
            out["verdicts"] = {mode: v.to_json() for mode, v in verdicts.items()}
        console.print(json.dumps(out, sort_keys=True), soft_wrap=True)
    else:
        for mode, v in verdicts.items():
            console.print(verdict_line(v, str(path), mode))
        if not agree:
            console.print("DISAGREEMENT between the pure and the python-flint checker")
    return 0 if agree and first.ok else 1
