"""Tracebacks in the candidate's own words: which line of its kernel failed, not only the line that launched it.

Triton's interpreter runs a @triton.jit function's body as Python and wraps what it raises
(`InterpreterError(repr(e)) from e`): the launch line is the last of the candidate's frames in the raised exception,
and the kernel's own line is in the exception it chains. `short_traceback` (the worker's) walks the chain and keeps
the candidate's frames inside its @triton.jit functions, marked `(@triton.jit)`; the parent reads them back with
`kernel_frames` and names the failing line, and says when a `libdevice` call is what made a value None
(`libdevice_note`: its functions are empty stubs in the interpreter). `compile_where` turns a CompilationError's
"at LINE:COL" (counted from the function's `def`) into the file's line.

Standard library only: the sandboxed worker imports it.
"""
from __future__ import annotations

import ast
import re
import traceback
from pathlib import Path

JIT_MARK = "(@triton.jit)"
"""After a frame's function name: the frame is inside a @triton.jit function (run by the interpreter)."""
_FRAME = re.compile(r"^\s+(?P<file>\S+\.py):(?P<line>\d+) in (?P<func>\w+) " + re.escape(JIT_MARK)
                    + r": (?P<code>.*)$", re.M)


def jit_functions(source: str) -> dict[str, tuple[int, int]]:
    """Each function decorated with a `jit` (triton.jit, jit, triton.jit(...), under autotune or heuristics too):
    name -> (line of its `def`, its last line). Empty where the source does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    out: dict[str, tuple[int, int]] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                "jit" in ast.unparse(d).split("(")[0].split(".")[-1] for d in node.decorator_list):
            out[node.name] = (node.lineno, node.end_lineno or node.lineno)
    return out


def _chain(exc: BaseException) -> list[BaseException]:
    """The exception, then what it was raised from (or during), outermost first."""
    seen: list[BaseException] = []
    while exc is not None and exc not in seen and len(seen) < 8:
        seen.append(exc)
        exc = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)  # type: ignore[assignment]
    return seen


def short_traceback(exc: BaseException, candidate: str) -> str:
    """The exception and the candidate's own frames: what a model can act on, without harness internals. Frames
    inside the candidate's @triton.jit functions (the interpreter runs them as Python; the exception it raises
    chains the one raised there) follow the launch line, marked JIT_MARK."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == candidate]
    where = "".join(f"  {Path(f.filename).name}:{f.lineno} in {f.name}: {f.line}\n" for f in frames[-4:])
    try:
        spans = jit_functions(Path(candidate).read_text())
    except (OSError, UnicodeDecodeError):
        spans = {}
    inside: list[traceback.FrameSummary] = []
    for link in _chain(exc):
        for f in traceback.extract_tb(link.__traceback__):
            span = spans.get(f.name)
            if f.filename == candidate and span and span[0] <= (f.lineno or 0) <= span[1] \
                    and all((f.lineno, f.name) != (g.lineno, g.name) for g in inside):
                inside.append(f)
    where += "".join(f"  {Path(f.filename).name}:{f.lineno} in {f.name} {JIT_MARK}: {f.line}\n" for f in inside[-4:])
    # The message's head, not the whole: a 1 MB message kept only its tail, and the exception's type was lost with
    # its first line (red team, 2026-12-05: `raise RuntimeError("\\x1b[2J" + "line\\n" * 200000)` read as "line").
    message = str(exc)
    if len(message) > 2000:
        message = f"{message[:2000]} ... ({len(message)} characters)"
    text = f"{type(exc).__name__}: {message}"
    return (where + text)[-4000:]


def kernel_frames(error: str) -> list[tuple[str, int, str, str]]:
    """(file name, line, function, code) of each marked frame of a short traceback, outermost first: the last is
    the kernel line that failed."""
    return [(m["file"], int(m["line"]), m["func"], m["code"].strip()) for m in _FRAME.finditer(error)]


def kernel_line(error: str) -> str:
    """`at kernel.py:23 in gemm_kernel (the @triton.jit function): tl.store(...)`, or "" when the traceback names
    no line inside a @triton.jit function."""
    frames = kernel_frames(error)
    if not frames:
        return ""
    name, line, func, code = frames[-1]
    return f"at {name}:{line} in {func} (the @triton.jit function): {code}"


