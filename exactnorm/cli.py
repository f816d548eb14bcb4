"""Command line ``exactnorm``: argument parsing, progress, exit codes. No mathematics here.

Exit codes (README "Exit codes"): 0 success / valid certificate; 1 invalid certificate, a failed
comparison (``tables --check``) or, for ``realizable`` and ``capacity``, a target that is not
reachable; 4 ``capacity``: UNDECIDED (no verdict in the classes it decides); 2 usage or
input error (including a missing optional package, named with its extra); 3 internal error (a bug:
one line, rerun with ``--debug`` for the traceback); 130 interrupted (Ctrl-C); 141 standard output
closed before the verdict was written (neither 0 nor 1: nobody read it). Errors are one line
on stderr; ``--debug`` (before or after the subcommand) shows the traceback before it and keeps
the exit code.

Each subcommand lives in ``exactnorm.commands.<name>`` and provides ``register(subparsers)``,
which adds its parser and sets ``func`` (``args → exit code``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
import traceback
import warnings
from collections.abc import Sequence

from exactnorm.checker.vocabulary import EXIT_BROKEN_PIPE  # 128 + SIGPIPE
from exactnorm.errors import ExactnormError
from exactnorm.version import __version__

__all__ = ["main", "build_parser", "COMMAND_MODULES", "EXIT_BROKEN_PIPE", "render_error"]


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

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"{self.prog}: error: {message}\n")
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
    warnings.showwarning = _note  # a library's UserWarning is a note to the user, not code
    try:
        args = build_parser().parse_args(argv)
        args.debug = debug
        code = int(args.func(args))
        sys.stdout.flush()  # a closed pipe shows here, inside the handler below
        return code
    except SystemExit as exc:
        return int(exc.code) if isinstance(exc.code, int) else 2
    except BrokenPipeError:
        # the reader of our stdout went away; Python would complain again when flushing at exit
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        sys.stderr.write(f"exactnorm: interrupted; {interrupt_note()}\n")
        return 130
    except ExactnormError as exc:
        _traceback(debug)
        sys.stderr.write(f"exactnorm: error: {render_error(exc)}\n")
        return exc.exit_code
    except RecursionError:
        _traceback(debug)
        sys.stderr.write("exactnorm: error: input too deeply nested (RecursionError)\n")
        return 2
    except MemoryError:
        _traceback(debug)
        sys.stderr.write("exactnorm: error: out of memory (MemoryError): the input is too large "
                         "for this machine\n")
        return 2
    except OSError as exc:  # unreadable input, unwritable --out, disk full: the user's to fix
        _traceback(debug)
        where = f": {exc.filename}" if exc.filename else ""
        sys.stderr.write(f"exactnorm: error: {exc.strerror or _first_line(exc)}{where}\n")
        return 2
    except Exception as exc:  # a bug: still one line, the traceback behind --debug
        _traceback(debug)
        sys.stderr.write(f"exactnorm: internal error: {type(exc).__name__}: {_first_line(exc)} "
                         f"(rerun with --debug and report it)\n")
        return 3


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
