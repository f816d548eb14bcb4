"""Write docs/cli.md, the command-line reference, from the parser itself (so it cannot drift:
tests/project/test_docs.py regenerates it and compares).

Usage: ``python docs/gen_cli.py [OUT]`` (default docs/cli.md).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def cli_reference() -> str:
    os.environ["COLUMNS"] = "100"  # argparse wraps help at the terminal width
    from exactnorm.cli import build_parser

    parser = build_parser()
    parts = ["# Command-line reference", "",
             "Generated from the parser by `python docs/gen_cli.py`; exit codes are in the README.",
             "", "```text", parser.format_help().rstrip(), "```", ""]
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name in sorted(sub.choices):
        parts += [f"## exactnorm {name}", "", "```text",
                  sub.choices[name].format_help().rstrip(), "```", ""]
    return "\n".join(parts)


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("cli.md")
    out.write_text(cli_reference(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
