"""The hostile documents of the third and fourth rounds (issues 30 and 38), checked with both
arithmetics in fresh processes under an address-space cap: file size, wall time, CPU time
(user + system), peak RSS and the verdict's first words, one line each.

The documents are rebuilt by ``tests/checker/hostile_round3.py``, ``hostile_round4.py`` and
``false_impossibility.py`` (standard library only) at the sizes of the rounds; ``--pythonpath
DIR`` checks them with another exactnorm (for example an export of an earlier commit: ``git
archive <commit> | tar -x -C DIR``), which is how the "before" column of the issues' closing
notes was measured. Goal: every document of at most 1 MB gets a verdict or a refusal within
30 s of CPU and 2 GB, in each arithmetic.

Usage::

    python benchmarks/bench_hostile.py [NAME ...] [--cap-gib 4] [--timeout 300]
                                       [--pythonpath DIR]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine  # noqa: E402

import tests.checker.false_impossibility as F  # noqa: E402
import tests.checker.hostile_round3 as H  # noqa: E402
import tests.checker.hostile_round4 as H4  # noqa: E402


def valid_rank_minor(n: int) -> dict:
    """:func:`hostile_round4.rank_minor` with the determinant residue computed by python-flint,
    so that the document is VALID (UNREACHABLE) and the checker does all of its work."""
    from flint import nmod_mat

    c1, p = n - 1, H4.PRIME
    V1 = H.nonzero_draw(0, [1, 1, 0, 0], c1, n)
    V2 = H.nonzero_draw(0, [1, 2, 0, 0], 1, c1)[0]
    w = H.nonzero_draw(0, [9, 9, 9, 9], 1, n)[0]
    rows = [[V2[k] * V1[k][j] % p for k in range(c1)] + [-w[j] % p] for j in range(n)]
    det = int(nmod_mat(n, n, [x for r in rows for x in r], p).det())
    return H4.rank_minor(n, det)


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
    # round 4 (issue 38)
    "false impossibility: target layer 2 reads x": (F.reads_input, False),
    "false impossibility: a skip cancels the kink": (F.cancelling_skip, False),
    "rank witness, 601 x 601 minor": (lambda: valid_rank_minor(601), False),
    "rank witness, 1,000 x 1,000 minor": (lambda: valid_rank_minor(1000), False),
    "rank witness, 4,095 x 4,095 minor": (lambda: H4.rank_minor(4095), False),
    "explicit 8,193 x 8,193 map, certificate": (H4.explicit_map, True),
    "explicit 8,193 x 8,193 map, impossibility": (H4.explicit_given, True),
    "compact denominator, 10^6-wide domain, seed rule target.v2": (H4.wide_seeded_domain, True),
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
    # the exactnorm checked is this checkout's, or --pythonpath's; the process runs outside the
    # checkout, so that its folder on sys.path (first, before PYTHONPATH) holds no other copy
    env = dict(os.environ, PYTHONPATH=pythonpath or str(ROOT))
    args = ["/usr/bin/time", "-f", "TIME %e %U %S %M", sys.executable, "-c", RUN.format(cap=cap),
            "check", str(path)] + (["--pure"] if mode == "pure" else [])
    # its own process group, so that a stopped check stops with /usr/bin/time
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=path.parent, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return f"> {timeout:.0f} s (stopped)"
    res = subprocess.CompletedProcess(args, proc.returncode, out, err)
    times = [line.split() for line in res.stderr.splitlines() if line.startswith("TIME ")]
    seconds, cpu, kib = (times[-1][1], float(times[-1][2]) + float(times[-1][3]),
                         int(times[-1][4])) if times else ("?", 0.0, 0)
    lines = [ln for ln in res.stdout.splitlines() if ln.strip()] or \
        [ln for ln in res.stderr.splitlines() if ln.strip() and not ln.startswith("TIME")]
    words = lines[0] if lines else ""
    words = words.split(": ", 1)[-1] if "checker)" in words else words
    return f"{seconds} s wall, {cpu:.1f} s CPU, {kib // 1024} MB, exit {res.returncode}: " \
        f"{words[:90]}"


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
