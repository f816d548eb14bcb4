"""Reading a long certificate: the checker of this checkout against the checker of an earlier
commit, side by side in one run (docs/performance.md, "Reading a long document").

The input is the 120,000-checkpoint chain of issue 41 (16 MB of JSON: 120,000 target layers
``1 → 1`` and one frozen layer per segment), or any certificate given on the command line. The
earlier checker is the folder ``exactnorm/checker/`` of ``--before`` (default: the commit before
the reading was made faster), extracted with ``git archive`` into a temporary directory and
imported as its own package: the checker imports nothing outside its folder, so both run in this
process on the same bytes, run by run in alternation. Each phase is timed in CPU seconds
(``time.process_time``, best of ``--repeat``): the strict JSON parse, the reading (every reading
and structural rule, the records both arithmetics consume), and with ``--full`` the check of the
file as ``exactnorm check --pure`` does it (standard-library arithmetic): until its first layer
is checked (the time a user waits for the first progress) and whole.

Usage::

    python benchmarks/bench_reading.py [CERT.json ...] [--layers 120000] [--before REV]
        [--repeat 3] [--full]
"""

from __future__ import annotations

import argparse
import importlib
import io
import json
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from _common import machine, peak_rss_mb, write_csv  # noqa: E402

#: the commit whose reader issue 41 measured (before the reading was made faster)
BEFORE = "8cfc34a"


def chain(n: int) -> str:
    """``n`` identity target layers ``1 → 1`` and ``n`` checkpoints, one frozen layer each."""
    target = [{"weight": [[1]], "bias": [0], "activation": "identity"}] * n
    layers = [{"input": j, "weight": [[1]], "gamma": [1], "beta": [0], "activation": "identity"}
              for j in range(n)]
    return json.dumps({"format": "exactnorm.certificate", "version": 1,
                       "domain": {"lower": [0], "upper": [1]}, "target": {"layers": target},
                       "network": {"layers": layers, "checkpoints": list(range(1, n + 1))}})


def earlier_checker(rev: str, folder: Path) -> Any:
    """The checker package of commit ``rev``, imported as ``checker_<rev>``."""
    data = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", rev,
                           "exactnorm/checker"], check=True, capture_output=True).stdout
    name = f"checker_{rev}"
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for member in tar.getmembers():
            if member.isfile():
                member.name = member.name.replace("exactnorm/checker", name, 1)
                tar.extract(member, folder)
    sys.path.insert(0, str(folder))
    return importlib.import_module(name)


def reading(pkg: Any, text: str) -> tuple[float, float]:
    """CPU seconds of the strict parse and of the reading of ``text`` by checker ``pkg``."""
    numbers = importlib.import_module(f"{pkg.__name__}.numbers")
    document = importlib.import_module(f"{pkg.__name__}.document")
    t = time.process_time()
    doc = numbers.parse_certificate_text(text)
    parsed = time.process_time()
    document.read_certificate(doc, 200_000)
    return parsed - t, time.process_time() - parsed


def file_check(pkg: Any, path: Path) -> tuple[float, float, bool]:
    """As `exactnorm check --pure FILE` does (read the file, parse, read, walk): CPU seconds
    until the first layer is checked and in all, and the verdict."""
    first: list[float] = []
    t0 = time.process_time()

    def progress(done: int, total: int) -> None:
        if not first:
            first.append(time.process_time() - t0)

    v = pkg.check_file(str(path), progress=progress)
    return first[0], time.process_time() - t0, v.ok


def side_by_side(before: Any, after: Any, text: str, repeat: int,
                 full: bool) -> list[dict[str, Any]]:
    """Both checkers' phases, alternated run by run (so that a change of the machine's load
    touches both), the best of ``repeat`` of each."""
    out: list[dict[str, Any]] = [{"parse": float("inf"), "read": float("inf")} for _ in range(2)]
    for _ in range(repeat):
        for slot, pkg in zip(out, (before, after)):
            parse, read = reading(pkg, text)
            slot["parse"], slot["read"] = min(slot["parse"], parse), min(slot["read"], read)
    for slot in out:
        slot["reading"], slot["check"], slot["first"], slot["ok"] = \
            slot["parse"] + slot["read"], None, None, None
    if full:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "certificate.json"
            path.write_text(text)
            for slot, pkg in zip(out, (before, after)):
                slot["first"], slot["check"], slot["ok"] = file_check(pkg, path)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("certificates", nargs="*", help="certificate files (JSON text) to read")
    ap.add_argument("--layers", type=int, default=120_000)
    ap.add_argument("--before", default=BEFORE)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--full", action="store_true", help="also time the whole check")
    args = ap.parse_args()
    print("machine:", machine())
    inputs = [(f"chain of {args.layers:,} checkpoints", chain(args.layers))]
    inputs += [(Path(p).name, Path(p).read_text()) for p in args.certificates]
    import exactnorm.checker as after

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        before = earlier_checker(args.before, Path(tmp))
        for name, text in inputs:
            mb = len(text.encode()) / 1e6
            old, new = side_by_side(before, after, text, args.repeat, args.full)
            ratio = old["reading"] / new["reading"]
            print(f"{name} ({mb:.1f} MB): reading {old['reading']:.2f} s CPU at {args.before} "
                  f"(parse {old['parse']:.2f}, read {old['read']:.2f}), {new['reading']:.2f} s "
                  f"now (parse {new['parse']:.2f}, read {new['read']:.2f}): {ratio:.2f}x faster")
            if args.full:
                print(f"  until the first layer is checked: {old['first']:.2f} s -> "
                      f"{new['first']:.2f} s CPU; whole check: {old['check']:.2f} s -> "
                      f"{new['check']:.2f} s CPU (valid: {old['ok']}, {new['ok']})")
            rows.append([name, round(mb, 1), args.before, round(old["parse"], 3),
                         round(old["read"], 3), round(old["reading"], 3), round(new["parse"], 3),
                         round(new["read"], 3), round(new["reading"], 3), round(ratio, 2),
                         old["check"] and round(old["check"], 2),
                         new["check"] and round(new["check"], 2),
                         old.get("first") and round(old["first"], 2),
                         new.get("first") and round(new["first"], 2)])
    print(f"peak RSS {peak_rss_mb():.0f} MiB")
    path = write_csv("reading", ["input", "MB", "before", "parse_before_s", "read_before_s",
                                 "reading_before_s", "parse_s", "read_s", "reading_s",
                                 "speedup", "check_before_s", "check_s", "first_layer_before_s",
                                 "first_layer_s"], rows)
    print("wrote", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
