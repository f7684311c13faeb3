"""Command-line adapters around the pure core, and the exit codes every command shares:
0 nothing wrong; 1 found problems (invalid stores, a stale file, an unhealthy install);
2 could not work with its input (unreadable files, bad flags, no cluster), as argparse does."""

from typing import Final

EXIT_OK: Final = 0
EXIT_PROBLEMS: Final = 1
EXIT_UNUSABLE: Final = 2
