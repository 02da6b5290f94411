"""Load YAML into a pydantic model, with errors that name the file, the line and the key."""
from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from rungs.core.errors import BadInput

M = TypeVar("M", bound=BaseModel)


def _line_of(node: yaml.Node | None, loc: tuple[Any, ...]) -> int | None:
    """Walk the composed YAML tree along a pydantic error location; the deepest node found gives the line."""
    line = node.start_mark.line + 1 if node is not None else None
    for key in loc:
        if isinstance(node, yaml.MappingNode):
            match = next((v for k, v in node.value if k.value == str(key)), None)
            if match is None:  # an unknown or missing key: point at the key itself if present
                key_node = next((k for k, _ in node.value if k.value == str(key)), None)
                return key_node.start_mark.line + 1 if key_node is not None else line
            node = match
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
        else:
            break
        line = node.start_mark.line + 1
    return line


def shown(path: Path) -> str:
    """A path as a person would type it: relative to the working folder when it is inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def where(path: Path, loc: tuple[Any, ...]) -> str:
    """`file:line: key 'a.b.0'` for a key path in a YAML file (the line of the deepest key found)."""
    try:  # a task made from a Python file (a KernelBench problem, perhaps in latin-1) has no YAML lines
        line = _line_of(yaml.compose(path.read_text()), loc) if path.suffix in (".yaml", ".yml") else None
    except (OSError, ValueError, yaml.YAMLError):  # ValueError: a file that is not UTF-8
        line = None
    key = ".".join(str(p) for p in loc)
    return f"{shown(path)}{f':{line}' if line else ''}: key '{key}'"


def _runaway_quote(text: str) -> tuple[int, int, str] | None:
    """(first line, last line, quote) of a quoted value spanning lines, the usual sign of a missing closing quote:
    PyYAML then fails lines later, where the swallowed text stops making sense (or at the end of the file)."""
    try:
        for token in yaml.scan(text):
            if isinstance(token, yaml.ScalarToken) and token.style in ('"', "'") \
                    and token.end_mark.line > token.start_mark.line:
                return token.start_mark.line + 1, token.end_mark.line + 1, token.style
    except yaml.MarkedYAMLError as exc:
        if exc.context and "quoted scalar" in exc.context and exc.context_mark and exc.problem_mark:
            quote = text[exc.context_mark.index] if exc.context_mark.index < len(text) else '"'
            return exc.context_mark.line + 1, exc.problem_mark.line + 1, quote
    return None


def _yaml_problem(path: Path, exc: yaml.YAMLError, text: str) -> str:
    """PyYAML marks where it gave up (for an unclosed quote: lines later, or the end of the file) and, as its
    context, where the construct began: point at the beginning, and say where it gave up."""
    runaway = _runaway_quote(text)
    if runaway:
        first, last, quote = runaway
        return (f"{shown(path)}:{first}: not valid YAML: the quoted value that starts on this line runs on to line "
                f"{last} (a closing {quote} is missing?)")
    problem = getattr(exc, "problem", None) or str(exc)
    mark, context_mark = getattr(exc, "problem_mark", None), getattr(exc, "context_mark", None)
    if context_mark is not None and mark is not None and context_mark.line != mark.line:
        context = (getattr(exc, "context", "") or "").removeprefix("while scanning ").removeprefix("while parsing ")
        return (f"{shown(path)}:{context_mark.line + 1}: not valid YAML: {context} that starts here: {problem} "
                f"(line {mark.line + 1})")
    return f"{shown(path)}{f':{mark.line + 1}' if mark else ''}: not valid YAML: {problem}"


def load_yaml_model(path: Path, model: type[M], context: dict[str, Any] | None = None) -> M:
    """Parse `path` and validate it as `model`; any problem is a one-line BadInput."""
    if not path.is_file():
        raise BadInput(f"{shown(path)}: no such file")
    text = path.read_text()
    try:
        node = yaml.compose(text)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise BadInput(_yaml_problem(path, exc, text)) from None
    if not isinstance(data, dict):
        raise BadInput(f"{shown(path)}:1: expected a mapping of keys at the top level")
    try:
        return model.model_validate(data, context=context)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        key = ".".join(str(p) for p in loc) or "(top level)"
        line = _line_of(node, loc)
        msg = "unknown key" if err["type"] == "extra_forbidden" else err["msg"].removeprefix("Value error, ")
        more = f" (and {len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
        raise BadInput(f"{shown(path)}:{line}: key '{key}': {msg}{more}") from None
