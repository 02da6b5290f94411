"""Tools the model can call. `submit_kernel` ends the iteration (the loop handles it); the others answer
from the run folder, the dumps and the task's context directories (harness/context.py). Each tool is a
JSON-schema spec and a handler returning text."""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from harness.models.base import ToolCall, ToolSpec
from harness.store import iter_dumps

if TYPE_CHECKING:
    from harness.store import RunStore
    from rungs.core.spec import TaskSpec


@dataclass(frozen=True)
class ToolContext:
    """What a tool may read of the run: the task, the run folder, the dumps, and a way to say something to the
    person watching (a context being indexed). The agent hands a fresh one to each call, so a fork's tools read
    the new run folder."""

    task: "TaskSpec"
    store: "RunStore"
    dumps_root: Path
    note: Callable[[str], None] = lambda text: None

    def dumps(self, n: int) -> Path:
        return iter_dumps(self.dumps_root, self.store.id, n)


Handler = Callable[[ToolContext, dict[str, Any]], str]

SUBMIT = ToolSpec(name="submit_kernel", description="Submit a complete kernel file; it runs through the ladder and "
                  "the results come back in the next prompt.",
                  parameters={"type": "object", "properties": {
                      "code": {"type": "string", "description": "The whole Python file."},
                      "notes": {"type": "string", "description": "What changed and what you expect it to do."}},
                      "required": ["code"]})


def list_iterations(ctx: ToolContext, args: dict[str, Any]) -> str:
    rows = [f"{e.iteration}: {e.verdict.summary} runtime_us={e.verdict.metric('runtime_us')}"
            for e in ctx.store.iterations()]
    return "\n".join(rows) or "no iterations yet"


def diff(ctx: ToolContext, args: dict[str, Any]) -> str:
    a, b = int(args["a"]), int(args["b"])
    text = difflib.unified_diff(ctx.store.kernel_of(a).splitlines(keepends=True),
                                ctx.store.kernel_of(b).splitlines(keepends=True), f"iter-{a}", f"iter-{b}")
    return "".join(text) or "(identical)"


def get_dump(ctx: ToolContext, args: dict[str, Any]) -> str:
    """One dump file of an iteration (ptx, sass, ttgir, ...), optionally only the lines matching a regex."""
    n, kind = int(args["iteration"]), str(args["kind"]).lstrip(".")
    folder = ctx.dumps(n)
    files = sorted(folder.glob(f"*.{kind}")) if folder.is_dir() else []
    if not files:
        have = sorted({p.suffix.lstrip(".") for p in folder.glob("*")}) if folder.is_dir() else []
        return f"no .{kind} dump for iteration {n}; available: {', '.join(have) or 'none'}"
    pattern = args.get("pattern")
    out = []
    for f in files:
        lines = f.read_text(errors="replace").splitlines()
        if pattern:
            rx = re.compile(pattern)
            lines = [f"{i + 1}: {ln}" for i, ln in enumerate(lines) if rx.search(ln)]
        out.append(f"== {f.name} ({len(lines)} lines shown)\n" + "\n".join(lines[:400]))
    return "\n".join(out)[:30000]


def _context_names(ctx: ToolContext, requested: Any = None) -> tuple[list[str], list[str]]:
    """(contexts to use, problems): the task's `context:` names, or every registered one when it lists none;
    built-in local sources (ptx, triton, cute-dsl) are indexed on first use."""
    from harness import context

    allowed = list(ctx.task.context)
    names = [str(requested)] if requested else allowed
    if requested and allowed and requested not in allowed:
        return [], [f"context {requested!r} is not one of this task's: {', '.join(allowed)}"]
    problems = context.ensure(names, say=ctx.note)
    registered = context.Registry().entries()
    return [n for n in (names or sorted(registered)) if n in registered], problems


def search_context(ctx: ToolContext, args: dict[str, Any]) -> str:
    from harness import context

    names, problems = _context_names(ctx, args.get("name"))
    if not names:
        return "no context directory to search: " + ("; ".join(problems) or "none registered (harness context add)")
    k = max(1, min(int(args.get("k", 5)), 10))
    text = context.format_hits(context.search(str(args["query"]), names, k))
    return text + (f"\n(not searched: {'; '.join(problems)})" if problems else "")


