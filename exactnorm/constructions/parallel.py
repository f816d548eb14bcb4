"""Run independent exact tasks serially, in a local process pool, or as Dask tasks.

Contract: :func:`map_tasks` yields ``fn(task)`` for every task **in task order**, whatever the
backend, so a caller that assembles its result from the yielded values in that order produces the
same bytes for ``jobs = 1``, ``jobs = N`` and any Dask cluster. Tasks and results must pickle:
python-flint objects do not (SPEC §8), so callers ship integers and numerator/denominator pairs
(see :func:`~exactnorm.constructions.theorem1._pack_matrix`) and rebuild exact objects on the other
side. :func:`dask_client` is the one place that opens (and closes) a Dask client; the sparse
sweeps (:mod:`exactnorm.analysis.sweeps`) use it too.

Correctness argument: every task is a pure function of its (integer) input — frozen weights are
regenerated from the seed and stream key inside the task — so where it runs cannot change what it
returns; only the order of assembly could, and that is fixed here.

>>> list(map_tasks(abs, [-2, 3, -5]))
[2, 3, 5]
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

from exactnorm.errors import InputError

__all__ = ["map_tasks", "dask_client", "check_jobs", "available_cores", "auto_jobs",
           "AUTO_JOBS_SECONDS"]

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
              scheduler: Any = None) -> Iterator[R]:
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

    Yields
    ------
    The results, in the order of ``tasks``, as soon as each one (and all before it) is done.
    """
    check_jobs(jobs)
    if scheduler is not None:
        yield from _dask_map(fn, tasks, scheduler)
    elif jobs == 1 or len(tasks) <= 1:
        yield from map(fn, tasks)
    else:
        with ProcessPoolExecutor(max_workers=min(jobs, len(tasks))) as pool:
            # a small chunk keeps both workers busy to the end; results arrive in order
            yield from pool.map(fn, tasks, chunksize=max(1, len(tasks) // (16 * jobs)))


def _dask_map(fn: Callable[[T], R], tasks: Iterable[T], scheduler: Any) -> Iterator[R]:
    with dask_client(scheduler) as client:
        futures = client.map(fn, list(tasks), pure=False)
        try:
            for fut in futures:
                yield fut.result()
        finally:
            client.cancel(futures)
