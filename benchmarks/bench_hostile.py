"""The hostile documents of the third round (issue 30), checked with both arithmetics in fresh
processes under an address-space cap: file size, wall time, peak RSS and the verdict's first
words, one line each.

The documents are rebuilt by ``tests/checker/hostile_round3.py`` (standard library only) at the
sizes of the round; ``--pythonpath DIR`` checks them with another exactnorm (for example an export
of an earlier commit: ``git archive <commit> | tar -x -C DIR``), which is how the "before" column
of the issue's closing note was measured. Goal: every document of at most 1 MB gets a verdict or a
refusal within 30 s and 2 GB, in each arithmetic.

Usage::

    python benchmarks/bench_hostile.py [NAME ...] [--cap-gib 4] [--timeout 300]
                                       [--pythonpath DIR]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import hostile_round3 as H  # noqa: E402
from _common import machine  # noqa: E402

# name → (builder, gzip?)
CASES: dict[str, tuple[Any, bool]] = {
    "reads segment input, C' = patch": (lambda: H.reads_segment_input("patch"), False),
    "reads segment input, C' larger": (lambda: H.reads_segment_input("larger"), False),
    "reads segment input, C' smaller": (lambda: H.reads_segment_input("smaller"), False),
    "reads segment input, all drawn": (H.reads_segment_input_drawn, False),
    "200,000-digit box denominator, conv": (H.big_denominator_conv_box, False),
    "patch-box family (64M positions)": (H.patch_box_family, False),
    "next box of a convolution": (H.next_box_of_convolution, False),
    "40 pooling segments": (H.pooling_segments, False),
    "redraw checks before the budget": (H.redraw_checks_before_budget, False),
    "gauss:52 regeneration": (H.regeneration_words, True),
    "number sizes in next_box": (H.next_box_number_sizes, False),
    "compact denominator, 10^6-wide domain": (H.compact_denominator_domain, True),
    "width-2048 by reference": (H.wide_by_reference, True),
    "box, 8 x 200,000-bit denominators": (H.big_denominator_box, False),
    "same box, unstable neuron": (lambda: H.big_denominator_box(unstable=True), False),
    "same box, wrong bias": (lambda: H.big_denominator_box(wrong_bias=True), False),
    "non-square final matrix, 209 redraws": (lambda: H.redrawn_nonsquare(209), False),
    "pair with m != c*d, 40 redraws": (lambda: H.redrawn_pair_m_not_cd(40), False),
    "all-zero draw": (H.zero_draw, False),
}

RUN = ("import resource, sys, time;"
       "resource.setrlimit(resource.RLIMIT_AS, ({cap},) * 2);"
       "from exactnorm.cli import main;"
       "sys.exit(main(sys.argv[1:]))")


def write(doc: dict, gz: bool, folder: Path, name: str) -> Path:
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        raw = json.dumps(doc, separators=(",", ":")).encode()
    finally:
        sys.set_int_max_str_digits(old)
    path = folder / (name + (".json.gz" if gz else ".json"))
    path.write_bytes(gzip.compress(raw, mtime=0) if gz else raw)
    return path


def check(path: Path, mode: str, cap: int, timeout: float, pythonpath: str | None) -> str:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    args = ["/usr/bin/time", "-f", "TIME %e %M", sys.executable, "-c", RUN.format(cap=cap),
            "check", str(path)] + (["--pure"] if mode == "pure" else [])
    try:
        res = subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return f"> {timeout:.0f} s (stopped)"
    times = [line.split() for line in res.stderr.splitlines() if line.startswith("TIME ")]
    seconds, kib = (times[-1][1], int(times[-1][2])) if times else ("?", 0)
    lines = [ln for ln in res.stdout.splitlines() if ln.strip()] or \
        [ln for ln in res.stderr.splitlines() if ln.strip() and not ln.startswith("TIME")]
    words = lines[0] if lines else ""
    words = words.split(": ", 1)[-1] if "checker)" in words else words
    return f"{seconds} s, {kib // 1024} MB, exit {res.returncode}: {words[:90]}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="cases to run (default: all)")
    ap.add_argument("--cap-gib", type=float, default=4.0)
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--pythonpath", default=None)
    args = ap.parse_args()
    print("machine:", machine())
    cap = int(args.cap_gib * 2**30)
    with tempfile.TemporaryDirectory() as tmp:
        for k, (name, (build, gz)) in enumerate(CASES.items()):
            if args.names and not any(n in name for n in args.names):
                continue
            path = write(build(), gz, Path(tmp), f"case{k}")
            size = path.stat().st_size
            for mode in ("flint", "pure"):
                print(f"{name} | {size:,} B | {mode} | "
                      f"{check(path, mode, cap, args.timeout, args.pythonpath)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
