"""Write docs/cli.md, the command-line reference, from the parser itself, and
docs/cli-output.schema.json, the JSON Schema of ``--json``, from
:data:`exactnorm.commands._json.SCHEMA` (so neither can drift: tests/project/test_docs.py and
tests/commands/test_json_output.py compare them with the program).

Usage: ``python docs/gen_cli.py [OUT]`` (default docs/cli.md; the schema is written beside it).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

SCHEMA_FILE = "cli-output.schema.json"


def _json_section() -> list[str]:
    from exactnorm.commands._json import DETAILS, ENVELOPE, OUTPUT_FORMAT, VERDICTS

    parts = ["## JSON output", "",
             "With `--json` every verb prints exactly one JSON object (one line) on standard "
             "output and nothing else there: its verdict, a plan, an error (usage, input or "
             "internal), an interrupt or a deadline alike. Progress and notes stay on standard "
             "error; the human text is not printed. The object's JSON Schema (draft 2020-12) is "
             f"`docs/{SCHEMA_FILE}`; `format` is `\"{OUTPUT_FORMAT}\"` and keys are "
             "only ever added while `version` is 1.", "",
             "| key | meaning |", "|---|---|"]
    parts += [f"| `{key}` | {meaning} |" for key, (_, meaning) in ENVELOPE.items()]
    parts += ["", "| verdict | meaning |", "|---|---|"]
    parts += [f"| `{word}` | {meaning} |" for word, meaning in VERDICTS.items()]
    parts += ["", "`details` of each verb (every key present, `null` when it does not apply; "
                  "`ERROR`, `INTERRUPTED` and `TIMEOUT` have empty `details`):", ""]
    for verb, keys in DETAILS.items():
        parts.append(f"* `{verb}`: " + "; ".join(f"`{k}` {meaning}"
                                                  for k, (_, meaning) in keys.items()))
    parts.append("")
    return parts


def cli_reference() -> str:
    os.environ["COLUMNS"] = "100"  # argparse wraps help at the terminal width
    from exactnorm.cli import build_parser
    from exactnorm.commands._exits import exit_code_table

    parser = build_parser()
    parts = ["# Command-line reference", "",
             "Generated from the parser by `python docs/gen_cli.py`.", "",
             "```text", parser.format_help().rstrip(), "```", "",
             "## Exit codes", "",
             "One code per situation; the same table is in the README and in "
             "[security.md](security.md). Errors are one line on standard error; `--debug` "
             "(before or after the verb) shows the traceback before it and keeps the code.", "",
             exit_code_table(), "",
             "## Dry runs, deadlines and interrupts", "",
             "`certify --dry-run` prints the plan — the construction of each run of layers, the "
             "frozen widths and depth, the estimated time, peak memory and certificate size — "
             "and `capacity --dry-run` the size of each pair's Khatri–Rao matrix with its "
             "estimate; neither builds anything, and both exit 0. `--timeout S` stops the work "
             "after `S` seconds (exit code 124). Ctrl-C, or `SIGINT` or `SIGTERM` sent to the "
             "main process alone, ends every worker process at once (exit code 130). Either way "
             "the one line says what was kept and how to resume, no process prints a traceback "
             "and no partial file is left: outputs are written to a temporary file and renamed, "
             "and a document (`certify`, `capacity`, `export --format json`) gets its name only "
             "after the bytes written were read back and checked.", "",
             *_json_section()]
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name in sorted(sub.choices):
        parts += [f"## exactnorm {name}", "", "```text",
                  sub.choices[name].format_help().rstrip(), "```", ""]
    return "\n".join(parts)


def schema_text() -> str:
    from exactnorm.commands._json import SCHEMA

    return json.dumps(SCHEMA, indent=1, ensure_ascii=False) + "\n"


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("cli.md")
    out.write_text(cli_reference(), encoding="utf-8")
    out.with_name(SCHEMA_FILE).write_text(schema_text(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
