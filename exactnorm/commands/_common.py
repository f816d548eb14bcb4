"""Options and output helpers shared by several subcommands."""

from __future__ import annotations

import argparse
import contextlib
import decimal
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from exactnorm.commands._defaults import DEFAULT_MAX_DIGITS, DEFAULT_MAX_WIDTH
from exactnorm.errors import InputError

__all__ = ["add_target_options", "console", "err_console", "target_arguments",
           "verdict_line", "claim_of", "add_timeout_option", "approximate_fractions",
           "output_path", "STDOUT", "human_duration",
           "set_interrupt_note", "interrupt_note",
           "PlainProgress", "PLAIN_PROGRESS_SECONDS", "progress_hook", "progress_enabled",
           "eta_text",
           "write_checked_certificate", "write_checked_document"]

#: seconds between two plain progress lines when stderr is not a terminal
PLAIN_PROGRESS_SECONDS = 5.0

#: ``--out -``: write to standard output.
STDOUT = "-"

# Scripts and CI read our tables from pipes; do not squeeze them to 80 columns there.
# Text we print comes from certificates, paths and targets: rich markup ("[/x]", "[red]") and
# emoji codes (":x:") in it must be printed as written, never interpreted, so both are off here,
# for every command at once.


class _Console(Console):
    """rich's Console that reports a closed stdout as BrokenPipeError (rich itself exits 1,
    which would read as "invalid certificate"); the CLI turns it into exit code 141."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


# COLUMNS wins (rich reads it when width is None); without it and without a terminal, 160
console = _Console(highlight=False, soft_wrap=True, markup=False, emoji=False,
                  width=None if sys.stdout.isatty() or os.environ.get("COLUMNS", "").isdigit()
                  else 160)
err_console = _Console(stderr=True, highlight=False, soft_wrap=True, markup=False, emoji=False)


def add_target_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("target_file", metavar="TARGET", nargs="?", default=None,
                   help="target network: .json (or .json.gz) with domain/target, .npz with "
                        "W1,b1,..., a PyTorch nn.Sequential state dict (.npz or .pt, with "
                        "--activations), or an ONNX model, MLP or CNN (.onnx, with a box); "
                        "without it (or with --demo) the embedded demo target")
    p.add_argument("--target", metavar="FILE", default=None,
                   help="the same as TARGET (kept for scripts)")
    p.add_argument("--demo", action="store_true",
                   help="certify the embedded demo target (3 → 4 → 3 → 2)")
    p.add_argument("--box", metavar="LO:HI",
                   help="input cube for a file without its own box (refused when it has one); "
                        "exact numbers such as 0:1, -1/2:1/2 or 0:1e-3")
    p.add_argument("--box-file", metavar="FILE",
                   help="per-feature input box: .json {lower, upper}, .npz with arrays lower "
                        "and upper, or .npy of shape (2, d)")
    p.add_argument("--box-from-data", metavar="DATA.npy",
                   help="per-feature input box: minimum and maximum of each feature of an .npy "
                        "sample array of shape (n, d) or images (n, c, h, w), as --data takes")
    p.add_argument("--activations", metavar="A1,A2,...",
                   help="state dicts only: activation after each Linear layer, relu or identity, "
                        "e.g. relu,relu,identity (a state dict does not record them)")
    p.add_argument("--max-width", type=int, default=DEFAULT_MAX_WIDTH,
                   help=f"refuse wider layers (default {DEFAULT_MAX_WIDTH})")
    p.add_argument("--max-digits", type=int, default=DEFAULT_MAX_DIGITS,
                   help=f"refuse longer numbers in inputs (default {DEFAULT_MAX_DIGITS})")


def target_arguments(args: argparse.Namespace) -> tuple[str | None, dict[str, Any]]:
    """The target file (``None``: the demo) and the box options of :func:`add_target_options`,
    as keyword arguments of :func:`exactnorm.api.load_target`."""
    if args.target_file is not None and args.target is not None \
            and args.target_file != args.target:
        raise InputError(f"two targets given: {args.target_file} and --target {args.target}")
    path = args.target_file if args.target_file is not None else args.target
    args.target = path  # one name for the target from here on, however it was given
    box = {k: v for k, v in (("box", args.box), ("box_file", args.box_file),
                             ("box_from_data", args.box_from_data)) if v is not None}
    if path is None and (box or args.activations):
        raise InputError("--box, --box-file, --box-from-data and --activations describe a "
                         "target file; none was given")
    if path is not None and args.demo:
        raise InputError(f"--demo certifies the embedded demo target; a target file was given "
                         f"too ({path})")
    return path, box


def eta_text(done: int, total: int | None, elapsed_then: float, elapsed_now: float) -> str:
    """The time left: linear in the work done at the last update (``elapsed_then`` seconds for
    ``done`` of ``total``), counting down since then (so it moves while one long step runs), and
    "overdue" once that estimate has passed.

    >>> eta_text(1, 4, 10, 10), eta_text(1, 4, 10, 25), eta_text(1, 4, 10, 50)
    ('30 s', '15 s', 'overdue (longer than estimated)')
    >>> eta_text(0, 4, 3, 6), eta_text(1, None, 3, 6)
    ('unknown', 'unknown')
    """
    if not done or not total:
        return "unknown"
    left = elapsed_then * (total - done) / done - (elapsed_now - elapsed_then)
    if total - done > 0 and left <= 0:
        return "overdue (longer than estimated)"
    return f"{max(left, 0.0):.0f} s"


class PlainProgress:
    """``done/total`` lines with elapsed time and ETA, at most one per ``every`` seconds.

    Nothing is printed before ``every`` seconds have passed, so short runs stay quiet (their
    output is the summary); once a line was printed, the final ``total/total`` line is printed
    too. ETA is linear in the work done so far, and counts down between updates.

    >>> import io
    >>> out = io.StringIO()
    >>> p = PlainProgress("tradeoff", out, every=5, clock=iter([0, 10, 12, 20]).__next__)
    >>> p(1, 4); p(2, 4); p(4, 4)
    >>> print(out.getvalue(), end="")
    tradeoff: 1/4 blocks, 10 s elapsed, ETA 30 s
    tradeoff: 4/4 blocks, 20 s elapsed, ETA 0 s
    """

    def __init__(self, what: str, stream: TextIO | None = None, every: float | None = None,
                 clock: Callable[[], float] = time.monotonic, unit: str = "blocks",
                 total: int | None = None) -> None:
        self.what, self.clock, self.unit = what, clock, unit
        self.every = PLAIN_PROGRESS_SECONDS if every is None else every
        self.stream = stream if stream is not None else sys.stderr
        self.start = clock()
        self.last = self.start
        self.updated = 0.0  # elapsed seconds at the last change of the state
        self.printed = False
        self.state: tuple[int, int | None] = (0, total)
        self._lock = threading.Lock()

    def __call__(self, done: int, total: int) -> None:
        with self._lock:
            now = self.clock()
            if (done, total) != self.state:
                self.updated = now - self.start
            self.state = (done, total)
            final = done >= total and self.printed
            if now - self.last < self.every and not final:
                return
            self.last, self.printed = now, True
            elapsed = now - self.start
            print(f"{self.what}: {done}/{total} {self.unit}, {elapsed:.0f} s elapsed, ETA "
                  f"{eta_text(done, total, elapsed, elapsed)}", file=self.stream, flush=True)

    def tick(self) -> None:
        """A line with the last known state when ``every`` seconds passed without one: a long
        step (one Theorem 1 layer can take minutes) still shows, in a log, that work goes on,
        with the ETA counting down.

        >>> import io
        >>> out = io.StringIO()
        >>> p = PlainProgress("theorem1", out, every=5, clock=iter([0, 3, 6, 8, 14]).__next__,
        ...                   unit="target layers", total=2)
        >>> p.tick(); p.tick(); p(1, 2); p.tick()
        >>> print(out.getvalue(), end="")
        theorem1: 0/2 target layers, 6 s elapsed, working, ETA unknown
        theorem1: 1/2 target layers, 14 s elapsed, working, ETA 2 s
        """
        with self._lock:
            now = self.clock()
            if now - self.last < self.every:
                return
            self.last, self.printed = now, True
            done, total = self.state
            elapsed = now - self.start
            print(f"{self.what}: {done}/{'?' if total is None else total} {self.unit}, "
                  f"{elapsed:.0f} s elapsed, working, ETA "
                  f"{eta_text(done, total, self.updated, elapsed)}",
                  file=self.stream, flush=True)


class _CountColumn(ProgressColumn):
    """``done/total unit``, with ``?`` while the total is not known (never ``None``)."""

    def __init__(self, unit: str) -> None:
        super().__init__()
        self.unit = unit

    def render(self, task: Task) -> Text:
        total = "?" if task.total is None else f"{task.total:.0f}"
        return Text(f"{task.completed:.0f}/{total} {self.unit}")


class _EtaColumn(ProgressColumn):
    """The ETA of :func:`eta_text`: it counts down between updates instead of standing still."""

    def render(self, task: Task) -> Text:
        now = task.elapsed or 0.0
        total = None if task.total is None else int(task.total)
        then = float(task.fields.get("updated", now))
        return Text(f"ETA {eta_text(int(task.completed), total, then, now)}")


@contextlib.contextmanager
def progress_hook(what: str, unit: str,
                  total: int | None = None) -> Iterator[Callable[[int, int], None]]:
    """A ``hook(done, total)`` for long work: a rich bar on a terminal (stderr), otherwise
    :class:`PlainProgress` lines; ``total``, when known before the work, shows from the start."""
    with Progress(TextColumn("[progress.description]{task.description}"), BarColumn(),
                  _CountColumn(unit), TimeElapsedColumn(), _EtaColumn(), console=err_console,
                  transient=True, disable=not progress_enabled()) as progress:
        task = progress.add_task(what, total=total, updated=0.0)
        plain = None if progress_enabled() else PlainProgress(what, unit=unit, total=total)
        state: list[Any] = [0, total]

        def hook(done: int, total: int) -> None:
            if [done, total] != state:
                state[:] = [done, total]
                elapsed = progress.tasks[0].elapsed if progress.tasks else None
                progress.update(task, completed=done, total=total, updated=elapsed or 0.0)
            if plain is not None:
                plain(done, total)

        if plain is None:
            yield hook
            return
        # off a terminal nothing redraws an elapsed time: a heartbeat prints the last state
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(plain.every):
                plain.tick()

        ticker = threading.Thread(target=beat, name="exactnorm-progress", daemon=True)
        ticker.start()
        try:
            yield hook
        finally:
            stop.set()
            ticker.join()


#: a fraction long enough to be hard to read: it gets a decimal approximation next to it
_LONG_FRACTION = re.compile(r"(?<![\w/.])(-?)(\d+)/(\d+)(?![\w/.])")
LONG_FRACTION_CHARS = 12


def approximate_fractions(text: str) -> str:
    """Put ``(≈ 0.333333)`` after every fraction longer than :data:`LONG_FRACTION_CHARS`.

    The exact value stays (it is what was proven); the approximation (6 significant digits,
    computed exactly with integer arithmetic before rounding) is for reading.

    >>> approximate_fractions("on [-1/3,12345678901/1000000000] x [0,1]")
    'on [-1/3,12345678901/1000000000 (≈ 12.3457)] x [0,1]'
    """
    def repl(m: re.Match[str]) -> str:
        whole = m.group(0)
        if len(whole) <= LONG_FRACTION_CHARS or int(m.group(3)) == 0:
            return whole
        with decimal.localcontext() as ctx:
            ctx.prec = 6
            value = decimal.Decimal(int(m.group(2))) / decimal.Decimal(int(m.group(3)))
        return f"{whole} (≈ {m.group(1)}{value:g})"

    return _LONG_FRACTION.sub(repl, text)


def claim_of(verdict: Any) -> str | None:
    """What a valid document proves: ``REACHABLE`` for a certificate (the target is realized),
    ``UNREACHABLE`` for an impossibility document (its ``claim``); ``None`` when invalid."""
    if verdict is None or not verdict.ok:
        return None
    return str((verdict.facts or {}).get("claim", "REACHABLE"))


def verdict_line(verdict: Any, path: str, mode: str) -> str:
    """``VALID (…)`` for a valid certificate, ``UNREACHABLE VALID (…)`` for a valid
    impossibility document (its ``claim``), ``INVALID (…)`` for anything refused.

    ``REACHABLE`` is the word of the ``capacity`` verb about a target, not of a certificate: a
    certificate of a construction is ``VALID``. The message is printed whole (a terminal wraps
    it between words; it is never cut).
    """
    claim = claim_of(verdict)
    status = "INVALID" if claim is None else "VALID" if claim == "REACHABLE" \
        else f"{claim} VALID"
    return f"{status} ({mode} checker) {path}: {approximate_fractions(verdict.message)}"


def add_timeout_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--timeout", type=_seconds, default=None, metavar="S",
                   help="stop after S seconds: exit code 124, one line saying what was kept "
                        "and how to resume (default: no limit)")


def _seconds(text: str) -> float:
    """``--timeout``: a positive number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 0 < value < 10**9:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text}")
    return value


