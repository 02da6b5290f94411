"""Prompt templates (jinja2, StrictUndefined: a missing variable is an error, not an empty string)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2

_env = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).parent), undefined=jinja2.StrictUndefined,
                          trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)


def render(name: str, **values: Any) -> str:
    return _env.get_template(name).render(**values)
