"""Context directories the model may search: named folders of sources and docs (the CUDA toolkit's PTX headers,
Triton's language sources, CuTe DSL, CUTLASS, or any folder), chunked the way people read them
(harness/chunking.py) and indexed with BM25 (bm25s). The agent's `search_context` and `read_context` tools and
the `harness context` commands use this module.

Everything lives under the harness home, HARNESS_HOME or, per Python environment,
~/.cache/kernel-harness/envs/<env>-<hash of sys.prefix>:
`contexts.json` (the registry: name -> folder), `index/<name>/` (chunks.jsonl and the BM25 arrays) and
`sources/` (what the harness fetched itself, such as a CUTLASS clone).
"""
from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Callable

from pydantic import BaseModel

from harness.chunking import SUFFIXES, Chunk, chunk_file
from rungs.core.errors import BadInput
from rungs.core.atomic import atomic_write

SKIP_DIRS = {".git", "__pycache__", "node_modules", "build", "dist", ".tox", ".venv", ".mypy_cache", ".pytest_cache"}
MAX_FILE_BYTES = 2_000_000
CUTLASS_URL = "https://github.com/NVIDIA/cutlass.git"
CUTE_DSL_SKIP = {"_mlir", "jax", "__pycache__"}
"""Entries of the installed `cutlass` package that the cute-dsl context leaves out."""


def home() -> Path:
    """HARNESS_HOME, else a folder of ~/.cache/kernel-harness/envs/ for this Python environment: the built-in
    sources point into the environment's own site-packages (triton, cute-dsl), so two virtual environments must
    not share one registry."""
    if os.environ.get("HARNESS_HOME"):
        return Path(os.environ["HARNESS_HOME"]).expanduser()
    prefix = Path(sys.prefix).resolve()
    digest = hashlib.sha256(str(prefix).encode()).hexdigest()[:10]
    return Path.home() / ".cache" / "kernel-harness" / "envs" / f"{prefix.name}-{digest}"


class ContextEntry(BaseModel):
    """One registered context directory."""

    name: str
    path: str
    """The folder searched (absolute)."""
    source: str = "dir"
    """`dir` for a folder the user named, else the built-in source that filled it (ptx, triton, ...)."""
    include: list[str] = []
    """Sub-folders indexed (all of it when empty)."""
    files: int = 0
    chunks: int = 0
    indexed_at: float | None = None


class Hit(BaseModel):
    context: str
    path: str
    start: int
    end: int
    title: str
    score: float
    text: str

    @property
    def ref(self) -> str:
        return f"{self.context}/{self.path}:{self.start}-{self.end}"


# ---- the registry -----------------------------------------------------------------------------------------------
class Registry:
    def __init__(self, root: Path | None = None) -> None:
        self.root = root or home()
        self.file = self.root / "contexts.json"

    def entries(self) -> dict[str, ContextEntry]:
        if not self.file.is_file():
            return {}
        try:
            data = json.loads(self.file.read_text())
        except json.JSONDecodeError as exc:
            raise BadInput(f"{self.file}: not valid JSON ({exc.msg}); delete it and add the contexts again") from None
        return {name: ContextEntry(**entry) for name, entry in data.items()}

    def get(self, name: str) -> ContextEntry:
        entries = self.entries()
        if name not in entries:
            known = ", ".join(sorted(entries)) or "none"
            raise BadInput(f"no context named {name!r} (registered: {known}); add it with `harness context add {name}"
                           f"{'' if name in SOURCES else ' PATH'}`")
        return entries[name]

    def put(self, entry: ContextEntry) -> None:
        entries = self.entries()
        entries[entry.name] = entry
        self._write(entries)

    def remove(self, name: str) -> None:
        entries = self.entries()
        self.get(name)
        del entries[name]
        self._write(entries)
        shutil.rmtree(self.index_dir(name), ignore_errors=True)

    def index_dir(self, name: str) -> Path:
        return self.root / "index" / name

    def _write(self, entries: dict[str, ContextEntry]) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        atomic_write(self.file, json.dumps({n: e.model_dump() for n, e in sorted(entries.items())}, indent=2) + "\n")