def read_context(ctx: ToolContext, args: dict[str, Any]) -> str:
    from harness import context

    from rungs.core.errors import BadInput

    names, _ = _context_names(ctx)
    start, end = args.get("start"), args.get("end")
    ref = str(args["path"])
    first, last = int(start) if start is not None else None, int(end) if end is not None else None
    try:
        return context.read(ref, first, last, names=names or None)
    except BadInput:
        natural = _natural_ref(ref, names)  # a file path as a person writes it, not the short form search prints
        if natural is None:
            raise
        return context.read(natural, first, last, names=names or None)


def _natural_ref(ref: str, names: list[str]) -> str | None:
    """`NAME/rel` for an absolute path inside a context, or a path whose tail names a file in one
    (`triton/language/core.py`, `language/core.py:120-140`)."""
    from harness import context

    path, span = re.fullmatch(r"(.*?)((?::\d+(?:-\d+)?)?)", ref.strip()).groups()
    registry = context.Registry()
    for name in names:
        root = Path(registry.get(name).path).resolve()
        if root.is_file():
            continue
        candidate = Path(path).expanduser()
        if candidate.is_absolute():
            if candidate.resolve().is_relative_to(root) and candidate.is_file():
                return f"{name}/{candidate.resolve().relative_to(root)}{span}"
            continue
        parts = candidate.parts
        for i in range(len(parts)):
            tail = Path(*parts[i:])
            if (root / tail).is_file():
                return f"{name}/{tail}{span}"
    return None


def get_profile(ctx: ToolContext, args: dict[str, Any]) -> str:
    """An iteration's Nsight Compute summary (the profile rung's reading of it) and the top of the raw CSV."""
    n = int(args["iteration"])
    folder = ctx.dumps(n)
    summary, table = folder / "profile.txt", folder / "profile.csv"
    if not summary.is_file() and not table.is_file():
        return (f"no profile for iteration {n}: the profile rung runs on a GPU with Nsight Compute, after the "
                "kernel passed correctness; see that iteration's profile rung message")
    out = [summary.read_text()] if summary.is_file() else []
    if table.is_file():
        lines = table.read_text(errors="replace").splitlines()
        out.append(f"== profile.csv (first {min(len(lines), CSV_HEAD_LINES)} of {len(lines)} lines; the whole file: "
                   f"{table})\n" + "\n".join(lines[:CSV_HEAD_LINES]))
    return "\n\n".join(out)[:30000]


CSV_HEAD_LINES = 40


def get_sections(ctx: ToolContext, args: dict[str, Any]) -> str:
    """An iteration's timing sections: cycles per marked region (rungs/ladder/sections.py), and where its trace is."""
    n = int(args["iteration"])
    folder = ctx.dumps(n)
    summary = folder / "sections.txt"
    if not summary.is_file():
        return (f"no sections for iteration {n}: the sections step measures regions marked in the kernel (Triton: "
                "`import triton.profiler.language as pl` and `with pl.scope(\"name\"):` inside the @triton.jit "
                "function) on a GPU, after the kernel passed correctness; see that iteration's sections message")
    trace = folder / "sections.trace.json"
    return summary.read_text() + (f"\n(trace for ui.perfetto.dev: {trace})" if trace.is_file() else "")

