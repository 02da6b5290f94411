"""The consoles every command prints through, set up once.

Messages carry user text (model specs, paths, kernel messages such as `worst element [0]`), so rich must not
read them as markup or emoji: `--model anthropic:x` once printed `anthropic❌` (`:x:` is an emoji code). The
consoles have emoji and highlighting off, and `error`/`warning`/`say` print their text as plain Text.
"""
from __future__ import annotations

from rich.console import Console
from rich.text import Text


def make_console(stderr: bool = False, **kwargs: object) -> Console:
    return Console(stderr=stderr, emoji=False, highlight=False, **kwargs)  # type: ignore[arg-type]


out = make_console()
err = make_console(stderr=True)


def error(text: str, label: str = "error") -> None:
    """One line on stderr: a red `label:` and the text, as written."""
    err.print(Text.assemble((f"{label}:", "red"), " ", text), soft_wrap=True)


def warning(text: str) -> None:
    err.print(Text.assemble(("warning:", "yellow"), " ", text), soft_wrap=True)


def say(text: str) -> None:
    """A plain line on stderr (what the harness is doing), never read as markup."""
    err.print(Text(text), soft_wrap=True)
