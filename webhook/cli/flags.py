"""What the long-running commands' flags share: defaults read from settings, value types.

A flag that fills a settings field takes its default from that field, so a default
is declared once (in the settings dataclass) and `--help` shows the same value the
program uses.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from typing import Any, Final

LOG_LEVELS: Final = ("debug", "info", "warning", "error")


def default_of(settings: type[Any], name: str) -> Any:
    """The default of the field `name` of the dataclass `settings`."""
    for field in dataclasses.fields(settings):
        if field.name == name:
            if field.default is dataclasses.MISSING:
                raise LookupError(f"{settings.__name__}.{name} has no plain default")
            return field.default
    raise LookupError(f"{settings.__name__} has no field {name!r}")


def add_log_level(parser: Any, settings: type[Any], help_text: str) -> None:
    parser.add_argument(
        "--log-level",
        default=default_of(settings, "log_level"),
        choices=LOG_LEVELS,
        help=f"{help_text} (default: %(default)s)",
    )


def port(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port number (0-65535), got {value}")
    return value


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def positive_float(text: str) -> float:
    value = float(text)
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a finite number above 0, got {text!r}")
    return value


def non_negative_float(text: str) -> float:
    value = float(text)
    if not (value >= 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
    return value
