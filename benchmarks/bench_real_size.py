"""Real-size networks end to end: trained 784-128-10 and 784-256-128-10 MLPs (issue 14).

Builds seeded MLPs trained on scikit-learn's bundled digits upsampled to 28×28 (no downloads;
``mlp_models.py``), writes them as float32 ``.npz``, and runs ``exactnorm certify --target`` with
DEFAULT options (plus ``--jobs``) in a fresh subprocess: wall time, build and write time (from the
summary), certificate bytes, peak RSS of the certify process tree
(``resource.getrusage(RUSAGE_CHILDREN)`` of a wrapper, i.e. the largest single process), then
``exactnorm check`` in another subprocess under an address-space cap (``--check-gib``) so that a
checker that needs more memory fails cleanly instead of swapping the machine. ``--blocks`` adds
the block-size trade-off (k = 1, 2, 4, 8: time, memory, bytes, depth) on a chosen shape.

Goal: 784-128-10 construct + write + check ≤ 3 min, ≤ 4 GiB, certificate ≤ 100 MB on 2 cores;
784-256-128-10 ≤ 10 min.

Usage::

    python benchmarks/bench_real_size.py                       # both shapes, jobs 2
    python benchmarks/bench_real_size.py --shapes 196-64-10 --blocks 196-64-10
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, say, verdict, write_csv  # noqa: E402
from mlp_models import write_mlp_npz  # noqa: E402

GOAL_SECONDS = {"784-128-10": 180, "784-256-128-10": 600}

# runs a command and reports its wall time, the CPU time of its process tree (on a shared machine
# the fairer measure) and the peak RSS of its largest process (KiB on Linux)
_WRAPPER = textwrap.dedent("""
    import json, resource, subprocess, sys, time
    limit = int(sys.argv[1])
    def cap():
        if limit:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    t = time.perf_counter()
    p = subprocess.run(sys.argv[2:], capture_output=True, text=True, preexec_fn=cap)
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({"seconds": time.perf_counter() - t, "code": p.returncode,
                      "cpu_seconds": ru.ru_utime + ru.ru_stime,
                      "stdout": p.stdout, "stderr": p.stderr[-4000:],
                      "peak_kib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))
""")


def run_measured(cmd: list[str], limit_bytes: int = 0, cwd: Path | None = None) -> dict:
    out = subprocess.run([sys.executable, "-c", _WRAPPER, str(limit_bytes), *cmd],
                         capture_output=True, text=True, check=True, cwd=cwd)
    return json.loads(out.stdout)


def exactnorm_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "exactnorm", *args]


def certify_and_check(npz: Path, out: Path, jobs: int, check_gib: float,
                      extra: tuple[str, ...] = (), check: bool = True) -> dict:
    res = run_measured(exactnorm_cmd("certify", "--target", str(npz), "--jobs", str(jobs),
                                     "--out", str(out), "--no-check", *extra))
    if res["code"]:
        raise SystemExit(f"certify {npz.name} failed:\n{res['stderr']}")
    text = res["stdout"]
    build = float(re.search(r"build ([0-9.]+) s", text).group(1))
    written = re.search(r"\((\d+) bytes, version \d, ([0-9.]+) s\)", text)
    depth = int(re.search(r"frozen depth (\d+)", text).group(1))
    block = re.search(r"block size (\d+)", res["stderr"] + text)
    row = {"certify_s": res["seconds"], "certify_cpu_s": res["cpu_seconds"], "build_s": build,
           "write_s": float(written.group(2)),
           "bytes": int(written.group(1)), "depth": depth,
           "block": int(block.group(1)) if block else None,
           "certify_peak_mib": res["peak_kib"] / 1024, "check_s": None, "check": "not run",
           "check_peak_mib": None}
    if check:
        chk = run_measured(exactnorm_cmd("check", str(out)), int(check_gib * 2**30))
        row["check_s"] = chk["seconds"]
        row["check_peak_mib"] = chk["peak_kib"] / 1024
        row["check"] = ("VALID" if chk["code"] == 0 and "VALID" in chk["stdout"] else
                        f"failed (exit {chk['code']}: "
                        f"{(chk['stdout'] + chk['stderr']).strip().splitlines()[-1][:120]})")
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", nargs="*", default=["784-128-10", "784-256-128-10"])
    ap.add_argument("--blocks", default=None, metavar="SHAPE",
                    help="also measure block sizes 1, 2, 4, 8 on this shape (build + write)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--check-gib", type=float, default=8.0,
                    help="address-space cap of the check subprocess (GiB)")
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--keep", default=None, help="directory for models and certificates")
    args = ap.parse_args()
    say("machine:", ", ".join(f"{k}={v}" for k, v in machine().items()))
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(args.keep or tmp)
        where.mkdir(parents=True, exist_ok=True)

        def model(shape: str) -> Path:
            npz = where / f"mlp_{shape}.npz"
            if not npz.exists():
                t = time.perf_counter()
                write_mlp_npz(tuple(int(w) for w in shape.split("-")), npz)
                say(f"trained {shape} in {time.perf_counter() - t:.0f} s")
            return npz

        rows = []
        for shape in args.shapes:
            r = certify_and_check(model(shape), where / f"cert_{shape}.json.gz", args.jobs,
                                  args.check_gib, check=not args.no_check)
            total = r["certify_s"] + (r["check_s"] or 0)
            goal = GOAL_SECONDS.get(shape)
            say(f"{shape} jobs={args.jobs}: block {r['block']}, depth {r['depth']}, certify "
                f"{r['certify_s']:.0f} s wall, {r['certify_cpu_s']:.0f} s CPU (build "
                f"{r['build_s']:.0f} s, write {r['write_s']:.0f} s)"
                f", peak {r['certify_peak_mib']:.0f} MiB, {r['bytes'] / 1e6:.1f} MB | check "
                f"{r['check']}" + (f" in {r['check_s']:.0f} s, peak {r['check_peak_mib']:.0f} "
                                   f"MiB" if r["check_s"] is not None else "")
                + (f" | total {total:.0f} s (goal {goal} s: {verdict(total, goal, False)})"
                   if goal and r["check"] == "VALID" else ""))
            rows.append([shape, args.jobs, r["block"], r["depth"], f"{r['certify_s']:.1f}",
                         f"{r['certify_cpu_s']:.1f}",
                         f"{r['build_s']:.1f}", f"{r['write_s']:.1f}",
                         f"{r['certify_peak_mib']:.0f}", r["bytes"], r["check"],
                         "" if r["check_s"] is None else f"{r['check_s']:.1f}",
                         "" if r["check_peak_mib"] is None else f"{r['check_peak_mib']:.0f}"])
        if rows:
            write_csv("real_size", ["shape", "jobs", "block", "depth", "certify_s",
                                    "certify_cpu_s", "build_s",
                                    "write_s", "certify_peak_mib", "bytes_gz", "check",
                                    "check_s", "check_peak_mib"], rows)
        if args.blocks:
            trade = []
            for k in (1, 2, 4, 8):
                r = certify_and_check(model(args.blocks), where / f"k{k}.json.gz", args.jobs,
                                      args.check_gib, ("--construction", "tradeoff", "--block",
                                                       str(k), "--distribution", "nonzero:8"),
                                      check=False)
                say(f"{args.blocks} k={k}: CPU {r['certify_cpu_s']:.1f} s, build "
                    f"{r['build_s']:.1f} s, write "
                    f"{r['write_s']:.1f} s, peak {r['certify_peak_mib']:.0f} MiB, "
                    f"{r['bytes'] / 1e6:.1f} MB, depth {r['depth']}")
                trade.append([args.blocks, k, args.jobs, f"{r['certify_cpu_s']:.1f}",
                              f"{r['build_s']:.1f}",
                              f"{r['write_s']:.1f}", f"{r['certify_peak_mib']:.0f}",
                              r["bytes"], r["depth"]])
            write_csv("real_size_blocks", ["shape", "block", "jobs", "cpu_s", "build_s", "write_s",
                                           "peak_mib", "bytes_gz", "depth"], trade)


if __name__ == "__main__":
    main()