# ---- built-in sources ---------------------------------------------------------------------------------------------
def find_ptx(registry: Registry) -> tuple[Path, list[str]]:
    """The CUDA toolkit's CCCL headers cuda/__ptx: one doc comment (the PTX form, its ISA and SM) and one
    declaration per instruction form."""
    roots = [os.environ.get(v) for v in ("CUDA_HOME", "CUDA_PATH")] + ["/usr/local/cuda"]
    roots += sorted((str(p) for p in Path("/usr/local").glob("cuda-*")), reverse=True)
    subdirs = ["include/cccl/cuda/__ptx", "include/cuda/__ptx", "targets/x86_64-linux/include/cccl/cuda/__ptx",
               "targets/x86_64-linux/include/cuda/__ptx", "targets/sbsa-linux/include/cccl/cuda/__ptx",
               "targets/sbsa-linux/include/cuda/__ptx"]
    candidates = [Path(r) / s for r in roots if r for s in subdirs]
    for site in map(Path, sys.path):  # pip's CUDA wheels (nvidia-cuda-cccl) put the headers under nvidia/
        if (site / "nvidia").is_dir():
            candidates += sorted((site / "nvidia").glob("*/include/*/cuda/__ptx")) + sorted(
                (site / "nvidia").glob("*/include/cuda/__ptx"))
    for path in candidates:
        if path.is_dir():
            return path.resolve(), []
    raise BadInput("ptx: no CUDA toolkit CCCL headers (cuda/__ptx) under $CUDA_HOME or /usr/local/cuda; install the "
                   "CUDA toolkit 12.4+ (or `pip install nvidia-cuda-cccl`), or `harness context add ptx PATH`")


