"""``exactnorm export CERT --format npz|json --out FILE``: BatchNorm-style parameters out.

JSON is exact (``"p/q"`` strings); ``npz`` is float64 for frameworks and is not certified. The
certificate is read strictly but not checked here: run ``exactnorm check CERT`` for that.
"""

from __future__ import annotations

import argparse

from exactnorm.commands._common import console, err_console
from exactnorm.exact.rationals import DEFAULT_MAX_DIGITS

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="export tuned γ, β as BatchNorm-style parameters")
    p.add_argument("certificate", metavar="CERT", help="certificate file (.json or .json.gz)")
    p.add_argument("--format", choices=("npz", "json"), required=True,
                   help="json: exact p/q strings; npz: float64 arrays (not certified)")
    p.add_argument("--out", metavar="FILE", required=True, help="output file")
    p.add_argument("--mean", metavar="M", default="0",
                   help="frozen running mean μ for every neuron (exact number; default 0)")
    p.add_argument("--scale", metavar="S", default="1",
                   help="frozen scale s > 0 for every neuron (exact number; default 1)")
    p.add_argument("--eps", type=float, default=None,
                   help="npz only: running_var = s² − eps (default 1e-5)")
    p.add_argument("--max-digits", type=int, default=DEFAULT_MAX_DIGITS, metavar="N",
                   help=f"refuse numbers with more than N digits (default {DEFAULT_MAX_DIGITS})")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from exactnorm.api import export

    warning = export(args.certificate, args.out, format=args.format, mean=args.mean,
                     scale=args.scale, eps=args.eps, max_digits=args.max_digits)
    if warning is None:
        console.print(f"wrote {args.out} (exact BatchNorm-style parameters)")
        return 0
    console.print(f"wrote {args.out} (float64)")
    err_console.print(f"warning: {warning}")
    return 0
