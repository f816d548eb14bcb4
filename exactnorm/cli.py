"""Command line ``exactnorm``: argument parsing, progress, exit codes. No mathematics here.

Exit codes (:data:`~exactnorm.commands._exits.EXIT_CODES`, the one table README, docs/cli.md
and docs/security.md print): 0 success / valid certificate; 1 the answer is no (an invalid
certificate, UNREACHABLE, not reachable, a difference); 2 usage or input error (including a
missing optional package, named with its extra); 3 internal error (a bug: one line, rerun with
``--debug`` for the traceback); 4 ``capacity``: UNDECIDED; 124 ``--timeout`` passed; 130
interrupted (Ctrl-C, SIGINT or SIGTERM: every worker ended, one line); 141 standard output closed
before the verdict was written (neither 0 nor 1: nobody read it). Errors are one line on stderr;
``--debug`` (before or after the subcommand) shows the traceback before it and keeps the exit
code. With ``--json`` every outcome, errors included, is one JSON object on stdout
(:mod:`exactnorm.commands._json`).

Each subcommand lives in ``exactnorm.commands.<name>`` and provides ``register(subparsers)``,
which adds its parser and sets ``func`` (``args → exit code``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import re
import sys
import traceback
import warnings
from collections.abc import Iterator, Sequence

from exactnorm.commands._exits import (
    EXIT_BROKEN_PIPE,  # 128 + SIGPIPE
    EXIT_CODES,
    EXIT_INTERRUPTED,
    EXIT_TIMEOUT,
)
from exactnorm.commands._json import emit_failure, json_requested
from exactnorm.errors import ExactnormError
from exactnorm.exact.interrupts import DeadlineReached, Interrupted, handling_interrupts
from exactnorm.version import __version__

__all__ = ["main", "build_parser", "COMMAND_MODULES", "EXIT_BROKEN_PIPE", "EXIT_CODES",
           "render_error"]


COMMAND_MODULES = (
    "exactnorm.commands.certify",
    "exactnorm.commands.check",
    "exactnorm.commands.tables",
    "exactnorm.commands.sparse_sweep",
    "exactnorm.commands.detpoly",
    "exactnorm.commands.realizable",
    "exactnorm.commands.capacity",
    "exactnorm.commands.export",
    "exactnorm.commands.report",
)


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one line with exit code 2."""

    #: the last usage error (for ``--json``, which reports it as an object too)
    last_error: str | None = None

    def error(self, message: str) -> None:  # type: ignore[override]
        _Parser.last_error = f"{self.prog}: error: {message}"
        sys.stderr.write(_Parser.last_error + "\n")
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="exactnorm",
                     description="Exact certificates for normalization-only reconstruction.")
    parser.add_argument("--version", action="version", version=f"exactnorm {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="show tracebacks on errors (also accepted after the subcommand)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def _join_negative_values(argv: list[str]) -> list[str]:
    """``--box -1:1`` → ``--box=-1:1``: argparse would take ``-1:1`` for an option."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i] in ("--box", "--mean", "--scale") and i + 1 < len(argv) \
                and argv[i + 1].startswith("-"):
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return out


def _split_debug(argv: list[str]) -> tuple[list[str], bool]:
    """Remove ``--debug`` wherever it stands (before ``--``), so that the hint "rerun with
    --debug" works when the flag is appended after the subcommand's arguments."""
    end = argv.index("--") if "--" in argv else len(argv)
    kept = [a for a in argv[:end] if a != "--debug"] + argv[end:]
    return kept, len(kept) != len(argv)


def _note(message: Warning | str, category: type[Warning], filename: str, lineno: int,
          file: object = None, line: str | None = None) -> None:
    print(f"note: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    from exactnorm.commands._common import interrupt_note, set_interrupt_note

    argv, debug = _split_debug(_join_negative_values(list(sys.argv[1:] if argv is None
                                                          else argv)))
    set_interrupt_note(None)  # a note is about this command only, not an earlier call's
    _Parser.last_error = None
    warnings.showwarning = _note  # a library's UserWarning is a note to the user, not code
    args: argparse.Namespace | None = None

    def fail(verdict: str, code: int, line: str) -> int:
        """One line on stderr; with ``--json`` also the object of the failure on stdout."""
        sys.stderr.write(line + "\n")
        emit_failure(args, argv, verdict, code, line.removeprefix("exactnorm: "))
        return code

    try:
        with handling_interrupts():  # Ctrl-C while parsing or importing: one line, exit 130
            args = build_parser().parse_args(argv)
        args.debug = debug
        with handling_interrupts(getattr(args, "timeout", None)), \
                json_mode(json_requested(args)):
            code = int(args.func(args))
        sys.stdout.flush()  # a closed pipe shows here, inside the handler below
        return code
    except SystemExit as exc:
        code = int(exc.code) if isinstance(exc.code, int) else 2
        if code and _Parser.last_error is not None:  # a usage error, already on stderr
            emit_failure(args, argv, "ERROR", code, _Parser.last_error)
        return code
    except BrokenPipeError:
        # the reader of our stdout went away; Python would complain again when flushing at exit
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except DeadlineReached as exc:
        note = interrupt_note()
        if "--timeout" not in note:
            note += "; run the same command again with a larger --timeout"
        return fail("TIMEOUT", EXIT_TIMEOUT, f"exactnorm: stopped after --timeout "
                                             f"{exc.seconds:g} s; {note}")
    except KeyboardInterrupt as exc:
        which = f" ({exc.signal_name})" if isinstance(exc, Interrupted) \
            and exc.signal_name != "SIGINT" else ""
        return fail("INTERRUPTED", EXIT_INTERRUPTED,
                    f"exactnorm: interrupted{which}; {interrupt_note()}")
    except ExactnormError as exc:
        _traceback(debug)
        return fail("ERROR", exc.exit_code, f"exactnorm: error: {render_error(exc)}")
    except RecursionError:
        _traceback(debug)
        return fail("ERROR", 2, "exactnorm: error: input too deeply nested (RecursionError)")
    except MemoryError:
        _traceback(debug)
        return fail("ERROR", 2, "exactnorm: error: out of memory (MemoryError): the input is "
                                "too large for this machine")
    except OSError as exc:  # unreadable input, unwritable --out, disk full: the user's to fix
        _traceback(debug)
        where = f": {exc.filename}" if exc.filename else ""
        return fail("ERROR", 2, f"exactnorm: error: {exc.strerror or _first_line(exc)}{where}")
    except Exception as exc:  # a bug: still one line, the traceback behind --debug
        _traceback(debug)
        return fail("ERROR", 3, f"exactnorm: internal error: {type(exc).__name__}: "
                                f"{_first_line(exc)} (rerun with --debug and report it)")


@contextlib.contextmanager
def json_mode(on: bool) -> Iterator[None]:
    """With ``--json``: the human text of standard output is not printed (the verb prints its
    one object itself); standard error (progress, notes) is unchanged."""
    if not on:
        yield
        return
    from exactnorm.commands._common import console

    before = console.quiet
    console.quiet = True
    try:
        yield
    finally:
        console.quiet = before


def _traceback(debug: bool) -> None:
    """With ``--debug``, the traceback of the exception being handled, before its one-line
    message: the exit code stays the documented one (2 for bad input, with or without
    ``--debug``)."""
    if debug:
        traceback.print_exc(file=sys.stderr)


def render_error(exc: ExactnormError) -> str:
    """The one-line message of a library error in the vocabulary of the command line.

    The library names its parameters (``retry must be non-negative``); when the error carries
    ``parameter``, its whole-word occurrences become the flag (``--retry must be non-negative``).

    >>> from exactnorm.errors import InputError
    >>> render_error(InputError("max_digits must be positive", parameter="max_digits"))
    '--max-digits must be positive'
    >>> render_error(InputError("block applies to construction tradeoff only",
    ...                         parameter=("block", "construction")))
    '--block applies to --construction tradeoff only'
    """
    text = _first_line(exc, limit=None)
    names = getattr(exc, "parameter", None)
    for name in (names,) if isinstance(names, str) else (names or ()):
        flag = "--" + name.replace("_", "-")  # every flag is its parameter's name, dashed
        # not inside a path, a longer identifier or an existing flag
        text = re.sub(rf"(?<![\w/.-]){re.escape(name)}(?![\w/-])", flag, text)
    return text


#: terminal control sequences (colours of a foreign library's message): never printed
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-_]")


def _first_line(exc: BaseException, limit: int | None = 300) -> str:
    r"""The first line of an exception's message without terminal escapes, cut to ``limit``
    characters at a word (errors are one line; a foreign exception may carry a whole file's
    worth of text).

    >>> _first_line(ValueError("\x1b[1mWeights only load failed.\x1b[0m\nmore"))
    'Weights only load failed.'
    """
    text = _ANSI.sub("", str(exc)).strip()
    line = text.splitlines()[0].strip() if text else type(exc).__name__
    if limit is None or len(line) <= limit:
        return line
    return line[:limit].rsplit(" ", 1)[0] + " …"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
