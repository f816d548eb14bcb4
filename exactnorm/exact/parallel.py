"""Run independent exact tasks serially, in a local process pool, or as Dask tasks: the one
place of the package that starts worker processes.

Contract: :func:`map_tasks` yields ``fn(task)`` for every task **in task order**, whatever the
backend, so a caller that assembles its result from the yielded values in that order produces the
same bytes for ``jobs = 1``, ``jobs = N`` and any Dask cluster (``ordered=False`` yields each
result as soon as it is done, for callers that key and sort their results). Tasks and results
must pickle: python-flint objects do not (docs/model.md), so callers ship integers and
numerator/denominator pairs (:func:`pack_matrix`, :func:`pack_q`) and rebuild exact objects on
the other side. :func:`dask_client` is the one place that opens (and closes) a Dask client.
Users: the trade-off's blocks and Theorem 1's layers (:mod:`exactnorm.constructions`), the
second prime of a p-adic lifting (:mod:`exactnorm.exact.padic`), the sparse sweeps
(:mod:`exactnorm.analysis.sweeps`).

Correctness argument: every task is a pure function of its (integer) input — frozen weights are
regenerated from the seed and stream key inside the task — so where it runs cannot change what it
returns; only the order of assembly could, and that is fixed here.

>>> list(map_tasks(abs, [-2, 3, -5]))
[2, 3, 5]
>>> unpack_matrix(pack_matrix(fmpq_mat([[fmpq(1, 3), 2]])))
[1/3, 2]
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import as_completed
from typing import Any, TypeVar

from flint import fmpq, fmpq_mat, fmpz_mat

from exactnorm.errors import InputError
from exactnorm.exact.interrupts import (
    at_exit,
    end_workers,
    quiet_worker,
    register_workers,
    signals_blocked,
    unregister_workers,
)

__all__ = ["map_tasks", "dask_client", "check_jobs", "available_cores", "auto_jobs",
           "AUTO_JOBS_SECONDS", "pack_q", "unpack_q", "pack_matrix", "unpack_matrix"]

#: estimated construction time from which ``--jobs auto`` uses every available core; below it
#: starting worker processes (each imports python-flint) costs more than it saves
AUTO_JOBS_SECONDS = 5.0

T = TypeVar("T")
R = TypeVar("R")


def check_jobs(jobs: Any) -> int:
    """``jobs`` as a positive ``int``, or an :class:`InputError` naming the option."""
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise InputError(f"--jobs must be a positive integer, got {jobs!r}")
    return jobs


def available_cores() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - macOS and Windows have no affinity call
        return max(1, os.cpu_count() or 1)


def auto_jobs(estimated_seconds: float) -> int:
    """Processes for ``--jobs auto``: every available core for work estimated at
    :data:`AUTO_JOBS_SECONDS` or more, else 1. The result never depends on it (tasks are
    assembled in order), only the time does.

    >>> auto_jobs(0.1)
    1
    """
    return available_cores() if estimated_seconds >= AUTO_JOBS_SECONDS else 1


@contextlib.contextmanager
def dask_client(scheduler: Any) -> Iterator[Any]:
    """A ``distributed.Client`` for ``scheduler`` (an address, or a client used as it is).

    A client opened here is closed on exit; a client passed in stays open (its owner closes it).

    Raises
    ------
    InputError
        When the optional ``dask`` extra is not installed or the scheduler cannot be reached.
    """
    try:
        from distributed import Client
    except ImportError:  # pragma: no cover - depends on the optional extra
        raise InputError("--scheduler needs the optional extra: pip install 'exactnorm[dask]'"
                         ) from None
    if isinstance(scheduler, Client):
        yield scheduler
        return
    try:
        client = Client(scheduler, timeout="20s")
    except (OSError, TimeoutError, ValueError) as exc:
        raise InputError(f"cannot reach the Dask scheduler {scheduler!r}: {exc}") from None
    try:
        yield client
    finally:
        client.close()


def map_tasks(fn: Callable[[T], R], tasks: Sequence[T], *, jobs: int = 1,
              scheduler: Any = None, ordered: bool = True) -> Iterator[R]:
    """``fn(task)`` for each task, in task order, on the chosen backend.

    Parameters
    ----------
    fn : callable
        A module-level function (it is pickled by reference for other processes).
    tasks : sequence
        Picklable inputs.
    jobs : int
        Local processes; 1 runs in this process.
    scheduler : str or distributed.Client, optional
        Run as Dask tasks on this cluster instead (``jobs`` is then ignored).
    ordered : bool
        ``True``: in task order; ``False``: each result as soon as it is done.

    Yields
    ------
    The results, in the order of ``tasks`` (as soon as each one and all before it are done), or
    in the order they finish.
    """
    check_jobs(jobs)
    if scheduler is not None:
        yield from _dask_map(fn, tasks, scheduler, ordered)
    elif jobs == 1 or len(tasks) <= 1:
        yield from map(fn, tasks)
    else:
        yield from _pool_map(fn, tasks, min(jobs, len(tasks)), ordered)


def _pool_map(fn: Callable[[T], R], tasks: Sequence[T], workers: int,
              ordered: bool) -> Iterator[R]:
    """:func:`map_tasks` on a local process pool whose workers end with any interruption.

    The workers start with the stop signals blocked and take their default actions
    (:func:`~exactnorm.exact.interrupts.quiet_worker`): a terminal's Ctrl-C ends them silently.
    Any exception here (an interrupt, a deadline, a failed task, the caller closing the
    generator) ends every worker within :data:`~exactnorm.exact.interrupts.WORKER_GRACE`
    seconds instead of waiting for the running tasks, as ``ProcessPoolExecutor.__exit__`` would;
    so does the interpreter's exit while the generator is suspended (:func:`_end_pools`).
    """
    # imported here, not at the top: the exit hook of exactnorm.exact.interrupts must be
    # registered before the pool module's own (which would wait for every queued task)
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(max_workers=workers, initializer=quiet_worker)
    _live_pools.add(pool)
    processes: list[Any] = []
    try:
        with signals_blocked():
            # futures of our own, never cancelled: ``Executor.map`` cancels its futures when it
            # is closed, and Python 3.11's pool then fails on them with a traceback
            if ordered:
                # a small chunk keeps both workers busy to the end; results arrive in order
                size = max(1, len(tasks) // (16 * workers))
                chunks = [pool.submit(_run_chunk, fn, tasks[i:i + size])
                          for i in range(0, len(tasks), size)]
                results: Iterable[R] = (r for fut in chunks for r in fut.result())
            else:
                futures = [pool.submit(fn, task) for task in tasks]
                results = (fut.result() for fut in as_completed(futures))
            # the pool forks its workers at the first submission (the fork start method)
            processes = _workers_of(pool)
            register_workers(processes)
        yield from results
    except BaseException:
        _end_pool(pool, processes)
        raise
    else:
        pool.shutdown(wait=True)
    finally:
        unregister_workers(processes)
        _live_pools.discard(pool)


#: the pools of :func:`_pool_map` whose generator is not finished
_live_pools: set[Any] = set()


def _end_pool(pool: Any, processes: Sequence[Any] = ()) -> None:
    """End a pool now: its workers, then the pool without waiting for anything."""
    # the call queue's feeder may be blocked on a pipe no dead worker reads: neither the
    # pool's manager thread nor the interpreter's exit may wait for it
    call_queue = getattr(pool, "_call_queue", None)
    if call_queue is not None:
        call_queue.cancel_join_thread()
    end_workers({id(p): p for p in [*processes, *_workers_of(pool)]}.values())
    # a worker ended while it sent a result leaves part of a message in the result pipe, and
    # the pool's manager thread would wait for the rest for ever: closing this process's copy
    # of the pipe's write end (the workers' copies died with them) makes that read end, and
    # the manager thread then finds the pool broken and stops
    writer = getattr(getattr(pool, "_result_queue", None), "_writer", None)
    if writer is not None:
        with contextlib.suppress(OSError):
            writer.close()
    # not cancel_futures: Python 3.11's manager thread fails (InvalidStateError) on cancelled
    # futures of a broken pool and prints a traceback; the broken pool fails them itself
    pool.shutdown(wait=False)
    # the pool module's exit hook would wake this pool through a pipe its manager thread
    # closes (an "Exception ignored" traceback, Python 3.11); it ends without being woken
    from concurrent.futures import process

    thread = getattr(pool, "_executor_manager_thread", None)
    if thread is not None:
        with contextlib.suppress(Exception):
            process._threads_wakeups.pop(thread, None)


@at_exit
def _end_pools() -> None:
    """At the interpreter's exit, end the pools of generators never finished (an exception
    that keeps their frames until the end): no exit waits for queued tasks."""
    for pool in list(_live_pools):
        _end_pool(pool)
    _live_pools.clear()


def _run_chunk(fn: Callable[[T], R], chunk: Sequence[T]) -> list[R]:
    """``fn`` on consecutive tasks in one worker (fewer round trips than one task each)."""
    return [fn(task) for task in chunk]


def _workers_of(pool: Any) -> list[Any]:
    """The pool's worker processes (``ProcessPoolExecutor`` keeps them by pid; it has no public
    way to end them before Python 3.14's ``terminate_workers``)."""
    return list((getattr(pool, "_processes", None) or {}).values())


