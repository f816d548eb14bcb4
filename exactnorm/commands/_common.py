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
console = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)


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