def _package_folder(package: str, sub: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise BadInput(f"{package}: the {package} package is not installed (`pip install {package}`)")
    path = Path(list(spec.submodule_search_locations)[0]) / sub
    if not path.is_dir():
        raise BadInput(f"{package}: {path} not found in the installed {package} package")
    return path.resolve()


def find_triton(registry: Registry) -> tuple[Path, list[str]]:
    """The installed triton package's language/ sources (tl.* as the compiler sees them) and Gluon's
    (triton.experimental.gluon: layouts, shared memory, mbarrier, TMA, async wgmma, warp_specialize), where this
    Triton has it."""
    root = _package_folder("triton", "language").parent
    return root, [sub for sub in ("language", "experimental/gluon") if (root / sub).is_dir()]


def find_tilelang(registry: Registry) -> tuple[Path, list[str]]:
    """The installed tilelang package's language/ sources (T.* as its parser sees them: T.copy, T.gemm,
    T.Pipelined, the reductions) and its CUDA templates (what T.gemm and T.copy lower to)."""
    root = _package_folder("tilelang", "language").parent
    return root, [sub for sub in ("language", "src/tl_templates/cuda") if (root / sub).is_dir()]


def find_cute_dsl(registry: Registry) -> tuple[Path, list[str]]:
    """The CuTe DSL sources (and any examples) inside an installed nvidia-cutlass-dsl."""
    folders: set[Path] = set()
    for dist in importlib.metadata.distributions():
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if not name.startswith("nvidia-cutlass-dsl"):
            continue
        for f in dist.files or []:
            parts = Path(str(f)).parts
            for anchor in ("cutlass", "examples"):
                if anchor in parts and f.suffix in (".py", ".md"):
                    folders.add(Path(str(dist.locate_file(Path(*parts[:parts.index(anchor) + 1])))))
                    break
    folders = {p for p in folders if p.is_dir()}
    if not folders:
        raise BadInput("cute-dsl: nvidia-cutlass-dsl is not installed (`pip install nvidia-cutlass-dsl`), or add a "
                       "folder of CuTe DSL sources with `harness context add cute-dsl PATH`")
    root = Path(os.path.commonpath([str(p) for p in folders]))
    include: list[str] = []
    for folder in sorted(folders):
        # The package's own entries, less the generated MLIR bindings (5 MB of op builders that drown the DSL's
        # API in search results) and the JAX bridge.
        entries = [folder] if folder.name != "cutlass" else [
            e for e in sorted(folder.iterdir()) if e.name not in CUTE_DSL_SKIP and not e.name.startswith(".")]
        include += [str(e.relative_to(root)) for e in entries if e != root]
    return root, include


def clone_cutlass(registry: Registry) -> tuple[Path, list[str]]:
    """A shallow clone of CUTLASS (headers, CuTe, examples, docs, the Python DSL); HARNESS_CUTLASS_URL overrides
    the repository address."""
    url = os.environ.get("HARNESS_CUTLASS_URL", CUTLASS_URL)
    dest = registry.root / "sources" / "cutlass"
    if not (dest / ".git").is_dir():
        if shutil.which("git") is None:
            raise BadInput("cutlass: git is not installed; clone CUTLASS yourself and `harness context add cutlass PATH`")
        shutil.rmtree(dest, ignore_errors=True)
        dest.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
        try:
            p = subprocess.run(["git", "clone", "--quiet", "--depth", "1", url, str(dest)], capture_output=True,
                               text=True, timeout=900, env=env)
            failure = p.stderr.strip().splitlines()[-1] if p.returncode else ""
        except subprocess.TimeoutExpired:
            failure = "timed out after 15 minutes"
        if failure or not dest.is_dir():
            shutil.rmtree(dest, ignore_errors=True)
            raise BadInput(f"cutlass: git clone {url} failed ({failure or 'no checkout'}); offline? clone it where "
                           f"you can and `harness context add cutlass PATH`")
    include = [d for d in ("include", "examples", "media/docs", "docs", "python") if (dest / d).is_dir()]
    return dest.resolve(), include


def find_hopper(registry: Registry) -> tuple[Path, list[str]]:
    """This harness's own notes on Hopper kernels (harness/context_docs/hopper): the wgmma forms and descriptor,
    TMA and mbarrier, warp specialization, FlashAttention's structure; shipped with the package, so always there."""
    return (Path(__file__).resolve().parent / "context_docs" / "hopper"), []


SOURCES: dict[str, tuple[str, Callable[[Registry], tuple[Path, list[str]]]]] = {
    "ptx": ("PTX instructions: the CUDA toolkit's CCCL headers cuda/__ptx", find_ptx),
    "triton": ("the installed triton package's language/ and Gluon (experimental/gluon/) sources", find_triton),
    "cute-dsl": ("CuTe DSL sources and examples from an installed nvidia-cutlass-dsl", find_cute_dsl),
    "tilelang": ("the installed tilelang package's language/ sources and CUDA templates", find_tilelang),
    "hopper": ("notes on Hopper kernels shipped with the harness: wgmma, TMA, mbarrier, warp specialization",
               find_hopper),
    "cutlass": ("a shallow git clone of CUTLASS (needs the network once)", clone_cutlass),
}
LOCAL_SOURCES = ("ptx", "triton", "cute-dsl", "tilelang", "hopper")
"""Built-in sources filled from this machine alone, so a search may fill them on first use."""


# ---- adding and indexing ----------------------------------------------------------------------------------------
def add(name: str, path: Path | None = None, registry: Registry | None = None) -> ContextEntry:
    """Register a folder (or fill a built-in source when no path is given) and index it."""
    registry = registry or Registry()
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
        raise BadInput(f"context name {name!r}: use letters, digits, '-', '_' and '.'")
    if path is None:
        if name not in SOURCES:
            raise BadInput(f"no built-in source named {name!r} (built-in: {', '.join(SOURCES)}); "
                           f"give a folder: `harness context add {name} PATH`")
        folder, include = SOURCES[name][1](registry)
        entry = ContextEntry(name=name, path=str(folder), source=name, include=include)
    else:
        if not path.exists():
            raise BadInput(f"{path}: no such file or folder")
        entry = ContextEntry(name=name, path=str(path.resolve()))
    return index(entry, registry)


def iter_files(entry: ContextEntry) -> list[tuple[Path, str]]:
    root = Path(entry.path)
    if root.is_file():
        return [(root, root.name)]
    tops = [root / i for i in entry.include] or [root]
    found = []
    for top in tops:
        if top.is_file():  # an included file (a package's top-level module)
            if top.suffix.lower() in SUFFIXES and top.stat().st_size <= MAX_FILE_BYTES:
                found.append((top, top.relative_to(root).as_posix()))
            continue
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.endswith(".egg-info"))
            for fn in sorted(filenames):
                f = Path(dirpath) / fn
                if f.suffix.lower() in SUFFIXES and f.is_file() and f.stat().st_size <= MAX_FILE_BYTES:
                    found.append((f, f.relative_to(root).as_posix()))
    return found


