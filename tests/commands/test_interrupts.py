"""Interrupts and deadlines: SIGINT or SIGTERM sent to the main process only, while its worker
processes compute (``--jobs 2``), ends every worker within 2 s; the command prints one line
(what was kept, how to resume), exits 130, no process prints a traceback and no partial file is
left. ``--timeout`` ends the same way with exit code 124.

The default suite interrupts a target of a few seconds' work per worker; the issue's own case,
the 784-128-10 MLP, is the slow test.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from exactnorm.certificate import save_target
from exactnorm.exact.interrupts import DeadlineReached, Interrupted, handling_interrupts
from exactnorm.exact.parallel import map_tasks
from exactnorm.model.targets import random_target
from tests.helpers import checkout_env

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(),
                                reason="reads process states from Linux /proc")

#: the issue's bound: every process ended within this many seconds of the signal
WITHIN = 2.0


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            found += [int(c) for c in (task / "children").read_text().split()]
    return found


def _cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _alive(pid: int) -> bool:
    """Running or sleeping (a zombie has ended; its parent reaps it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def _wait_for_workers(pid: int, count: int, cpu: float, timeout: float = 240.0) -> list[int]:
    """The worker pids once ``count`` of them have used ``cpu`` seconds each (they are inside
    the exact solve, not starting up); CPU time, not wall time: the machine may be loaded."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        kids = _children(pid)
        if len(kids) >= count and sum(_cpu_seconds(k) >= cpu for k in kids) >= count:
            return kids
        if not _alive(pid):
            break
        time.sleep(0.05)
    pytest.fail(f"the workers did not start working (children {_children(pid)})")


def _interrupt(argv: list[str], folder: Path, sig: signal.Signals, cpu: float,
               timeout: float = 240.0) -> tuple[int, str, str, float, list[int]]:
    proc = subprocess.Popen([sys.executable, "-m", "exactnorm", *argv], cwd=folder,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=checkout_env())
    try:
        workers = _wait_for_workers(proc.pid, 2, cpu, timeout)
        assert proc.poll() is None, "the command finished before the signal: a bigger target"
        t0 = time.monotonic()
        proc.send_signal(sig)  # to the main process only, not to its process group
        while proc.poll() is None or any(_alive(w) for w in workers):
            if time.monotonic() - t0 > 60:
                break
            time.sleep(0.01)
        elapsed = time.monotonic() - t0
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, out, err, elapsed, workers


def _check_clean(code: int, err: str, elapsed: float, workers: list[int], folder: Path,
                 kept: set[str], expected: int = 130) -> None:
    assert code == expected, err
    assert "Traceback" not in err and "Error" not in err.replace("error:", ""), err
    # off a terminal, plain progress lines and the plan's estimate may come first
    lines = [ln for ln in err.strip().splitlines() if ln.startswith("exactnorm:")]
    assert len(lines) == 1 and ("interrupted" in lines[0] or "--timeout" in lines[0]), err
    assert "certificate was written" in lines[0] or "kept" in lines[0], lines
    assert elapsed < WITHIN, f"{elapsed:.2f} s until every process ended"
    assert not any(_alive(w) for w in workers)
    assert {p.name for p in folder.iterdir()} == kept  # no partial file, no temporary file


@pytest.mark.parametrize("sig,case", [(signal.SIGINT, "theorem1"), (signal.SIGTERM, "theorem1"),
                                      (signal.SIGINT, "tradeoff")],
                         ids=["SIGINT", "SIGTERM", "SIGINT-tradeoff"])
def test_signal_to_the_main_process_ends_every_worker(tmp_path, sig, case):
    """``certify --jobs 2`` of a 20-20-20 target with 40-bit frozen weights (two Theorem 1
    layers solved at once, each tens of seconds of work), or of an 800-64-10 target (the
    trade-off: hundreds of queued blocks whose results fill the pipes)."""
    # Theorem 1 named: the plan would take the far faster trade-off for this target
    widths, extra = {"theorem1": ((20, 20, 20), ["--distribution", "bits:40",
                                                 "--construction", "theorem1"]),
                     "tradeoff": ((800, 64, 10), [])}[case]
    save_target(random_target(widths, seed=3), tmp_path / "t.json")
    code, _, err, elapsed, workers = _interrupt(
        ["certify", "t.json", "--out", "c.json", "--jobs", "2", *extra], tmp_path, sig,
        cpu=1.0)
    _check_clean(code, err, elapsed, workers, tmp_path, {"t.json"})
    if sig == signal.SIGTERM:
        assert "(SIGTERM)" in err


@pytest.mark.slow
def test_sigint_during_the_784_128_10_mlp_certify(tmp_path):
    """The issue's case: a trained 784-128-10 MLP, ``certify --jobs 2``."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from mlp_models import write_mlp_npz

    write_mlp_npz((784, 128, 10), tmp_path / "mlp.npz")
    code, _, err, elapsed, workers = _interrupt(
        ["certify", "mlp.npz", "--out", "mlp.json.gz", "--jobs", "2"], tmp_path,
        signal.SIGINT, cpu=2.0, timeout=600)
    _check_clean(code, err, elapsed, workers, tmp_path, {"mlp.npz"})


def test_timeout_ends_the_workers_with_exit_124(tmp_path):
    # two systems of 576 unknowns: about 10 s of building on two workers, so that the deadline
    # falls inside the build on a quiet machine too (20-20-20 ended its build near 6 s, and a
    # deadline during the check of the written bytes has another note)
    save_target(random_target((24, 24, 24), seed=3), tmp_path / "t.json")
    proc = subprocess.run([sys.executable, "-m", "exactnorm", "certify", "t.json", "--out",
                           "c.json", "--jobs", "2", "--distribution", "bits:40",
                           "--construction", "theorem1", "--timeout", "6"], cwd=tmp_path,
                          capture_output=True, text=True, env=checkout_env(), timeout=300)
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("exactnorm:")]
    assert proc.returncode == 124, proc.stderr
    assert lines == [lines[0]] and "--timeout 6 s" in lines[0] and "start over" in lines[0]
    assert "Traceback" not in proc.stderr
    assert {p.name for p in tmp_path.iterdir()} == {"t.json"}


