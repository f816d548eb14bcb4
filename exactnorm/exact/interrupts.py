"""Interrupts and deadlines of a command: Ctrl-C, ``SIGINT``, ``SIGTERM`` and ``--timeout`` end
the work at once, worker processes included, with no traceback from any process and no partial
file. Standard library only, so that the command line installs it before the mathematics is
imported.

Contract
--------
* :func:`handling_interrupts` (the command line wraps every verb in it) turns ``SIGINT`` and
  ``SIGTERM`` into :class:`Interrupted` raised in the main thread, and with ``timeout`` seconds a
  ``SIGALRM`` into :class:`DeadlineReached`; both are :class:`KeyboardInterrupt`, so every
  cleanup written for Ctrl-C (an atomic write removing its temporary file, a pool ending its
  workers) runs for them too. On exit the previous handlers and timer are restored.
* Worker processes (:mod:`exactnorm.exact.parallel`) run :func:`quiet_worker` first: ``SIGINT``
  and ``SIGTERM`` take their default action there (the process ends at once, silently: no
  ``KeyboardInterrupt`` traceback when a terminal's Ctrl-C reaches the whole process group), and
  they inherit neither the main process's handlers nor its wake-up descriptor; on Linux the
  kernel ends a worker whose parent ends (``PR_SET_PDEATHSIG``), so a worker's own workers and
  the workers of a killed command end too. The pool is
  created and its tasks submitted with the signals blocked (:func:`signals_blocked`), so that no
  signal reaches a worker between its ``fork`` and :func:`quiet_worker`; a signal that arrives
  meanwhile is delivered to the main process when they are unblocked.
* The main process ends its workers itself: the pool registers them (:func:`register_workers`)
  and, on any exception while they run, :func:`end_workers` sends ``SIGTERM``, waits at most
  :data:`WORKER_GRACE` seconds and kills what is left. A watcher thread, woken by the signal
  itself through :func:`signal.set_wakeup_fd` (written by the C-level handler even while the main
  thread is inside a long computation that releases the interpreter lock), ends the registered
  workers at once as well.

Correctness argument
--------------------
Nothing is kept that was not complete: every output file is written to a temporary file and
renamed (:func:`exactnorm.exact.files.atomic_write_bytes`), which removes the temporary file on
any :class:`BaseException`; the interrupt is an exception of the main thread, so that cleanup
runs. Workers hold no file. The only state that outlives an interrupt is a finished file or an
append-only task log (``sparse-sweep``), which the command names in its one line.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

__all__ = ["at_exit", "Interrupted", "DeadlineReached", "handling_interrupts", "quiet_worker",
           "signals_blocked", "register_workers", "unregister_workers", "end_workers",
           "WORKER_GRACE", "STOP_SIGNALS"]

#: seconds a worker is given to end after ``SIGTERM`` before it is killed
WORKER_GRACE = 1.0
#: the signals that stop a command (the timer's ``SIGALRM`` only with a deadline)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: signal masks, interval timers and ``SIGALRM`` (POSIX; elsewhere only the handlers are set)
_POSIX = all(hasattr(signal, name) for name in ("pthread_sigmask", "setitimer", "SIGALRM"))
_HELD = [*STOP_SIGNALS, signal.SIGALRM] if _POSIX else []
#: the bytes the wake-up descriptor receives for them (it receives every handled signal)
_STOPPING = {int(s) for s in (*STOP_SIGNALS, *_HELD)}


class Interrupted(KeyboardInterrupt):
    """``SIGINT`` (Ctrl-C) or ``SIGTERM`` arrived; ``signal_name`` says which."""

    def __init__(self, signal_name: str = "SIGINT") -> None:
        super().__init__(signal_name)
        self.signal_name = signal_name


class DeadlineReached(Interrupted):
    """The ``timeout`` of :func:`handling_interrupts` passed; ``seconds`` is that timeout."""

    def __init__(self, seconds: float) -> None:
        super().__init__("SIGALRM")
        self.seconds = seconds


_workers: dict[int, Any] = {}
_workers_lock = threading.Lock()


_exit_hooks: list[Callable[[], None]] = []


#: the process whose exit runs the hooks: a forked worker inherits the list (and a copy of every
#: pool in it) and runs threading's exit too when its task loop ends, where ending its parent's
#: pools would wait for ever on processes that are not its children
_HOOKS_PID = os.getpid()


def _run_exit_hooks() -> None:
    if os.getpid() != _HOOKS_PID:
        return
    for hook in _exit_hooks:
        with contextlib.suppress(Exception):
            hook()


# at the interpreter's exit, before the threads are joined: registered when this module is
# imported (before concurrent.futures.process registers its own exit, which joins its pools'
# threads and so waits for every queued task of a pool still running)
with contextlib.suppress(AttributeError):  # a private hook of CPython's threading module
    threading._register_atexit(_run_exit_hooks)  # type: ignore[attr-defined]


def at_exit(hook: Callable[[], None]) -> Callable[[], None]:
    """Run ``hook`` at the interpreter's exit before threads are joined (a decorator)."""
    _exit_hooks.append(hook)
    return hook