def _dask_map(fn: Callable[[T], R], tasks: Iterable[T], scheduler: Any,
              ordered: bool = True) -> Iterator[R]:
    with dask_client(scheduler) as client:
        futures = client.map(fn, list(tasks), pure=False)
        try:
            if ordered:
                for fut in futures:
                    yield fut.result()
            else:
                from distributed import as_completed as dask_as_completed

                for fut in dask_as_completed(futures):
                    yield fut.result()
        finally:
            client.cancel(futures)


# FLINT matrices do not pickle: tasks and results cross the process boundary as integers
# (numerator, denominator pairs) and are rebuilt on the other side, exactly.

def pack_q(x: Any) -> tuple[int, int]:
    """An exact number as ``(numerator, denominator)``."""
    q = fmpq(x)
    return int(q.numer()), int(q.denom())


def unpack_q(t: tuple[int, int]) -> fmpq:
    """The inverse of :func:`pack_q`."""
    return fmpq(t[0], t[1])


def pack_matrix(M: Any) -> tuple[str, int, int, list[Any]]:
    """An ``fmpz_mat`` (integers) or ``fmpq_mat`` (pairs) as plain Python values."""
    if isinstance(M, fmpz_mat):
        return "z", M.nrows(), M.ncols(), [int(x) for x in M.entries()]
    return "q", M.nrows(), M.ncols(), [pack_q(x) for x in M.entries()]


def unpack_matrix(t: tuple[str, int, int, list[Any]]) -> Any:
    """The inverse of :func:`pack_matrix` (the same matrix type)."""
    tag, r, c, flat = t
    if tag == "z":
        return fmpz_mat(r, c, flat) if r and c else fmpz_mat(r, c)
    return fmpq_mat(r, c, [unpack_q(x) for x in flat]) if r and c else fmpq_mat(r, c)
