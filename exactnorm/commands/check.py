"""``exactnorm check CERT``: run the independent checker; exit 0 valid, 1 invalid."""

from __future__ import annotations

import argparse
from pathlib import Path

from exactnorm.certificate import DEFAULT_MAX_CERTIFICATE_BYTES, read_certificate_bytes
from exactnorm.commands._common import console, verdict_line
from exactnorm.errors import InputError
from exactnorm.exact.rationals import DEFAULT_MAX_DIGITS

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help="check a certificate with the independent checker")
    p.add_argument("certificate", metavar="CERT", help="certificate file (.json or .json.gz)")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--pure", action="store_true",
                       help="standard-library checker (Fractions only) instead of python-flint")
    which.add_argument("--both", action="store_true",
                       help="run both checkers and demand agreement")
    p.add_argument("--max-bytes", type=int, default=DEFAULT_MAX_CERTIFICATE_BYTES, metavar="N",
                   help=f"refuse certificates larger than N bytes, uncompressed "
                        f"(default {DEFAULT_MAX_CERTIFICATE_BYTES})")
    p.add_argument("--max-digits", type=int, default=DEFAULT_MAX_DIGITS, metavar="N",
                   help=f"refuse numbers with more than N digits (default {DEFAULT_MAX_DIGITS})")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from exactnorm import checker, checker_flint

    path = Path(args.certificate)
    if args.max_digits < 1:
        raise InputError("--max-digits must be positive")
    # size limit (also on the inflated size of a .gz) before any byte is parsed
    raw = read_certificate_bytes(path, max_bytes=args.max_bytes)
    modes = ["pure", "flint"] if args.both else (["pure"] if args.pure else ["flint"])
    verdicts = []
    for mode in modes:
        module = checker if mode == "pure" else checker_flint
        v = module.check_certificate_text(raw, max_digits=args.max_digits)
        verdicts.append(v)
        console.print(verdict_line(v, str(path), mode))
    if len({(v.ok, v.rule, v.layer, v.neuron) for v in verdicts}) > 1:
        console.print("DISAGREEMENT between the pure and the python-flint checker")
        return 1
    return 0 if verdicts[0].ok else 1