def index(entry: ContextEntry | str, registry: Registry | None = None) -> ContextEntry:
    """(Re)build a context's index from its folder and record it in the registry."""
    import bm25s

    registry = registry or Registry()
    if isinstance(entry, str):
        entry = registry.get(entry)
    if not Path(entry.path).exists():
        raise BadInput(f"context {entry.name}: {entry.path} no longer exists; add it again")
    files = iter_files(entry)
    chunks: list[Chunk] = []
    for f, rel in files:
        chunks.extend(chunk_file(f, rel))
    out = registry.index_dir(entry.name)
    shutil.rmtree(out, ignore_errors=True)
    (out / "bm25").mkdir(parents=True)
    with open(out / "chunks.jsonl", "w") as fh:
        for c in chunks:
            fh.write(json.dumps(asdict(c)) + "\n")
    if chunks:
        retriever = bm25s.BM25()
        retriever.index([tokens(f"{c.path} {c.title}\n{c.text}") for c in chunks], show_progress=False)
        retriever.save(str(out / "bm25"), show_progress=False)
    entry = entry.model_copy(update={"files": len(files), "chunks": len(chunks), "indexed_at": time.time()})
    registry.put(entry)
    return entry


# ---- tokens -------------------------------------------------------------------------------------------------------
_COMPOUND = re.compile(r"[A-Za-z0-9_]+(?:(?:\.|::|->)[A-Za-z0-9_]+)*")
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+[a-z]*")
_STOP = {"the", "a", "an", "of", "to", "and", "or", "in", "is", "it", "for", "on", "as", "by", "be", "are", "at",
         "this", "that", "with", "from", "we", "if", "not", "can", "will", "which", "its", "into"}


def tokens(text: str) -> list[str]:
    """Words for BM25: identifiers and dotted names (`cp.async.bulk.tensor`, `tl.dot`, `cute::gemm`) split into
    their parts (snake_case, camelCase), plus the whole name (as written and as its parts joined) and each
    adjacent pair of parts, so that a query for `cp.async.bulk.tensor` also matches `cp_async_bulk_tensor` and
    ranks the exact sequence first."""
    out: list[str] = []
    for compound in _COMPOUND.findall(text):
        out.extend(_compound_tokens(compound))
    return out


@functools.lru_cache(maxsize=1 << 16)
def _compound_tokens(compound: str) -> tuple[str, ...]:
    """One name's words for tokens(): cached, since code repeats its names (indexing the CuTe DSL split the same
    names a million times, 12 of its 19 s)."""
    out: list[str] = []
    parts = [p.lower() for piece in re.split(r"[._:>-]+", compound) for p in _PART.findall(piece)]
    out.extend(p for p in parts if p not in _STOP and (len(p) > 1 or p.isdigit()))
    if 1 < len(parts) <= 8:
        joined = "_".join(parts)
        out.append(joined)
        out.extend(f"{a}_{b}" for a, b in zip(parts, parts[1:]))
        raw = re.sub(r"[.:>-]+", "_", compound.lower())
        if raw != joined:  # FlashAttention: `flashattention` finds it too
            out.append(raw)
    return tuple(out)


# ---- searching and reading ----------------------------------------------------------------------------------------
_loaded: dict[tuple[str, float | None], tuple[object, list[dict]]] = {}


def _load(entry: ContextEntry, registry: Registry) -> tuple[object, list[dict]] | None:
    import bm25s

    key = (str(registry.index_dir(entry.name)), entry.indexed_at)
    if key not in _loaded:
        folder = registry.index_dir(entry.name)
        if not (folder / "chunks.jsonl").is_file():
            raise BadInput(f"context {entry.name} has no index; run `harness context index {entry.name}`")
        chunks = [json.loads(line) for line in (folder / "chunks.jsonl").read_text().splitlines() if line]
        retriever = bm25s.BM25.load(str(folder / "bm25"), show_progress=False) if chunks else None
        _loaded[key] = (retriever, chunks)
    return _loaded[key]


