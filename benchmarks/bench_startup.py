"""Start-up time of the command line: ``exactnorm --help`` and a usage error against a bare
interpreter and against a verb that loads the mathematics.

Not a test (timings depend on the machine): runs each command ``--repeat`` times in a fresh
interpreter, prints the median wall time and its ratio to ``python -c pass``. ``--help`` and a
usage error import neither python-flint, NumPy nor SciPy (pinned by
``tests/project/test_architecture.py``); the target is at most 0.2 s.

    python benchmarks/bench_startup.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "exactnorm --help": [sys.executable, "-m", "exactnorm", "--help"],
    "exactnorm certify --jobs x (usage error)": [sys.executable, "-m", "exactnorm", "certify",
                                                 "--jobs", "x"],
    "exactnorm check missing.json (loads the API)": [sys.executable, "-m", "exactnorm", "check",
                                                     "missing.json"],
}


def median_seconds(argv: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(argv, capture_output=True, check=False)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    base = None
    for name, argv in COMMANDS.items():
        t = median_seconds(argv, args.repeat)
        base = base or t
        print(f"{name:48s} {t:6.3f} s   ×{t / base:4.1f} of a bare interpreter")


if __name__ == "__main__":
    main()
