"""``exactnorm check CERT``: run the independent checker; exit 0 valid, 1 invalid, 2 unreadable.

The verdict line names what was proven (box, target widths, construction, frozen matrices
regenerated from their seed vs given explicitly); ``--json`` prints the same verdict as one JSON
object for scripts (:mod:`exactnorm.commands._json`; ``details`` keeps the keys of the earlier
object: ``ok``, ``facts``, ``checker``, ``agree``). The file is read by the checker's own
size-limited reader (:func:`exactnorm.certificate.read_certificate_bytes`) before any byte is
parsed.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from exactnorm.commands._common import (
    add_timeout_option,
    claim_of,
    console,
    progress_hook,
    verdict_line,
)
from exactnorm.commands._defaults import (
    DEFAULT_MAX_CERTIFICATE_BYTES,
    DEFAULT_MAX_DIGITS,
    DEFAULT_MAX_WORK,
    MAX_CERTIFICATE_BYTES_CAP,
    MIN_WORK,
    WORK_PER_BIT,
)
from exactnorm.commands._json import add_json_option, emit, verdict_fields

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help="check a certificate with the independent checker")
    p.add_argument("certificate", metavar="CERT", help="certificate file (.json or .json.gz)")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--pure", action="store_true",
                       help="standard-library checker (Fractions only) instead of python-flint")
    which.add_argument("--both", action="store_true",
                       help="run both checkers and demand agreement")
    add_json_option(p)
    add_timeout_option(p)
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
    seconds: dict[str, float] = {}
    for mode in modes:
        t0 = time.perf_counter()
        with progress_hook(f"check ({mode})", "frozen layers") as hook:
            verdicts[mode] = check_file(path, pure=mode == "pure", max_bytes=args.max_bytes,
                                        max_digits=args.max_digits, progress=hook,
                                        max_work=args.max_work)
        seconds[f"check_{mode}"] = time.perf_counter() - t0
    first = next(iter(verdicts.values()))
    agree = all(v == first for v in verdicts.values())
    for mode, v in verdicts.items():
        console.print(verdict_line(v, str(path), mode))
    if not agree:
        console.print("DISAGREEMENT between the pure and the python-flint checker")
    code = 0 if agree and first.ok else 1
    word = "DISAGREE" if not agree else "VALID" if first.ok else "INVALID"
    return emit(args, word, code, first.message, **verdict_fields(first),
                seconds=seconds, paths={"certificate": path},
                bytes={"certificate": path.stat().st_size},
                details={"ok": first.ok, "claim": claim_of(first), "facts": first.facts,
                         "checker": "+".join(modes), "agree": agree,
                         "verdicts": {mode: v.to_json() for mode, v in verdicts.items()}})
