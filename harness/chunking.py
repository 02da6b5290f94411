"""Cut source and documentation files into the pieces a person reads: Python by function and class (a big
class by method), C/C++/CUDA headers by declaration block with the comment above it, Markdown and RST by
heading, anything else by windows of lines. Each chunk keeps its file and line range so it can be cited and
read again around it.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

MAX_LINES = 150
"""A longer chunk is cut into windows of WINDOW lines (a search hit should fit on a screen or two)."""
WINDOW = 100

PY_SUFFIXES = {".py", ".pyi"}
C_SUFFIXES = {".h", ".hpp", ".hxx", ".hh", ".cuh", ".cu", ".cpp", ".cc", ".cxx", ".c", ".inl", ".ipp"}
MD_SUFFIXES = {".md", ".markdown"}
RST_SUFFIXES = {".rst"}
TEXT_SUFFIXES = {".txt", ".ptx", ".mlir", ".td", ".cmake", ".toml", ".yaml", ".yml"}
SUFFIXES = PY_SUFFIXES | C_SUFFIXES | MD_SUFFIXES | RST_SUFFIXES | TEXT_SUFFIXES


@dataclass
class Chunk:
    path: str
    """Relative to the context directory."""
    start: int
    """First line, 1-based."""
    end: int
    """Last line, inclusive."""
    title: str
    text: str


def chunk_file(file: Path, rel: str) -> list[Chunk]:
    text = file.read_text(errors="replace")
    lines = text.splitlines()
    if not lines:
        return []
    suffix = file.suffix.lower()
    if suffix in PY_SUFFIXES:
        spans = python_spans(text, lines)
    elif suffix in C_SUFFIXES:
        spans = c_spans(lines)
    elif suffix in MD_SUFFIXES:
        spans = markdown_spans(lines)
    elif suffix in RST_SUFFIXES:
        spans = rst_spans(lines)
    else:
        spans = []
    if not spans:
        spans = [(1, len(lines), file.name)]
    chunks = []
    for start, end, title in spans:
        for s, e, part in _windows(start, end):
            body = "\n".join(lines[s - 1:e])
            if body.strip() and not _is_noise(body, suffix):
                chunks.append(Chunk(rel, s, e, (title + part)[:200], body))
    return chunks


def _windows(start: int, end: int) -> list[tuple[int, int, str]]:
    if end - start + 1 <= MAX_LINES:
        return [(start, end, "")]
    out, s, k = [], start, 1
    while s <= end:
        e = min(s + WINDOW - 1, end)
        out.append((s, e, f" (part {k})"))
        s, k = e + 1, k + 1
    return out


def _is_noise(body: str, suffix: str) -> bool:
    """A licence banner or a block of includes: nothing a kernel writer searches for (C/C++ sources only)."""
    if suffix not in C_SUFFIXES:
        return False
    code = [ln for ln in body.splitlines() if ln.strip(" \t{};") and not ln.lstrip().startswith(("#", "//", "/*", "*"))
            and not _NAMESPACE.match(ln)]
    if not code:
        return "SPDX-License-Identifier" in body or "Copyright" in body or len(body) < 200
    return False


# ---- Python ---------------------------------------------------------------------------------------------------
def python_spans(text: str, lines: list[str]) -> list[tuple[int, int, str]]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    spans: list[tuple[int, int, str]] = []
    _python_body(tree.body, lines, spans, prefix="")
    return spans


def _start_of(node: ast.stmt, lines: list[str]) -> int:
    """The first line of a statement with its decorators and the comment lines right above it."""
    start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    while start > 1 and lines[start - 2].lstrip().startswith("#"):
        start -= 1
    return start


def _python_body(body: list[ast.stmt], lines: list[str], spans: list[tuple[int, int, str]], prefix: str) -> None:
    group: list[int] = []  # first and last line of consecutive plain statements

    def flush() -> None:
        if group:
            first = lines[group[0] - 1].strip()
            spans.append((group[0], group[1], f"{prefix}{first}" if prefix else first))
            group.clear()

    for node in body:
        start, end = _start_of(node, lines), node.end_lineno or node.lineno
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            flush()
            signature = lines[node.lineno - 1].strip()
            if isinstance(node, ast.ClassDef) and end - start + 1 > MAX_LINES:
                inner = [n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
                head_end = _start_of(inner[0], lines) - 1 if inner else end
                spans.append((start, max(head_end, node.lineno), signature))
                rest = [n for n in node.body if (n.end_lineno or n.lineno) > head_end]
                _python_body(rest, lines, spans, prefix=f"class {node.name}: ")
            else:
                spans.append((start, end, f"{prefix}{signature}"))
        else:
            if group and start - group[1] > 2:  # a gap of blank lines ends a group
                flush()
            group[:] = [group[0] if group else start, end]
            if group[1] - group[0] + 1 >= MAX_LINES:
                flush()
    flush()


# ---- C, C++, CUDA -----------------------------------------------------------------------------------------------
_NAMESPACE = re.compile(r'^\s*((inline\s+)?namespace\b|extern\s+"C(\+\+)?"\s*(\{|$))')


def c_spans(lines: list[str]) -> list[tuple[int, int, str]]:
    """Declaration blocks: a block opens at a comment that follows code at file (or namespace) scope and runs
    to the next such comment, so each documented declaration travels with its documentation. Namespace and
    extern "C" braces do not count as nesting; preprocessor lines never start or end a block."""
    spans: list[tuple[int, int, str]] = []
    start, has_code, depth = 1, False, 0
    braces: list[bool] = []  # per open brace: does it nest (False for namespace / extern "C")
    in_comment = in_macro = pending_namespace = False
    last_kind = "comment"  # of the last non-blank line: comment, or other (preprocessor, namespace, code)
    for i, line in enumerate(lines, 1):
        stripped = line.strip()
        was_comment = in_comment
        starts_comment = not in_comment and stripped.startswith(("//", "/*"))
        if depth == 0 and starts_comment and not in_macro and (has_code or (last_kind == "other" and i > start)):
            spans.append((start, i - 1, ""))
            start, has_code = i, False
        if stripped:
            last_kind = "comment" if was_comment or starts_comment else "other"
        if in_macro or (not in_comment and stripped.startswith("#")):
            in_macro = stripped.endswith("\\")
            continue
        opens_namespace = depth == 0 and _NAMESPACE.match(line) is not None
        pending_namespace = pending_namespace or opens_namespace
        code, in_comment = _scan_c_line(line, in_comment)
        for ch in code:
            if ch == "{":
                braces.append(not pending_namespace)
                depth += 1 if not pending_namespace else 0
                pending_namespace = False
            elif ch == "}" and braces:
                depth -= 1 if braces.pop() else 0
        if code.strip(" \t{};") and not opens_namespace:
            has_code = True
        # an undocumented run of declarations still gets cut, at a blank line between two of them
        if depth == 0 and not stripped and has_code and i - start >= 60:
            spans.append((start, i, ""))
            start, has_code = i + 1, False
    if start <= len(lines):
        spans.append((start, len(lines), ""))
    return [(s, e, _c_title(lines[s - 1:e])) for s, e, _ in spans if e >= s]


def _scan_c_line(line: str, in_comment: bool) -> tuple[str, bool]:
    """The code characters of a line (comments, strings and char literals blanked) and the comment state after."""
    out, i, n = [], 0, len(line)
    while i < n:
        if in_comment:
            j = line.find("*/", i)
            if j < 0:
                return "".join(out), True
            i, in_comment = j + 2, False
        elif line.startswith("//", i):
            break
        elif line.startswith("/*", i):
            i, in_comment = i + 2, True
        elif line[i] in "\"'":
            quote, i = line[i], i + 1
            while i < n and line[i] != quote:
                i += 2 if line[i] == "\\" else 1
            i += 1
            out.append(" ")
        else:
            out.append(line[i])
            i += 1
    return "".join(out), in_comment


def _c_title(block: list[str]) -> str:
    """The first line of the comment right above the block's first declaration, else that declaration."""
    comment: list[str] = []
    previous_was_comment = in_comment = False
    for ln in block:
        s = ln.strip()
        is_comment = in_comment or s.startswith(("//", "/*"))
        if s.startswith("/*") or in_comment:
            in_comment = "*/" not in s
        if is_comment:
            if not previous_was_comment:
                comment = []
            words = s.lstrip("/*! ").rstrip("*/ ").strip()
            if len(words) > 3 and not words.startswith(("SPDX", "Copyright", "===", "---", "***", "-*-")):
                comment.append(words)
        elif s and not s.startswith(("#", "template", "}")) and not _NAMESPACE.match(s):
            return comment[0] if comment else s
        previous_was_comment = is_comment
    return comment[0] if comment else next((ln.strip() for ln in block if ln.strip()), "")


