"""``exactnorm detpoly``: the determinant polynomial det(Xᵀ ⊙ Y) and its witnesses (SPEC §4).

* ``--d-in 2 --d-out 2 [--out FILE]``: expand with SymPy (m = d_in·d_out ≤ 4), print degree, term
  count and witness, and write the ``exactnorm.detpoly`` certificate.
* ``--matching``: any size; the matching certificate (one monomial with coefficient ±1 and an
  exact nonzero evaluation) and the Theorem 5 structured witness, proved symbolically for
  d_in, d_out ≤ 3.
* ``--check FILE``: re-check a detpoly certificate (exit 0 valid, 1 invalid).

``--ground-types`` fixes SymPy's ground types (SPEC §8); it must be chosen before SymPy is imported.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

from rich.table import Table

from exactnorm.commands._common import console
from exactnorm.errors import InputError

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


def _dims(args: argparse.Namespace) -> tuple[int, int]:
    if args.d_in is None or args.d_out is None:
        raise InputError("--d-in and --d-out are required (or use --check FILE)")
    if args.d_in < 1 or args.d_out < 1:
        raise InputError("--d-in and --d-out must be positive")
    if args.seed < 0:
        raise InputError("--seed must be non-negative")
    return args.d_in, args.d_out


def run(args: argparse.Namespace) -> int:
    select_ground_types(args.ground_types)
    from exactnorm.analysis import symbolic

    if args.check is not None:
        result = symbolic.check_detpoly_file(args.check)
        console.print(f"VALID {args.check}: {result.message}")
        return 0
    d_in, d_out = _dims(args)
    if args.matching:
        if args.out is not None:
            raise InputError("--out writes the expanded polynomial; drop --matching")
        return _run_matching(args, d_in, d_out)
    doc = symbolic.detpoly_document(d_in, d_out, seed=args.seed)
    check = symbolic.check_detpoly(doc)
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
    if args.out is not None:
        n = symbolic.save_detpoly(doc, args.out)
        console.print(f"wrote {args.out} ({n} bytes)")
    return 0


def _run_matching(args: argparse.Namespace, d_in: int, d_out: int) -> int:
    from exactnorm.analysis import symbolic

    mc = symbolic.matching_certificate(d_in, d_out, seed=args.seed)
    sw = symbolic.structured_witness(d_in, d_out, layout=args.layout, seed=args.seed)
    proof = None
    if max(d_in, d_out) <= symbolic.SYMBOLIC_SIDE_LIMIT:
        proof = symbolic.prove_structured_symbolic(d_in, d_out, args.layout)
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
    ok = mc.verified and sw.verified and (proof is None or proof.proved)
    return 0 if ok else 1