_NONE = re.compile(r"cannot convert None|'NoneType' object|NoneType")
_EXTERN = "extern_elementwise not supported in interpreter mode"


def _libdevice_calls(source: str) -> list[tuple[int, str, list[str], str]]:
    """(line, function, names assigned from it, the statement) of each `libdevice.NAME(...)` call in the source."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    lines = source.splitlines()
    calls = []
    for node in ast.walk(tree):
        targets: list[str] = []
        value = None
        if isinstance(node, ast.Assign):
            targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
            value = node.value
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and isinstance(node.target, ast.Name):
            targets, value = [node.target.id], node.value
        elif isinstance(node, ast.Expr):
            value = node.value
        if value is None:
            continue
        for call in ast.walk(value):
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) \
                    and isinstance(call.func.value, (ast.Name, ast.Attribute)) \
                    and ast.unparse(call.func.value).split(".")[-1] == "libdevice":
                text = lines[node.lineno - 1].strip() if node.lineno <= len(lines) else ""
                calls.append((node.lineno, call.func.attr, targets, text))
    return sorted(calls)


def libdevice_note(error: str, source: str, file_name: str = "kernel.py") -> str:
    """Why an interpreted kernel that calls libdevice failed, when that is why: the functions of
    triton.language.extra.libdevice are empty stubs in Triton's interpreter (they return None, and the next op that
    uses the value raises "cannot convert None ... to tensor"); those of extra.cuda.libdevice are calls into CUDA's
    libdevice, which it cannot make (it raises "Did you forget to add @triton.jit ?"). "" otherwise."""
    calls = _libdevice_calls(source)
    if not calls:
        return ""
    none = bool(_NONE.search(error))
    frames = kernel_frames(error)
    failing = frames[-1] if frames else None
    on_line = next((c for c in calls if failing is not None and c[0] == failing[1]), None)
    fed = None
    if failing is not None and none:
        words = set(re.findall(r"\w+", failing[3]))
        fed = next((c for c in reversed(calls) if c[0] < failing[1] and words & set(c[2])), None)
    if on_line is None and fed is None and not (none or _EXTERN in error or "_semantic" in error):
        return ""
    line, func, targets, text = on_line or fed or calls[0]
    if none and (fed is not None or on_line is not None) and targets:
        said = (f"`libdevice.{func}` is an empty stub in Triton's interpreter: it returns None, so `{text}` "
                f"({file_name}:{line}) made {', '.join(targets)} None")
    else:
        said = (f"{'' if on_line or fed else 'likely: '}`libdevice.{func}` does not run in Triton's interpreter "
                f"({file_name}:{line}: `{text}`): triton.language.extra.libdevice's functions are empty stubs there (they return None) and "
                "extra.cuda.libdevice's are calls into CUDA's libdevice, which only a compiled kernel makes")
    return (f"{said}. This run executes kernels in the interpreter: compute it with tl functions (tl.exp, tl.log, "
            "tl.sqrt, tl.math.*) or from them")


def compile_where(error: str, source: str) -> tuple[str, int, int, int] | None:
    """A Triton CompilationError's place in the file: (function, file line, column, line within the function). Its
    "at LINE:COL:" counts from the function's `def`; the function is the @triton.jit one whose line there is the
    line the error quotes above its caret (Triton quotes a long function from a few lines above the error only).
    None when the error or the source does not say."""
    m = re.search(r"at (\d+):(\d+):[ \t]*\n", error)
    if not m:
        return None
    rel, col = int(m.group(1)), int(m.group(2))
    quoted = error[m.end():].splitlines()
    caret = next((i for i, q in enumerate(quoted) if q.strip() == "^"), None)
    if not caret:
        return None
    said = quoted[caret - 1].strip()
    lines = source.splitlines()
    found = [(func, first + rel - 1) for func, (first, last) in jit_functions(source).items()
             if first + rel - 1 <= min(last, len(lines)) and lines[first + rel - 2].strip() == said]
    if len(found) != 1:
        launched = re.findall(r"^\s+\S+\.py:\d+ in \w+: (\w+)\[", error, flags=re.M)
        found = [f for f in found if launched and f[0] == launched[-1]]
    if len(found) != 1:
        return None
    func, line = found[0]
    return func, line, col, rel