# ---- Markdown and RST ---------------------------------------------------------------------------------------------
_MD_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def markdown_spans(lines: list[str]) -> list[tuple[int, int, str]]:
    heads: list[tuple[int, str]] = []
    path: list[str] = []
    fenced = False
    for i, line in enumerate(lines, 1):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        m = None if fenced else _MD_HEADING.match(line)
        if m:
            level = len(m.group(1))
            path[:] = path[:level - 1] + [m.group(2)]
            heads.append((i, " > ".join(path)))
    return _spans_from_heads(heads, len(lines))


_RST_UNDERLINE = re.compile(r"^([=\-~^\"'`+*#:.])\1{2,}\s*$")


def rst_spans(lines: list[str]) -> list[tuple[int, int, str]]:
    heads: list[tuple[int, str]] = []
    for i in range(len(lines) - 1):
        title, under = lines[i].strip(), lines[i + 1]
        if title and not _RST_UNDERLINE.match(lines[i]) and _RST_UNDERLINE.match(under) \
                and len(under.rstrip()) >= len(title):
            overline = i > 0 and _RST_UNDERLINE.match(lines[i - 1]) is not None
            heads.append((i if overline else i + 1, title))
    return _spans_from_heads(heads, len(lines))


def _spans_from_heads(heads: list[tuple[int, str]], n: int) -> list[tuple[int, int, str]]:
    if not heads:
        return []
    spans = [(1, heads[0][0] - 1, "(preamble)")] if heads[0][0] > 1 else []
    for k, (line, title) in enumerate(heads):
        end = heads[k + 1][0] - 1 if k + 1 < len(heads) else n
        spans.append((line, end, title))
    return spans