def register_workers(processes: Iterable[Any]) -> None:
    """Worker processes (``multiprocessing.Process``) that an interrupt must end."""
    with _workers_lock:
        for p in processes:
            if p.pid is not None:
                _workers[p.pid] = p


def unregister_workers(processes: Iterable[Any]) -> None:
    with _workers_lock:
        for p in processes:
            _workers.pop(p.pid, None)


def end_workers(processes: Iterable[Any] | None = None, grace: float = WORKER_GRACE) -> None:
    """``SIGTERM`` to each process (default: every registered one), then ``SIGKILL`` to those
    still alive after ``grace`` seconds; each is joined (no zombie is left)."""
    with _workers_lock:
        procs = list(_workers.values()) if processes is None else list(processes)
    for p in procs:
        with contextlib.suppress(OSError, AttributeError, ValueError):
            if p.is_alive():
                p.terminate()
    for p in procs:
        with contextlib.suppress(OSError, AttributeError, ValueError, AssertionError):
            p.join(grace)
            if p.is_alive():
                p.kill()
                p.join(grace)
    unregister_workers(procs)


def quiet_worker() -> None:
    """The first thing a worker process runs (its pool's initializer): default actions for the
    stop signals, no inherited handler, timer or wake-up descriptor (module doc)."""
    with contextlib.suppress(ValueError, OSError):
        signal.set_wakeup_fd(-1)
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)
    _end_with_parent()
    if _POSIX:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _HELD)


#: ``prctl(PR_SET_PDEATHSIG, …)`` (Linux): a signal the kernel sends when the parent ends
_PR_SET_PDEATHSIG = 1


def _end_with_parent() -> None:
    """On Linux, ask the kernel to send ``SIGTERM`` to this worker when its parent ends (killed
    with ``SIGKILL``, or itself a worker ended by an interrupt): no worker, nor a worker's own
    worker, outlives the command. Elsewhere nothing (the main process ends its workers)."""
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid()
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - no libc prctl
        return
    if os.getppid() != parent:  # the parent ended before the request took effect
        os._exit(1)


@contextlib.contextmanager
def signals_blocked() -> Iterator[None]:
    """The stop signals (and the timer's) held back in this thread while the block runs, then
    delivered: worker processes forked inside start with them blocked and unblock them in
    :func:`quiet_worker`, after their handlers are the defaults."""
    if not _POSIX or threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def _raise_for(signum: int, frame: Any) -> None:
    raise Interrupted(signal.Signals(signum).name)


@contextlib.contextmanager
def handling_interrupts(timeout: float | None = None) -> Iterator[None]:
    """Stop signals as :class:`Interrupted`, ``timeout`` as :class:`DeadlineReached` (module doc).

    Only in the main thread (signal handlers live there); elsewhere it does nothing.
    """
    if timeout is not None and not _POSIX:  # pragma: no cover - POSIX only
        raise OSError("a timeout needs POSIX interval timers")
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _raise_for) for sig in STOP_SIGNALS}
    reader, writer = socket.socketpair()
    writer.setblocking(False)
    old_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    stop = threading.Event()

    def watch() -> None:
        # woken by the C-level handler: end the workers even before the main thread gets to
        # run its Python handler (it may be inside a long computation)
        while not stop.is_set():
            try:
                data = reader.recv(64)
            except OSError:
                return
            if not data or stop.is_set():
                return
            if _STOPPING.intersection(data):
                end_workers()

    watcher = threading.Thread(target=watch, name="exactnorm-interrupts", daemon=True)
    watcher.start()
    old_alarm = None
    if timeout is not None:
        seconds = float(timeout)

        def deadline(signum: int, frame: Any) -> None:
            raise DeadlineReached(seconds)

        old_alarm = signal.signal(signal.SIGALRM, deadline)
        signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        if timeout is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old_alarm)
        try:
            signal.set_wakeup_fd(old_fd)
        except (ValueError, OSError):
            # the descriptor set before us was closed since (an event loop that was not
            # closed leaves one behind): there is nothing to restore
            signal.set_wakeup_fd(-1)
        stop.set()
        with contextlib.suppress(OSError):
            writer.send(b"\0")
        watcher.join(1.0)
        reader.close()
        writer.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)

