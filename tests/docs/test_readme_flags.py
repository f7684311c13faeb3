"""The docs' flag tables against the CLI's own parsers: every flag and every default.

Each default is declared once, in the settings a flag fills (`ServerConfig`,
`WriterSettings`, the doctor's `Target`); the docs restate them for readers. These
tests read the tables of `serve` (docs/webhook.md) and `status-writer`
(docs/status-writer.md) and the doctor's `Flags:` line (docs/troubleshooting.md) and
compare them with the argparse actions `webhook.cli.main.build_parser` builds, so a
default changed in code without the docs (or the other way round) fails here.

How a default in the docs is read:
- one backticked value (`8443`, `certs/dev`): argparse's own conversion of it (the
  flag's `type`) must equal the flag's default;
- a size such as `7 MiB`: that many bytes;
- anything else ("off", "all interfaces", "`$POD_NAMESPACE`, else ..."): words for a
  flag with no value by default (None, or False for a switch), resolved by the program.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tests.docs.pages import page
from webhook.cli.doctor import target_from
from webhook.cli.main import build_parser

# The pages that document the subcommands' flags, and the heading of each one's section.
PAGES = ("webhook.md", "status-writer.md", "troubleshooting.md")
SECTIONS = {"Admission webhook": "serve", "Status writer": "status-writer", "Doctor": "doctor"}
TABLE_COMMANDS = ("serve", "status-writer")
UNITS = {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30}
_FLAG = re.compile(r"`(-{1,2}[a-z][a-z0-9-]*)")
_SIZE = re.compile(r"(\d+(?:\.\d+)?) ([KMG]iB)")
_LITERAL = re.compile(r"`([^`]*)`")


@dataclass(frozen=True)
class Stated:
    """One flag as the docs state it: its default cell (None: no default stated)."""

    flag: str
    default: str | None
    where: str


def subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("the CLI has no subcommands")


def options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """Every option string of a subcommand (`-o` and `--output` alike), `--help` left out."""
    return {
        name: action
        for action in parser._actions
        if not isinstance(action, argparse._HelpAction)
        for name in action.option_strings
    }


def _cells(row: str) -> list[str]:
    """A Markdown table row's cells; a `|` inside backticks is text, not a border."""
    cells, cell, in_code = [], "", False
    for char in row.strip().strip("|"):
        if char == "`":
            in_code = not in_code
        if char == "|" and not in_code:
            cells.append(cell.strip())
            cell = ""
        else:
            cell += char
    return [*cells, cell.strip()]


def _sections(text: str) -> Iterator[tuple[str | None, int, list[str]]]:
    """(subcommand the enclosing headings name, first line number, lines) per block."""
    headings: dict[int, str] = {}
    block: list[str] = []
    start, fenced = 0, False
    for number, line in enumerate([*text.splitlines(), ""], start=1):
        if line.startswith("```"):
            fenced = not fenced
        heading = None if fenced else re.match(r"(#{1,6}) (.*)", line)
        if heading or not line.strip():
            if block:
                names = [headings[level] for level in sorted(headings)]
                command = next((SECTIONS[n] for n in reversed(names) if n in SECTIONS), None)
                yield command, start, block
            block = []
            if heading:
                level = len(heading.group(1))
                headings = {k: v for k, v in headings.items() if k < level}
                headings[level] = heading.group(2).strip()
            continue
        if not block:
            start = number
        block.append(line)


def _split_defaults(flag_cell: str, default_cell: str, count: int) -> list[str]:
    """The default cell of a row naming `count` flags: one default each, or one for all."""
    if count == 1:
        return [default_cell]
    separator = " / " if "` / `" in flag_cell else ", "
    parts = [part.strip() for part in default_cell.split(separator)]
    if len(parts) == count:
        return parts
    return [default_cell] * count


def docs() -> dict[str, str]:
    """Each page that documents flags, by its path in the repository."""
    return {f"docs/{name}": page(name).read_text(encoding="utf-8") for name in PAGES}


def stated_flags(pages: Mapping[str, str]) -> dict[str, list[Stated]]:
    """Per subcommand, each flag its table or `Flags:` line names, on any of the pages."""
    found: dict[str, list[Stated]] = {}
    for name, text in pages.items():
        for command, stated in _stated_on(name, text):
            found.setdefault(command, []).extend(stated)
    return found


def _stated_on(name: str, text: str) -> Iterator[tuple[str, list[Stated]]]:
    for command, start, block in _sections(text):
        header = _cells(block[0]) if block[0].startswith("|") else []
        if header[:2] == ["flag", "default"]:
            assert command in TABLE_COMMANDS, (
                f"{name}:{start}: a flag table under no subcommand's section {SECTIONS}"
            )
            rows: list[Stated] = []
            for offset, row in enumerate(block[2:], start=start + 2):
                flag_cell, default_cell, *_ = _cells(row)
                names = _FLAG.findall(flag_cell)
                assert names, f"{name}:{offset}: no `--flag` in {flag_cell!r}"
                defaults = _split_defaults(flag_cell, default_cell, len(names))
                rows.extend(
                    Stated(flag, default, f"{name}:{offset}")
                    for flag, default in zip(names, defaults, strict=True)
                )
            yield command, rows
        elif command == "doctor" and block[0].startswith("Flags:"):
            yield command, list(_doctor_flags(" ".join(block), f"{name}:{start}"))