def progress_enabled() -> bool:
    return sys.stderr.isatty()


def output_path(value: str, *, directory: bool = False, stdout_ok: bool = False) -> Path | None:
    """Validate an ``--out`` value: ``None`` means standard output (``-``).

    A file's (or output folder's) parent must exist: a mistyped path is an error, not a new
    folder tree. ``-`` is accepted only where one stream of output makes sense.
    """
    if value == STDOUT:
        if not stdout_ok:
            raise InputError("--out - (standard output) is not supported here: this command "
                             "writes " + ("several files" if directory else "a file"))
        return None
    path = Path(value)
    parent = path.parent
    if not parent.is_dir():
        raise InputError(f"--out {value}: folder {parent} does not exist (create it first)")
    if directory and path.exists() and not path.is_dir():
        raise InputError(f"--out {value} is a file, not a folder")
    if not directory and path.is_dir():
        raise InputError(f"--out {value} is a folder, not a file")
    return path


_interrupt_note: list[str] = []


def set_interrupt_note(text: str | None) -> None:
    """What a Ctrl-C keeps and how to continue, printed by the CLI's interrupt handler;
    ``None`` restores the default (the CLI does so at the start of every command)."""
    _interrupt_note[:] = [] if text is None else [text]


def interrupt_note() -> str:
    """The note of :func:`set_interrupt_note`, or the default: outputs are written atomically."""
    return _interrupt_note[0] if _interrupt_note else (
        "files are written atomically, so no partial output file was kept")


