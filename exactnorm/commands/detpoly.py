"""``exactnorm detpoly``: the determinant polynomial det(Xᵀ ⊙ Y) and its witnesses (docs/model.md).

* ``--d-in 2 --d-out 2 [--out FILE]``: expand with SymPy (m = d_in·d_out ≤ 4), print degree, term
  count and witness, and write the ``exactnorm.detpoly`` certificate.
* ``--matching``: any size; the matching certificate (one monomial with coefficient ±1 and an
  exact nonzero evaluation) and the Theorem 5 structured witness, proved symbolically for
  d_in, d_out ≤ 3.
* ``--check FILE``: re-check a detpoly certificate (exit 0 valid, 1 invalid).

``--ground-types`` fixes SymPy's ground types (docs/model.md, known hazards); it must be chosen
before SymPy is imported.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from typing import Any

from rich.table import Table

from exactnorm.commands._common import console
from exactnorm.commands._json import add_json_option, emit
from exactnorm.errors import InputError, InvariantError

__all__ = ["register"]

GROUND_TYPES = ("python", "flint", "gmpy")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("detpoly",
                       help="determinant polynomial det(Xᵀ ⊙ Y): expansion, witnesses, checks")
    p.add_argument("--d-in", type=int, default=None, help="input width d_in of the target layer")
    p.add_argument("--d-out", type=int, default=None, help="output width d_out")
    p.add_argument("--out", default=None, metavar="FILE",
                   help="write the exactnorm.detpoly certificate (expansion only)")
    p.add_argument("--seed", type=int, default=0, help="seed of the evaluation witness (default 0)")
    p.add_argument("--matching", action="store_true",
                   help="any size: matching certificate and Theorem 5 structured witness")
    p.add_argument("--layout", choices=["blocked", "interleaved"], default="interleaved",
                   help="neuron order of the structured witness (default interleaved)")
    p.add_argument("--check", default=None, metavar="FILE",
                   help="check a detpoly certificate instead (exit 0 valid, 1 invalid)")
    p.add_argument("--ground-types", choices=GROUND_TYPES, default=None,
                   help="SymPy ground types (default: SYMPY_GROUND_TYPES or SymPy's choice)")
    add_json_option(p)
    p.set_defaults(func=run)


def select_ground_types(choice: str | None) -> None:
    """Set ``SYMPY_GROUND_TYPES`` before SymPy's first import; refuse a conflicting late choice."""
    if choice is None:
        return
    if "sympy" in sys.modules:
        from sympy.external.gmpy import GROUND_TYPES

        if choice != GROUND_TYPES:
            raise InputError(f"SymPy is already imported with ground types {GROUND_TYPES!r}; "
                             f"set SYMPY_GROUND_TYPES={choice} in the environment instead")
        return
    os.environ["SYMPY_GROUND_TYPES"] = choice


def run(args: argparse.Namespace) -> int:
    select_ground_types(args.ground_types)
    from exactnorm import api

    if args.check is not None:
        result = api.check_detpoly(args.check)
        console.print(f"VALID {args.check}: {result.message}")
        return emit(args, "VALID", 0, result.message, paths={"certificate": args.check},
                    details={"d_in": None, "d_out": None, "mode": "check",
                             "facts": {"message": result.message}})
    if args.d_in is None or args.d_out is None:
        raise InputError("--d-in and --d-out are required (or use --check FILE)")
    res = api.detpoly(args.d_in, args.d_out, seed=args.seed, matching=args.matching,
                      layout=args.layout, out=args.out)
    if args.matching:
        return _print_matching(args, res)
    doc, check = res.document, res.checked
    if doc is None or check is None:
        raise InvariantError("detpoly expansion returned no document")
    d_in, d_out = res.d_in, res.d_out
    t = Table(title=f"exactnorm detpoly: det(Xᵀ ⊙ Y), d_in={d_in}, d_out={d_out}, "
                    f"m={doc['m']}")
    for col in ("degree", "terms", "perfect matchings (m!)", "coefficients", "witness value",
                "Leibniz re-expansion", "ground types"):
        t.add_column(col, justify="right")
    coeffs = sorted({term["coefficient"] for term in doc["terms"]})
    t.add_row(str(doc["degree"]), str(doc["term_count"]), str(math.factorial(doc["m"])),
              ",".join(f"{c:+d}" for c in coeffs), str(check.witness_value), "equal",
              doc["provenance"]["sympy_ground_types"])
    console.print(t)
    if res.written is not None:
        console.print(f"wrote {args.out} ({res.written} bytes)")
    return emit(args, "DONE", 0, f"det(Xᵀ ⊙ Y) of degree {doc['degree']} with "
                                 f"{doc['term_count']} terms, re-expanded and equal",
                paths={"certificate": args.out}, bytes={"certificate": res.written},
                details={"d_in": d_in, "d_out": d_out, "mode": "expand",
                         "facts": {"degree": doc["degree"], "terms": doc["term_count"],
                                   "m": doc["m"], "witness_value": str(check.witness_value),
                                   "coefficients": coeffs}})


def _print_matching(args: argparse.Namespace, res: Any) -> int:
    mc, sw, proof = res.matching, res.structured, res.symbolic
    d_in, d_out = res.d_in, res.d_out
    t = Table(title=f"exactnorm detpoly --matching: d_in={d_in}, d_out={d_out}, m={mc.m}")
    for col in ("degree 2m", "matching monomial coefficient", "witness det bits",
                f"rank mod p ({mc.prime.bit_length()}-bit prime)", "structured sign",
                "det B", "det K = sign·det(B)^d_in", "symbolic proof"):
        t.add_column(col, justify="right")
    t.add_row(str(mc.degree), f"{mc.coefficient:+d}", str(mc.det_bits),
              f"{mc.rank_mod_prime}/{mc.m}", f"{sw.sign:+d}", str(sw.det_B),
              "verified" if sw.verified else "FAILED",
              "—" if proof is None else ("proved" if proof.proved else "FAILED"))
    console.print(t)
    shown = " · ".join(mc.monomial[:6]) + (" · …" if len(mc.monomial) > 6 else "")
    console.print(f"monomial: {shown} ({len(mc.monomial)} variables)")
    code = 0 if res.verified else 1
    return emit(args, "VALID" if res.verified else "INVALID", code,
                f"matching certificate and structured witness for d_in={d_in}, d_out={d_out}: "
                f"{'verified' if res.verified else 'FAILED'}",
                details={"d_in": d_in, "d_out": d_out, "mode": "matching",
                         "facts": {"m": mc.m, "degree": mc.degree,
                                   "coefficient": mc.coefficient, "det_bits": mc.det_bits,
                                   "rank_mod_prime": mc.rank_mod_prime,
                                   "structured_sign": sw.sign,
                                   "structured_verified": bool(sw.verified),
                                   "symbolic": None if proof is None else bool(proof.proved)}})