def search(query: str, names: list[str] | None = None, k: int = 5, registry: Registry | None = None) -> list[Hit]:
    """The k best chunks for a query over the named contexts (all registered ones when names is empty)."""
    registry = registry or Registry()
    entries = registry.entries()
    names = names or sorted(entries)
    query_tokens = tokens(query)
    if not query_tokens:
        raise BadInput(f"search query {query!r} has no words to look for")
    hits: list[Hit] = []
    for name in names:
        entry = entries.get(name) or registry.get(name)
        retriever, chunks = _load(entry, registry)
        if retriever is None:
            continue
        docs, scores = retriever.retrieve([query_tokens], k=min(k, len(chunks)), show_progress=False)
        for i, score in zip(docs[0], scores[0]):
            if score > 0:
                hits.append(Hit(context=name, score=float(score), **chunks[int(i)]))
    return sorted(hits, key=lambda h: -h.score)[:k]


def ensure(names: list[str], registry: Registry | None = None, say: Callable[[str], None] = lambda s: None) -> list[str]:
    """Fill the built-in local sources among `names` that are not registered yet; returns the names that cannot
    be searched, each with the reason."""
    registry = registry or Registry()
    entries = registry.entries()
    problems = []
    for name in names:
        if name in entries:
            continue
        if name in LOCAL_SOURCES:
            try:
                t0 = time.monotonic()
                entry = add(name, registry=registry)
                say(f"indexed context {name} ({entry.files} files, {entry.chunks} chunks, "
                    f"{time.monotonic() - t0:.1f} s): {entry.path}")
                continue
            except BadInput as exc:
                problems.append(str(exc))
        else:
            problems.append(f"context {name} is not registered (`harness context add {name}"
                            f"{'' if name in SOURCES else ' PATH'}`)")
    return problems


def read(ref: str, start: int | None = None, end: int | None = None, names: list[str] | None = None,
         registry: Registry | None = None, max_lines: int = 400) -> str:
    """Lines of a file in a context, numbered: ref is `NAME/path/in/it` (as search hits print it), optionally
    with `:START-END` on the end."""
    registry = registry or Registry()
    m = re.fullmatch(r"(.*?):(\d+)(?:-(\d+))?", ref)
    if m and start is None:
        ref, start, end = m.group(1), int(m.group(2)), int(m.group(3) or m.group(2))
    colon, slash = ref.find(":"), ref.find("/")
    name, _, rel = ref.partition(":" if colon >= 0 and (slash < 0 or colon < slash) else "/")
    if names is not None and name not in names:
        raise BadInput(f"context {name!r} is not one of this task's: {', '.join(names) or 'none'}")
    entry = registry.get(name)
    root = Path(entry.path).resolve()
    file = (root / rel).resolve() if rel else root
    if root.is_file():
        file = root
    if not file.is_relative_to(root):
        raise BadInput(f"{ref}: outside the context folder")
    if not file.is_file():
        raise BadInput(f"{ref}: no such file in context {name}")
    lines = file.read_text(errors="replace").splitlines()
    first = max(start or 1, 1)
    last = min(end or len(lines), len(lines), first + max_lines - 1)
    body = "\n".join(f"{i}: {lines[i - 1]}" for i in range(first, last + 1))
    more = f"\n[... lines {last + 1}-{len(lines)} not shown]" if last < len(lines) else ""
    return f"== {name}/{rel} lines {first}-{last} of {len(lines)}\n{body}{more}"


def format_hits(hits: list[Hit], max_lines: int = 40, max_chars: int = 12000) -> str:
    """Hits as text for a model or a terminal: the reference to read more, the title, the chunk's first lines."""
    if not hits:
        return "no matches"
    parts, used = [], 0
    for n, h in enumerate(hits, 1):
        lines = h.text.splitlines()
        shown = "\n".join(lines[:max_lines]) + (f"\n[... {len(lines) - max_lines} more lines: read_context "
                                                 f"{h.ref}]" if len(lines) > max_lines else "")
        block = f"{n}. {h.ref}  {h.title}  (score {h.score:.1f})\n{shown}\n"
        if used + len(block) > max_chars and parts:
            parts.append(f"[{len(hits) - n + 1} more hits left out to keep this short]")
            break
        parts.append(block)
        used += len(block)
    return "\n".join(parts)
