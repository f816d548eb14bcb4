"""Shared helpers for the benchmark scripts: machine description, timing, CSV output.

Timings live here and in ``benchmarks/results/`` only — never in ``proofs/``.
"""

from __future__ import annotations

import csv
import os
import platform
import resource
import sys
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def machine() -> dict[str, Any]:
    """CPU model, cores and software versions (written next to every result)."""
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = float("nan")
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(),
            "python_flint": version("python-flint"), "numpy": version("numpy"),
            "sympy": version("sympy"), "load_1min": round(load, 2)}


def best_of(fn: Callable[[], Any], repeat: int = 3) -> tuple[float, Any]:
    """Smallest wall time of ``repeat`` runs (less sensitive to other load) and the last result."""
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def peak_rss_mb() -> float:
    """Peak resident memory of this process and its finished children, in MiB (Linux: KiB)."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, kids) / 1024


def write_csv(name: str, columns: list[str], rows: list[list[Any]], **facts: Any) -> Path:
    """Write ``results/<name>.csv`` with a ``# machine`` header line (and ``facts`` on it)."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.csv"
    with open(path, "w", newline="") as fh:
        header = {**machine(), **facts}
        fh.write("# " + ", ".join(f"{k}={v}" for k, v in header.items()) + "\n")
        w = csv.writer(fh)
        w.writerow(columns)
        w.writerows(rows)
    return path


def verdict(value: float, target: float, higher_is_better: bool) -> str:
    ok = value >= target if higher_is_better else value <= target
    return "meets target" if ok else "MISSES target"


def say(*parts: Any) -> None:
    print(*parts, flush=True)
    sys.stdout.flush()
