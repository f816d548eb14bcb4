"""Progress of the long verbs: a callback ``progress(done, total)``, or ``True`` for a bar.

Every API verb that can run for more than a few seconds takes ``progress``: a callable told the
work done so far (``done`` of ``total`` units: target layers, blocks, frozen layers), or ``True``
for a bar that works in a notebook and a terminal (``tqdm.auto`` when tqdm is installed, which
draws a widget in Jupyter; else rich, which renders in Jupyter as well). The command line passes
its own callback (a bar on a terminal, plain lines in a log). Progress never changes a result.

>>> seen = []
>>> with progress_context(lambda d, t: seen.append((d, t)), "check", "layers") as hook:
...     hook(1, 2); hook(2, 2)
>>> seen
[(1, 2), (2, 2)]
>>> with progress_context(None, "check", "layers") as hook:
...     hook is None
True
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Callable, Iterator
from typing import Any

from exactnorm.errors import InputError

__all__ = ["Progress", "ProgressHook", "progress_bar", "progress_context"]

ProgressHook = Callable[[int, int], None]
#: what a verb's ``progress`` parameter accepts
Progress = ProgressHook | bool | None


@contextlib.contextmanager
def progress_bar(what: str, unit: str = "steps") -> Iterator[ProgressHook]:
    """A bar for a notebook or terminal, as a ``hook(done, total)``; closed on exit.

    ``tqdm.auto`` when installed (a widget in Jupyter), else ``rich.progress``.
    """
    if importlib.util.find_spec("tqdm") is not None:
        from tqdm.auto import tqdm  # type: ignore[import-untyped,unused-ignore]

        bar: Any = tqdm(desc=what, unit=f" {unit}", total=None)
        try:
            def hook(done: int, total: int) -> None:
                bar.total = total
                bar.update(done - bar.n)
            yield hook
        finally:
            bar.close()
        return
    from rich.progress import BarColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
    from rich.progress import Progress as RichProgress

    with RichProgress(TextColumn("{task.description}"), BarColumn(),
                      TextColumn("{task.completed}/{task.fields[shown]} " + unit),
                      TimeElapsedColumn(), TimeRemainingColumn()) as progress:
        task = progress.add_task(what, total=None, shown="?")  # never "None" for a total

        def rich_hook(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total, shown=str(total))
        yield rich_hook


@contextlib.contextmanager
def progress_context(progress: Progress, what: str,
                     unit: str) -> Iterator[ProgressHook | None]:
    """The hook a verb hands to its work: the caller's callable, a bar for ``True``, or
    ``None`` (no progress) for ``None``/``False``."""
    if progress is None or progress is False:
        yield None
    elif progress is True:
        with progress_bar(what, unit) as hook:
            yield hook
    elif callable(progress):
        yield progress
    else:
        raise InputError(f"progress must be a callable(done, total), True or None, got "
                         f"{type(progress).__name__}", parameter="progress")