# ----------------------------------------------------------------- the pieces, in process


def _sleep(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def test_an_exception_in_the_consumer_ends_the_pool_at_once():
    """Without the fix ``ProcessPoolExecutor.__exit__`` waits for the running tasks (30 s)."""
    t0 = time.monotonic()
    results = map_tasks(_sleep, [30.0, 30.0, 30.0], jobs=2)
    with pytest.raises(KeyboardInterrupt), handling_interrupts(timeout=0.5):
        next(results)
    assert time.monotonic() - t0 < 10


_MANY_TASKS = """
import sys, time
from exactnorm.exact.parallel import map_tasks

def work(x):
    time.sleep(0.05)  # 2000 tasks: 50 s of work on two workers, if it were not ended
    return b"x" * 100_000  # results that fill the pipes

for i, _ in enumerate(map_tasks(work, list(range(2000)), jobs=2)):
    if i == 3:
        print("stopping", flush=True)
        raise SystemExit(0)
"""


def test_a_pool_with_queued_tasks_ends_without_a_traceback_or_a_hang():
    """Thousands of queued tasks (the trade-off's blocks): leaving the loop early ends the
    workers, the pool's threads do not block the interpreter's exit (a full call queue) and
    print no traceback (cancelled futures of a broken pool, Python 3.11)."""
    proc = subprocess.Popen([sys.executable, "-c", _MANY_TASKS], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=checkout_env())
    out = proc.stdout.readline()
    t0 = time.monotonic()
    try:
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert out == "stopping\n" and proc.returncode == 0
    assert time.monotonic() - t0 < 10 * WITHIN
    assert err == "", err


_COMPLETE_RUN = """
from exactnorm.exact.parallel import map_tasks
print(sorted(map_tasks(abs, list(range(-6, 6)), jobs=2, ordered=False)),
      list(map_tasks(abs, list(range(-6, 6)), jobs=2)), flush=True)
"""


def test_a_pool_run_to_its_end_shuts_down():
    """Every task done, the pool is shut down and joined: each forked worker leaves its task
    loop and exits. Its exit runs threading's exit hooks, which it inherited with a copy of the
    parent's live pools; they are the parent's alone (ending those pools from a worker hung
    every run of two or more workers)."""
    proc = subprocess.Popen([sys.executable, "-c", _COMPLETE_RUN], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=checkout_env(),
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # the workers too
    expected = sorted(abs(x) for x in range(-6, 6))
    assert proc.returncode == 0 and err == "", err
    assert out == f"{expected} {[abs(x) for x in range(-6, 6)]}\n", out


def test_deadline_and_signals_become_interrupts():
    with pytest.raises(DeadlineReached) as info, handling_interrupts(timeout=0.05):
        time.sleep(5)
    assert info.value.seconds == 0.05 and isinstance(info.value, KeyboardInterrupt)
    with pytest.raises(Interrupted) as caught, handling_interrupts():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
    assert caught.value.signal_name == "SIGTERM"
    # the previous handlers are back
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


_BATCHES_ON_THREADS = """
import time
from exactnorm.exact.interrupts import handling_interrupts
from exactnorm.outputs.data_eval import on_threads

def work(start):
    if start == 0:
        return start
    t = time.monotonic()
    while time.monotonic() - t < 30:  # a long batch holding the interpreter lock at times
        sum(range(10_000))
    return start

def keep(start, result):
    if start == 0:
        print("running", flush=True)

try:
    with handling_interrupts():
        on_threads(work, range(6), keep)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    raise SystemExit(130)
"""


def test_sigint_while_data_batches_run_on_threads():
    """The exact target and the float copies on data run their batches on threads
    (``on_threads``): SIGINT to the process ends it within 2 s though two batches of 30 s are
    running, and no traceback comes from any thread."""
    proc = subprocess.Popen([sys.executable, "-c", _BATCHES_ON_THREADS], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=checkout_env())
    try:
        assert proc.stdout.readline() == "running\n"
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        t0 = time.monotonic()
        out, err = proc.communicate(timeout=60)
        elapsed = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and out == "interrupted\n" and err == "", (out, err)
    assert elapsed < WITHIN, elapsed
