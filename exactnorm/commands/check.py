"""``exactnorm check CERT``: run the independent checker; exit 0 valid, 1 invalid."""

from __future__ import annotations

import argparse
from pathlib import Path

from exactnorm.certificate import DEFAULT_MAX_CERTIFICATE_BYTES
from exactnorm.commands._common import console, verdict_line
from exactnorm.exact.rationals import DEFAULT_MAX_DIGITS

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help="check a certificate with the independent checker")
    p.add_argument("certificate", metavar="CERT", help="certificate file (.json or .json.gz)")
    p.add_argument("--pure", action="store_true",
                   help="standard-library checker (Fractions only) instead of python-flint")
    p.add_argument("--both", action="store_true", help="run both checkers and demand agreement")
    p.add_argument("--max-bytes", type=int, default=DEFAULT_MAX_CERTIFICATE_BYTES, metavar="N",
                   help=f"refuse certificates larger than N bytes, uncompressed "
                        f"(default {DEFAULT_MAX_CERTIFICATE_BYTES})")
    p.add_argument("--max-digits", type=int, default=DEFAULT_MAX_DIGITS, metavar="N",
                   help=f"refuse numbers with more than N digits (default {DEFAULT_MAX_DIGITS})")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from exactnorm.api import check_file

    path = Path(args.certificate)
    modes = ["pure", "flint"] if args.both else (["pure"] if args.pure else ["flint"])
    verdicts = []
    for mode in modes:
        v = check_file(path, pure=mode == "pure", max_bytes=args.max_bytes,
                       max_digits=args.max_digits)
        verdicts.append(v)
        console.print(verdict_line(v, str(path), mode))
    if len({(v.ok, v.rule, v.layer, v.neuron) for v in verdicts}) > 1:
        console.print("DISAGREEMENT between the pure and the python-flint checker")
        return 1
    return 0 if verdicts[0].ok else 1
