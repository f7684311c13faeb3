"""The exit codes every command shares, declared once.

0: done, nothing wrong; 1: the command worked and found problems (invalid
FeedbackStores, a stale file, an unhealthy install); 2: it could not do its job
with the input it was given (unreadable files, bad flags, no cluster to talk
to), which is also what argparse exits with on a bad flag. A pipeline can tell
"fix your manifests" from "fix your invocation".
"""

from __future__ import annotations

from typing import Final

EXIT_OK: Final = 0
EXIT_PROBLEMS: Final = 1
EXIT_UNUSABLE: Final = 2
