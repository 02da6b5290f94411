"""Errors that end a command with a one-line message and a documented exit code.

Exit codes (README "Exit codes"): 0 pass / finished, 1 a kernel failed the ladder,
2 bad task, file or option, 3 the run stopped on a model or internal error (resumable), 4 the kernel compiled but
could not be verified here (no GPU and no interpreter for its DSL), 130 interrupted.
"""
from __future__ import annotations

EXIT_PASS = 0
EXIT_FAIL = 1
EXIT_BAD_INPUT = 2
EXIT_RUN_ERROR = 3
EXIT_UNVERIFIED = 4
EXIT_INTERRUPTED = 130


class HarnessError(Exception):
    """An error with a message fit for one line on stderr."""

    exit_code = EXIT_RUN_ERROR


class BadInput(HarnessError):
    """A bad task file, kernel file, option or run folder: the user's to fix."""

    exit_code = EXIT_BAD_INPUT
