"""The documentation stays equal to the program: the CLI reference names every verb and every
option of the parser, the README stays short with the way to certify one's own model on its first
screen, the documentation index lists every page, and the links between pages resolve."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_cli_reference_names_every_verb_and_option():
    from exactnorm.cli import build_parser

    text = (ROOT / "docs" / "cli.md").read_text()
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    sections = dict(re.findall(r"^## exactnorm (\S+)\n(.*?)(?=^## |\Z)", text, re.M | re.S))
    assert set(sections) == set(sub.choices), "regenerate with python docs/gen_cli.py"
    for name, verb in sub.choices.items():
        for action in verb._actions:
            for option in action.option_strings:
                assert option in sections[name], f"{name} {option}: python docs/gen_cli.py"


def test_readme_is_short_and_starts_with_what_a_newcomer_needs():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.encode()) <= 10 * 1024
    assert readme.index("## Certify your own model") < 3000
    assert "<!-- ci:main -->" in readme and "<!-- ci:test -->" in readme


def test_documentation_index_lists_every_page():
    index = (ROOT / "docs" / "index.md").read_text()
    listed = set(re.findall(r"^([a-z0-9-]+)$", index, re.M))
    pages = {p.stem for p in (ROOT / "docs").glob("*.md")} - {"index"}
    assert pages == listed, pages ^ listed


def _heading_anchors(text: str) -> set[str]:
    """The anchors MyST gives headings of levels 1–3 (``myst_heading_anchors = 3`` in conf.py)."""
    anchors = set()
    in_code = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_code = not in_code
            continue
        m = None if in_code else re.match(r"^(#{1,3}) (.+)$", line)
        if m:
            title = m.group(2).replace("`", "").strip().lower()
            anchors.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return anchors


def test_links_between_pages_resolve():
    """Every relative link of a page names a page of docs/ (no ``docs/`` prefix, nothing outside
    the site) and, with ``#anchor``, one of that page's headings. conf.py suppresses MyST's
    missing-reference warning, so this test is what keeps the links valid."""
    pages = {p.name: p.read_text() for p in (ROOT / "docs").glob("*.md")}
    anchors = {name: _heading_anchors(text) for name, text in pages.items()}
    bad = []
    for name, text in pages.items():
        prose = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", prose):
            if re.match(r"[a-z]+:", target):
                continue
            page, _, anchor = target.partition("#")
            page = page or name
            if page not in pages:
                bad.append(f"{name}: {target} (no such page in docs/)")
            elif anchor and anchor not in anchors[page]:
                bad.append(f"{name}: {target} (no such heading)")
    assert not bad, bad


# ----------------------------------------------------------------------------- README claims


def _readme() -> str:
    return (ROOT / "README.md").read_text()


def _parser():
    import os

    os.environ.setdefault("COLUMNS", "100")
    from exactnorm.cli import build_parser

    return build_parser()


def test_every_readme_command_is_a_valid_command_line():
    import shlex

    parser = _parser()
    shown = re.findall(r"^(exactnorm [^#\n]*?)\s*(?:#.*)?$", _readme(), re.M)
    shown += re.findall(r"`(exactnorm [^`]+)`", _readme())
    assert len(shown) >= 8
    for line in shown:
        argv = [a for a in shlex.split(line)[1:] if a != "…"]
        if argv[0] not in ("certify", "check", "export", "report", "tables"):
            continue
        try:
            parser.parse_args(argv)
        except SystemExit as exc:  # pragma: no cover - the message is the failure
            raise AssertionError(f"README command does not parse: {line}") from exc


def test_readme_formats_equal_the_export_formats():
    from exactnorm.outputs.export import EXPORT_FORMATS

    claimed = re.search(r"\*\*Export\*\* \(`--format ([a-z|]+)`\)", _readme())
    assert claimed and tuple(claimed.group(1).split("|")) == EXPORT_FORMATS
    sub = next(a for a in _parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    choices = next(a.choices for a in sub.choices["export"]._actions if "--format" in
                   a.option_strings)
    assert tuple(choices) == EXPORT_FORMATS


def test_readme_onnx_operators_equal_what_the_readers_do():
    """The README's ONNX bullet against the readers' operator tables: every operator it says is
    read is read, every one it says is refused is refused, and every operator a reader handles
    is named (Identity and Constant aside)."""
    from exactnorm.model.interop import HANDLERS
    from exactnorm.model.onnx_common import HEAD_OPS, POST_OPS

    bullet = re.search(r"\* \*\*ONNX\*\*.*?(?=\n\* \*\*)", _readme(), re.S).group(0)
    _, refused_part = bullet.split("are refused")[0].rsplit(".", 1)
    # sklearn class names (`StandardScaler`) are not operators
    named = set(re.findall(r"`([A-Z][A-Za-z]+)`", bullet.split("are refused")[0])) - {
        "StandardScaler"}
    refused = set(re.findall(r"`([A-Z][A-Za-z]+)`", refused_part))
    supported = {op for _, op in HANDLERS} | set(HEAD_OPS) | {op for _, op in POST_OPS}
    assert refused and not refused & supported, refused & supported
    assert named - refused <= supported, (named - refused) - supported
    handled = ({op for _, op in HANDLERS} | set(HEAD_OPS)) - {"Identity", "Constant"}
    assert handled <= named, handled - named


def _dropin_rows() -> dict[str, dict[str, str]]:
    import csv

    lines = (ROOT / "benchmarks" / "results" / "dropin.csv").read_text().splitlines()
    rows = csv.DictReader([ln for ln in lines if not ln.startswith("#")])
    return {r["command"].replace(" --force", ""): r for r in rows}


def test_readme_numbers_are_the_measurements_of_the_commands_beside_them():
    """Each row of the README's table: its size, time, latency and accuracy are those that
    benchmarks/bench_dropin.py recorded for exactly the command shown; a size named for another
    --out (.json instead of .json.gz) is that command's measurement."""
    measured = _dropin_rows()
    rows = re.findall(r"^\| [^|]+ \| `(exactnorm [^`]+)` \| ([^|]+) \|$", _readme(), re.M)
    assert len(rows) >= 4
    for command, result in rows:
        row = measured[command]
        size = re.match(r"(?:(\d+) s, )?([\d.]+) MB", result)
        assert size and f"{int(row['bytes']) / 1e6:.1f}" == size.group(2), (command, result)
        if size.group(1):
            assert int(size.group(1)) == round(float(row["seconds"])), (command, result)
        other = re.search(r"\(([\d.]+) MB with `--out (\S+)`\)", result)
        if other:
            out = command.split("--out ")[1].split()[0]
            alt = measured[command.replace(f"--out {out}", f"--out {other.group(2)}")]
            assert f"{int(alt['bytes']) / 1e6:.1f}" == other.group(1), (command, result)
        if row["latency"]:
            assert f"{row['latency']} per sample (source: {row['source_size']}, " \
                   f"{row['source_latency']})" in result, (command, result)
            assert f"accuracy {row['accuracy']}" in result, (command, result)


def test_help_and_readme_describe_the_same_models():
    sub = next(a for a in _parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    certify_help = " ".join(sub.choices["certify"].format_help().split())
    assert "an ONNX model, MLP or CNN" in certify_help
    assert "ONNX MLP (" not in certify_help
    assert "an ONNX MLP or CNN" in _readme()
    assert "an ONNX source keeps its names" not in _readme()


def test_readme_says_nothing_twice():
    text = re.sub(r"```.*?```", "", _readme(), flags=re.S)
    sentences = [" ".join(s.split()).lower() for s in re.split(r"(?<=[.:;])\s+", text)]
    seen = [s for s in sentences if len(s) > 30]
    assert len(seen) == len(set(seen)), [s for s in seen if seen.count(s) > 1]
