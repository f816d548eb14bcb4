"""The exit codes of the command line: one code per situation, and the one table that README,
docs/cli.md and docs/security.md print (``tests/commands/test_exit_codes.py`` compares the three
with :data:`EXIT_CODES`). Standard library only.

A limit is a limit of *reading* (exit 2: nothing was checked) or a limit of the *check* (exit 1:
the verdict ``INVALID``, rule ``number`` or ``limit``); which one a flag sets is fixed by where it
acts, and each message names the flag to raise.
"""

from __future__ import annotations

from exactnorm.checker.vocabulary import EXIT_BROKEN_PIPE

__all__ = ["EXIT_OK", "EXIT_NO", "EXIT_INPUT", "EXIT_INTERNAL", "EXIT_UNDECIDED", "EXIT_TIMEOUT",
           "EXIT_INTERRUPTED", "EXIT_BROKEN_PIPE", "EXIT_CODES", "exit_code_table"]

EXIT_OK = 0
#: the answer is no: INVALID, UNREACHABLE, not reachable, a difference
EXIT_NO = 1
EXIT_INPUT = 2
EXIT_INTERNAL = 3
#: ``capacity``: UNDECIDED (mirrored by ``exactnorm.api._capacity.EXIT_UNDECIDED``)
EXIT_UNDECIDED = 4
#: ``--timeout`` passed (the convention of GNU ``timeout``)
EXIT_TIMEOUT = 124
#: 128 + SIGINT
EXIT_INTERRUPTED = 130

#: (code, meaning) in the order the documents print them
EXIT_CODES: tuple[tuple[int, str], ...] = (
    (EXIT_OK, "success: a valid certificate (`certify`, `export`, `report` check first); "
              "`capacity`: REACHABLE or the profile; `realizable`: reachable; `--dry-run`"),
    (EXIT_NO, "no: an INVALID certificate, also one over a limit of the check (`--max-digits`, "
              "`--max-work`: rule `number` or `limit`); `capacity`: UNREACHABLE; "
              "`realizable`: not reachable; `tables --check`: a difference"),
    (EXIT_INPUT, "usage or input error, nothing checked: a missing, empty or corrupt file, a bad "
                 "option, an input over a limit of reading (`--max-bytes`, `--max-width`, "
                 "`--max-digits` of an input file), a wrong `--source`, a missing extra"),
    (EXIT_INTERNAL, "internal error: a bug (one line; rerun with `--debug` and report it)"),
    (EXIT_UNDECIDED, "`capacity`: UNDECIDED (the message names the class)"),
    (EXIT_TIMEOUT, "`--timeout` passed; the message says what was kept and how to resume"),
    (EXIT_INTERRUPTED, "interrupted (Ctrl-C, SIGINT, SIGTERM): workers ended, no partial "
                       "file; the message says what was kept"),
    (EXIT_BROKEN_PIPE, "standard output closed before the verdict was written"),
)


def exit_code_table() -> str:
    """The Markdown table of :data:`EXIT_CODES` (what the three documents print).

    >>> exit_code_table().splitlines()[:2]
    ['| code | meaning |', '|---|---|']
    """
    rows = ["| code | meaning |", "|---|---|"]
    rows += [f"| `{code}` | {meaning} |" for code, meaning in EXIT_CODES]
    return "\n".join(rows)
