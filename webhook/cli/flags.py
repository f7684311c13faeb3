"""Flags of the long-running commands: `setting` declares a flag filling a settings dataclass
field with that field's default, so a default is written once (in the dataclass) and `--help`
shows it; `settings_from` fills the dataclass from the parsed flags."""

from __future__ import annotations

import argparse
import dataclasses
import math
from collections.abc import Callable
from typing import Any, Final, TypeVar

LOG_LEVELS: Final = ("debug", "info", "warning", "error")
T = TypeVar("T")


def default_of(settings: type[Any], name: str) -> Any:
    default = {field.name: field.default for field in dataclasses.fields(settings)}[name]
    if default is dataclasses.MISSING:
        raise LookupError(f"{settings.__name__}.{name} has no plain default")
    return default


def setting(
    parser: Any, settings: type[Any], flag: str, help_text: str, field: str = "", **options: Any
) -> None:
    """`flag` filling `settings.field` (by default the flag's own name), with its default, which
    `--help` shows unless `help_text` already says the default or there is none."""
    dest = field or flag.removeprefix("--").replace("-", "_")
    default = default_of(settings, dest)
    if default is not None and "(default" not in help_text:
        help_text += " (default: %(default)s)"
    parser.add_argument(flag, dest=dest, default=default, help=help_text, **options)


def settings_from(settings: Callable[..., T], args: argparse.Namespace, **given: Any) -> T:
    """`settings` from the parsed flags named for its fields (unset: the default), then `given`."""
    names = {field.name for field in dataclasses.fields(settings)}  # type: ignore[arg-type]
    found = {k: v for k, v in vars(args).items() if k in names and v is not None}
    return settings(**{**found, **given})


def add_log_level(parser: Any, settings: type[Any], help_text: str) -> None:
    setting(parser, settings, "--log-level", help_text, choices=LOG_LEVELS)


def _checked(convert: Callable[[str], T], ok: Callable[[T], bool], want: str) -> Callable[[str], T]:
    def parse(text: str) -> T:
        value = convert(text)
        if not ok(value):
            raise argparse.ArgumentTypeError(f"must be {want}, got {value!r}")
        return value

    return parse


port = _checked(int, lambda v: 0 <= v <= 65535, "a port number (0-65535)")
positive_int = _checked(int, lambda v: v >= 1, "at least 1")
positive_float = _checked(float, lambda v: v > 0 and math.isfinite(v), "a finite number above 0")
non_negative_float = _checked(float, lambda v: v >= 0 and math.isfinite(v), "a finite number >= 0")
