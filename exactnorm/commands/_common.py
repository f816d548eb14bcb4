"""Options and output helpers shared by several subcommands."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rich.console import Console

from exactnorm.exact.rationals import DEFAULT_MAX_DIGITS
from exactnorm.model.network import DEFAULT_MAX_WIDTH

__all__ = ["add_target_options", "load_target_from_args", "console", "err_console",
           "verdict_line"]

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


console = _Console(highlight=False, soft_wrap=True, markup=False, emoji=False,
                  width=None if sys.stdout.isatty() else 160)
err_console = _Console(stderr=True, highlight=False, soft_wrap=True, markup=False, emoji=False)


def add_target_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target", metavar="FILE",
                   help="target network: .json with domain/target, .npz with W1,b1,..., or a "
                        "PyTorch nn.Sequential state dict saved as .npz (with --box); "
                        "default: the embedded demo target")
    p.add_argument("--box", metavar="LO:HI", help="input cube when the file has no domain")
    p.add_argument("--max-width", type=int, default=DEFAULT_MAX_WIDTH,
                   help=f"refuse wider layers (default {DEFAULT_MAX_WIDTH})")
    p.add_argument("--max-digits", type=int, default=DEFAULT_MAX_DIGITS,
                   help=f"refuse longer numbers in inputs (default {DEFAULT_MAX_DIGITS})")


def load_target_from_args(args: argparse.Namespace) -> Any:
    from exactnorm.model.interop import load_target_any
    from exactnorm.model.targets import demo_target, parse_box

    box = parse_box(args.box) if args.box else None
    if args.target is None:
        return demo_target()
    return load_target_any(args.target, box=box, max_width=args.max_width,
                           max_digits=args.max_digits)


def verdict_line(verdict: Any, path: str, mode: str) -> str:
    status = "VALID" if verdict.ok else "INVALID"
    return f"{status} ({mode} checker) {path}: {verdict.message}"


def progress_enabled() -> bool:
    return sys.stderr.isatty()