def _checking_note(mode: str) -> Any:
    def checking(path: Path) -> None:
        set_interrupt_note(f"the complete certificate {path} was kept, unchecked (written "
                           f"before the check); check it with `exactnorm check {path}`")
        if not progress_enabled():
            print(f"checking the written bytes of {path} ({mode} checker)", file=sys.stderr,
                  flush=True)
    return checking


def write_checked_certificate(c: Any, out: str, *, version: int, frozen_weights: str,
                              check: bool, pure: bool) -> Any:
    """The write and check steps of ``certify``: the certificate is written beside ``out``, the
    written file is checked, and it gets its name only when valid
    (:func:`exactnorm.api._written.write_checked`). An interrupt during the check keeps the
    complete certificate under its name, unchecked, and the one line says so."""
    from exactnorm.api._written import write_certificate_checked

    with progress_hook("check", "frozen layers") as hook:
        written = write_certificate_checked(c, out, version=version,
                                            frozen_weights=frozen_weights, check=check,
                                            pure=pure, progress=hook,
                                            keep_when_interrupted=True,
                                            on_checking=_checking_note("pure" if pure
                                                                       else "flint"))
    set_interrupt_note(None)
    return written


def write_checked_document(doc: dict[str, Any], out: str, *, check: bool, pure: bool) -> Any:
    """:func:`write_checked_certificate` for a document already built (a transformer's)."""
    from exactnorm.api._written import save_document_checked

    with progress_hook("check", "frozen layers") as hook:
        written = save_document_checked(doc, out, check=check, pure=pure, progress=hook,
                                        keep_when_interrupted=True,
                                        on_checking=_checking_note("pure" if pure else "flint"))
    set_interrupt_note(None)
    return written


def human_duration(s: float) -> str:
    """A duration for a line of text, worded as the plan words its estimates
    (:func:`exactnorm.constructions.costs.human_seconds`; imported on use: ``--help`` loads no
    exact arithmetic)."""
    from exactnorm.constructions.costs import human_seconds

    return human_seconds(s)