def _doctor_flags(paragraph: str, where: str) -> Iterator[Stated]:
    """The doctor's `Flags: `--a`, `--b` (default `x`), ...` line."""
    for match in re.finditer(r"`(-{1,2}[a-z][a-z0-9-]*)[^`]*`( \(default[^)]*\))?", paragraph):
        default = match.group(2)
        if default is not None:
            default = re.sub(r"^ \(default:? ", "", default).split(":")[0].rstrip(")").strip()
        yield Stated(match.group(1), default, where)


def _effective_defaults(command: str, parser: argparse.ArgumentParser) -> dict[str, Any]:
    """Each dest's default; the doctor's unset names resolve to its `Target`'s fields."""
    args = parser.parse_args([])
    if command == "doctor":
        target = target_from(args)
        return {
            dest: getattr(target, dest, None) if value is None else value
            for dest, value in vars(args).items()
        }
    return vars(args)


def _problem(action: argparse.Action, default: Any, stated: str) -> str | None:
    """Why `stated` is not the docs' form of `default`, or None when it is."""
    literal = _LITERAL.fullmatch(stated)
    size = _SIZE.fullmatch(stated)
    if literal:
        convert = action.type if callable(action.type) else str
        try:
            value = convert(literal.group(1))
        except (ValueError, TypeError, argparse.ArgumentTypeError) as error:
            return f"`{literal.group(1)}` is not a value of this flag ({error})"
        if value != default:
            return f"the docs say `{literal.group(1)}`, the code's default is {default!r}"
        return None
    if size:
        value = float(size.group(1)) * UNITS[size.group(2)]
        if value != default:
            return f"the docs say {stated} ({value:g} bytes), the code's default is {default!r}"
        return None
    if default not in (None, False):
        return f"the docs say {stated!r} (no value), the code's default is {default!r}"
    return None


def mismatches(pages: Mapping[str, str]) -> list[str]:
    """Everything the docs state about the CLI's flags that the code contradicts."""
    problems: list[str] = []
    stated = stated_flags(pages)
    parsers = subparsers()
    for command in (*TABLE_COMMANDS, "doctor"):
        parser = parsers[command]
        by_name = options(parser)
        defaults = _effective_defaults(command, parser)
        rows = stated.get(command, [])
        if not rows:
            problems.append(f"the docs have no flags of {command}")
            continue
        seen = [row.flag for row in rows]
        documented = {by_name[name].dest for name in seen if name in by_name}
        for action in {a.dest: a for a in by_name.values()}.values():
            if action.dest not in documented:
                problems.append(f"{command} {action.option_strings[-1]}: not in the docs")
        for row in rows:
            where = f"{row.where}: {command} {row.flag}"
            if row.flag not in by_name:
                problems.append(f"{where}: no such flag")
            elif seen.count(row.flag) > 1:
                problems.append(f"{where}: stated {seen.count(row.flag)} times")
            elif row.default is not None:
                action = by_name[row.flag]
                problem = _problem(action, defaults[action.dest], row.default)
                if problem:
                    problems.append(f"{where}: {problem}")
    return sorted(set(problems))


def test_the_docs_state_every_flag_and_default_as_the_code_does() -> None:
    assert mismatches(docs()) == []


def test_every_documented_subcommand_is_read() -> None:
    stated = stated_flags(docs())
    assert set(stated) == {*TABLE_COMMANDS, "doctor"}
    flags = {row.flag for row in stated["serve"]}
    assert {"--port", "--tls-cert-file", "--tls-private-key-file", "--dev-certs-dir"} <= flags


def _replaced(pages: dict[str, str], old: str, new: str) -> dict[str, str]:
    """The pages with `old`, which one of them holds exactly once, made `new`."""
    (name,) = [name for name, text in pages.items() if old in text]
    assert pages[name].count(old) == 1, old
    return {**pages, name: pages[name].replace(old, new)}


def test_a_changed_default_is_caught() -> None:
    pages = docs()
    changed = {
        "| `--host ADDR`, `--port N` | all interfaces, `8443` |": (
            "| `--host ADDR`, `--port N` | all interfaces, `8444` |"
        ),
        "| `--max-body-bytes N` | 4 MiB |": "| `--max-body-bytes N` | 8 MiB |",
        "| `--burst N` | `100` |": "| `--burst N` | 100 |",
        "`--namespace` (default `feedbackstore-system`)": "`--namespace` (default `kube-system`)",
    }
    for old, new in changed.items():
        assert mismatches(_replaced(pages, old, new)), f"{new!r} went unnoticed"


def test_a_missing_or_unknown_flag_is_caught() -> None:
    pages = docs()
    row = "| `--workers N` | `4` | concurrent status writes |\n"
    assert mismatches(_replaced(pages, row, "")) == ["status-writer --workers: not in the docs"]
    unknown = _replaced(pages, row, row + "| `--threads N` | `4` | made up |\n")
    assert any("--threads: no such flag" in problem for problem in mismatches(unknown))