TOOLS: dict[str, tuple[ToolSpec, Handler]] = {
    "search_context": (ToolSpec(name="search_context", description="Search the task's context directories (PTX "
                                "instruction headers, Triton language sources, CuTe DSL, CUTLASS, ...) by keywords, "
                                "e.g. 'cp.async.bulk.tensor 2d' or 'tl.dot acc'. Returns the best chunks (a function, "
                                "a declaration with its doc comment, a doc section), each with a reference to read on "
                                "with read_context.",
                                parameters={"type": "object", "properties": {
                                    "query": {"type": "string", "description": "Keywords or an identifier."},
                                    "name": {"type": "string", "description": "Only this context (optional)."},
                                    "k": {"type": "integer", "description": "How many hits (default 5, at most 10)."}},
                                    "required": ["query"]}), search_context),
    "read_context": (ToolSpec(name="read_context", description="Read lines of a file in a context directory: path as "
                              "search_context prints it (context/path/in/it, optionally with :START-END), start and "
                              "end lines (1-based, inclusive; at most 400 lines).",
                              parameters={"type": "object", "properties": {
                                  "path": {"type": "string"}, "start": {"type": "integer"}, "end": {"type": "integer"}},
                                  "required": ["path"]}), read_context),
    "list_iterations": (ToolSpec(name="list_iterations", description="Each iteration's verdict and runtime.",
                                 parameters={"type": "object", "properties": {}}), list_iterations),
    "diff": (ToolSpec(name="diff", description="Unified diff between the kernels of two iterations.",
                      parameters={"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                                  "required": ["a", "b"]}), diff),
    "get_dump": (ToolSpec(name="get_dump", description="Read a compiler dump of an iteration: kind is one of ttir, "
                          "ttgir, ll, ptx, sass, txt (resource summary); pattern is an optional regex to grep.",
                          parameters={"type": "object", "properties": {
                              "iteration": {"type": "integer"}, "kind": {"type": "string"},
                              "pattern": {"type": "string"}}, "required": ["iteration", "kind"]}), get_dump),
    "get_profile": (ToolSpec(name="get_profile", description="The Nsight Compute profile of an iteration's kernel at "
                             "the first bench shape (GPU only): memory- or compute-bound, DRAM and SM throughput in % "
                             "of peak, top warp stall reasons, achieved vs theoretical occupancy, registers and shared "
                             "memory per block, ncu's advice; then the top of the raw CSV.",
                             parameters={"type": "object", "properties": {"iteration": {"type": "integer"}},
                                         "required": ["iteration"]}), get_profile),
    "get_sections": (ToolSpec(name="get_sections", description="The cycles spent in each region you marked inside "
                              "an iteration's kernel (GPU only; one instrumented call at the first bench shape): per "
                              "region its share of the programs' time, mean and total cycles per program, and the "
                              "spread across programs (slowest over mean: load imbalance).",
                              parameters={"type": "object", "properties": {"iteration": {"type": "integer"}},
                                          "required": ["iteration"]}), get_sections),
}


USE_WHEN: dict[str, str] = {
    "search_context": "before you use an API you are not sure of in the installed version (names, arguments, "
                      "what a version removed), or to find how an instruction is spelled; keywords or an identifier, "
                      "e.g. 'make_tensor_descriptor' or 'tl.dot acc'",
    "read_context": "to read on from a search hit: pass its reference as printed (context/path:START-END)",
    "list_iterations": "each iteration's verdict and runtime, when the prompt's history table is folded",
    "diff": "the unified diff between two iterations' kernels (a=older, b=newer), e.g. to see what a regression changed",
    "get_dump": "what the compiler made of an iteration: kind ttir, ttgir, ll, ptx, sass or txt (resource summary), "
                "with an optional regex, e.g. kind 'sass' pattern 'HMMA|WGMMA|LDG' to see matrix instructions and loads",
    "get_profile": "on a GPU run, an iteration's Nsight Compute summary (bound, DRAM and SM throughput, stalls, "
                   "occupancy) to see why it is slow",
    "get_sections": "on a GPU run, which marked region of the kernel (e.g. the QK^T product, the softmax update, the "
                    "PV product) takes the cycles, and whether some programs take much longer than others",
    "submit_kernel": "when the kernel is ready: the whole file in `code`, what changed and why in `notes`; this ends "
                     "the iteration",
}
"""When each tool helps, for the system prompt (the specs say what each does)."""


def use_when(spec: ToolSpec) -> str:
    return USE_WHEN.get(spec.name, spec.description)


GPU_ONLY = {"get_profile", "get_sections"}
"""Tools with nothing to answer on a run without a GPU (Nsight Compute's profile, the timed sections)."""


def on_gpu(dsl: str, remote: bool = False) -> bool:
    """Kernels are timed on a GPU: this machine's, or a remote executor's (`remote`)."""
    from harness import feedback

    return remote or feedback.environment(dsl).gpu is not None


class Toolbox:
    """The tools offered to the model. It holds nothing of the run: each call is handed a ToolContext."""

    def specs(self, gpu: bool) -> list[ToolSpec]:
        """The tools offered: all of them where kernels are timed on a GPU (`on_gpu`), else all but GPU_ONLY."""
        return [SUBMIT] + [spec for name, (spec, _) in TOOLS.items() if gpu or name not in GPU_ONLY]

    def call(self, call: ToolCall, ctx: ToolContext) -> str:
        entry = TOOLS.get(call.name)
        if entry is None:
            return f"error: unknown tool {call.name!r}; tools: submit_kernel, {', '.join(TOOLS)}"
        try:
            return entry[1](ctx, call.arguments)
        except Exception as exc:  # a tool error is feedback for the model, never a crash of the run
            return f"error: {call.name} failed: {type(exc).__name__}: {exc}"
