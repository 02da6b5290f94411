"""Context directories: chunking the way people read, the BM25 index, the registry under HARNESS_HOME, the
`harness context` commands, the search_context/read_context tools through the loop, and the prompt guard."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from harness import context
from harness.agent import Agent
from harness.chunking import chunk_file
from rungs.core.errors import BadInput
from harness.events import IterationFinished, ToolCalled
from harness.models import load_model
from harness.prompts import render_iteration
from harness.store import RunStore
from rungs.core.result import RungResult, Verdict

from conftest import TASKS
from test_cli import harness

PTX_DIRS = [Path("/usr/local/cuda/include/cccl/cuda/__ptx"),
            Path("/usr/local/cuda/targets/x86_64-linux/include/cuda/__ptx")]
needs_ptx = pytest.mark.skipif(not any(p.is_dir() for p in PTX_DIRS), reason="no CUDA toolkit CCCL headers")

CPP = '''// SPDX-License-Identifier: Apache-2.0
// Copyright (c) someone

#pragma once
namespace cute {

/// Copy a tile with the Tensor Memory Accelerator.
/// Issues cp.async.bulk.tensor and arrives on the barrier.
template <class T>
CUTE_DEVICE void tma_copy(T const& src, T& dst) {
  if (src) { dst = src; }
}

// Wait until the barrier's phase flips.
inline void wait_barrier(int phase) {
  while (phase) { --phase; }
}

}  // namespace cute
'''

PY = '''"""A module."""
import math

SCALE = 2


def softmax_rows(x):
    """Row softmax."""
    return x


class Tensor:
    """A tensor."""

    def load(self, mask=None):
        return mask
'''

MD = '''# Guide

Intro text.

## Pipelining

Use num_stages to overlap loads.

```python
# not a heading
```

## Warp specialization

Producer and consumer warps.
'''

RST = '''Title
=====

Intro.

Swizzling
---------

Bank conflicts go away.
'''


@pytest.fixture
def harness_home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("HARNESS_HOME", str(home))
    return home


@pytest.fixture
def docs_dir(tmp_path):
    root = tmp_path / "docs"
    (root / "include" / "cute").mkdir(parents=True)
    (root / "include" / "cute" / "copy.hpp").write_text(CPP)
    (root / "python").mkdir()
    (root / "python" / "ops.py").write_text(PY)
    (root / "guide.md").write_text(MD)
    (root / "notes.rst").write_text(RST)
    (root / "image.png").write_bytes(b"\x89PNG")
    return root


# ---- chunking ---------------------------------------------------------------------------------------------------
def test_cpp_chunks_are_declarations_with_their_doc_comments(tmp_path):
    f = tmp_path / "copy.hpp"
    f.write_text(CPP)
    chunks = chunk_file(f, "copy.hpp")
    assert [c.title for c in chunks] == ["Copy a tile with the Tensor Memory Accelerator.",
                                        "Wait until the barrier's phase flips."]
    first, second = chunks
    assert first.text.lstrip().startswith("/// Copy a tile") and "CUTE_DEVICE void tma_copy" in first.text
    assert (second.start, second.end) == (14, 19) and "SPDX" not in first.text + second.text


def test_python_markdown_and_rst_chunks(tmp_path):
    py, md, rst = tmp_path / "ops.py", tmp_path / "guide.md", tmp_path / "notes.rst"
    py.write_text(PY), md.write_text(MD), rst.write_text(RST)
    assert [c.title for c in chunk_file(py, "ops.py")] == ['"""A module."""', "def softmax_rows(x):", "class Tensor:"]
    assert [c.title for c in chunk_file(md, "guide.md")] == ["Guide", "Guide > Pipelining",
                                                             "Guide > Warp specialization"]
    assert [c.title for c in chunk_file(rst, "notes.rst")] == ["Title", "Swizzling"]


def test_a_big_python_class_is_cut_by_method(tmp_path):
    methods = "".join(f"    def m{i}(self):\n" + "        x = 1\n" * 20 + "\n" for i in range(10))
    f = tmp_path / "big.py"
    f.write_text("class Big:\n    '''Doc.'''\n\n" + methods)
    titles = [c.title for c in chunk_file(f, "big.py")]
    assert titles[0] == "class Big:" and titles[1] == "class Big: def m0(self):" and len(titles) == 11


# ---- registry, index, search, read ------------------------------------------------------------------------------
def test_add_search_read_and_the_registry(harness_home, docs_dir):
    entry = context.add("mine", docs_dir)
    assert entry.files == 4 and entry.chunks >= 8
    registry = json.loads((harness_home / "contexts.json").read_text())
    assert registry["mine"]["path"] == str(docs_dir.resolve())
    hits = context.search("cp.async.bulk.tensor barrier", ["mine"], k=3)
    assert hits[0].path == "include/cute/copy.hpp" and "tma_copy" in hits[0].text
    assert hits[0].ref.startswith("mine/include/cute/copy.hpp:")
    assert context.search("warp specialization producer", k=1)[0].title == "Guide > Warp specialization"
    text = context.read(hits[0].ref)
    assert text.startswith("== mine/include/cute/copy.hpp lines") and "tma_copy" in text
    assert "3: Intro text." in context.read("mine:guide.md", 3, 3)
    with pytest.raises(BadInput, match="outside the context folder"):
        context.read("mine/../../etc/passwd")
    with pytest.raises(BadInput, match="not one of this task's"):
        context.read("mine/guide.md", names=["ptx"])


def test_reindex_sees_changes_and_remove(harness_home, docs_dir):
    context.add("mine", docs_dir)
    assert not context.search("flashattention", ["mine"])
    (docs_dir / "fa.md").write_text("# FlashAttention\n\nOnline softmax with running max.\n")
    context.index("mine")
    assert context.search("flashattention", ["mine"])[0].path == "fa.md"
    context.Registry().remove("mine")
    assert context.Registry().entries() == {}


def test_builtin_sources_fill_or_say_why(harness_home, monkeypatch, tmp_path):
    entry = context.add("triton")
    assert entry.source == "triton" and entry.path.endswith("triton") and entry.chunks > 100
    assert any("dot" in h.title for h in context.search("tl.dot acc", ["triton"], k=3))
    # Gluon's Hopper API, for the Triton tasks' attention past tl.dot (tasks/demos/flash_attn_7_gluon.py)
    hits = context.search("warpgroup_mma_wait num_outstanding", ["triton"], k=5)
    assert any("experimental/gluon" in h.path for h in hits), [h.path for h in hits]
    with pytest.raises(BadInput, match="no built-in source named 'nosuch'"):
        context.add("nosuch")
    monkeypatch.setenv("HARNESS_CUTLASS_URL", str(tmp_path / "no-such-repo"))
    with pytest.raises(BadInput, match="cutlass: git clone .* failed .*offline"):
        context.add("cutlass")


def test_cutlass_source_clones_a_repository(harness_home, monkeypatch, tmp_path, docs_dir):
    repo = tmp_path / "cutlass-repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "include").mkdir()
    (repo / "include" / "copy.hpp").write_text(CPP)
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"],
                   check=True)
    monkeypatch.setenv("HARNESS_CUTLASS_URL", f"file://{repo}")
    entry = context.add("cutlass")
    assert entry.include == ["include"] and Path(entry.path) == (harness_home / "sources" / "cutlass").resolve()
    assert context.search("tma_copy", ["cutlass"])[0].path == "include/copy.hpp"


def test_cute_dsl_says_how_to_install_it(harness_home, monkeypatch):
    monkeypatch.setattr(context.importlib.metadata, "distributions", lambda: [])
    with pytest.raises(BadInput, match="nvidia-cutlass-dsl is not installed"):
        context.add("cute-dsl")


# ---- the CLI -------------------------------------------------------------------------------------------------------
def test_context_commands(harness_home, docs_dir):
    env = {"HARNESS_HOME": str(harness_home)}
    p = harness("context", "add", "mine", str(docs_dir), env=env)
    assert p.returncode == 0 and "indexed mine: 4 files" in p.stdout, p.stderr
    p = harness("context", "search", "warp specialization", "--name", "mine", "-k", "1", env=env)
    assert p.returncode == 0 and "mine/guide.md:" in p.stdout and "Producer and consumer warps." in p.stdout
    p = harness("context", "list", env=env)
    assert p.returncode == 0 and "mine" in p.stdout and "built-in sources" in p.stdout
    p = harness("context", "index", env=env)
    assert p.returncode == 0 and "indexed mine" in p.stdout
    p = harness("context", "add", "cutlass", env={**env, "HARNESS_CUTLASS_URL": str(docs_dir / "nope")})
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "git clone" in p.stderr
    p = harness("context", "search", "x", "--name", "unknown", env=env)
    assert p.returncode == 2 and "context unknown is not registered" in p.stderr


@needs_ptx
def test_search_finds_cp_async_bulk_tensor_in_the_cuda_headers(harness_home):
    # a fresh home: the first search fills the local built-in sources (ptx, triton, and cute-dsl / tilelang where
    # installed: their TMA code is a fair answer too) by itself
    env = {"HARNESS_HOME": str(harness_home)}
    p = harness("context", "search", "cp.async.bulk.tensor", "--json", env=env)
    assert p.returncode == 0, p.stderr
    assert "indexed context ptx" in p.stderr
    assert any(json.loads(line)["context"] == "ptx" for line in p.stdout.splitlines())
    p = harness("context", "search", "cp.async.bulk.tensor", "--json", "--name", "ptx", env=env)
    hits = [json.loads(line) for line in p.stdout.splitlines()]
    assert len(hits) == 5 and all(h["context"] == "ptx" for h in hits)
    forms = [h for h in hits if "generated/cp_async_bulk_tensor" in h["path"]]
    assert forms and all(h["title"].startswith("cp.async.bulk.tensor.") for h in forms)
    assert any("cp_async_bulk_tensor(" in h["text"] and "asm(\"cp.async.bulk.tensor." in h["text"] for h in forms)
    p = harness("context", "search", "cp.async.bulk.tensor", "-k", "2", "--name", "ptx", env=env)
    assert p.stdout.startswith("1. ptx/instructions/") and "\n2. ptx/instructions/" in p.stdout


# ---- the tools through the loop -------------------------------------------------------------------------------------
def test_search_context_tool_through_the_loop(lean_softmax_task, harness_home, docs_dir, tmp_path):
    context.add("mine", docs_dir)
    task = lean_softmax_task.model_copy(update={"context": ["mine"]})
    code = (TASKS / "demos" / "softmax_3_rowwise.py").read_text()
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("\n".join(json.dumps(t) for t in [
        {"text": "Look up pipelining first.", "tool_calls": [
            {"name": "search_context", "arguments": {"query": "num_stages pipelining"}},
            {"name": "read_context", "arguments": {"path": "mine/guide.md", "start": 5, "end": 7}},
            {"name": "search_context", "arguments": {"query": "x", "name": "ptx"}}]},
        {"tool_calls": [{"name": "submit_kernel", "arguments": {"code": code, "notes": "rowwise"}}]}]) + "\n")
    store = RunStore.create(tmp_path / "runs", task, f"replay:{transcript}", task.budgets.model_dump())
    agent = Agent(task=task, model=load_model(f"replay:{transcript}"), store=store, budgets=task.budgets,
                  dumps_root=tmp_path / "dumps")
    agent.run()
    events = store.journal.read()
    calls = [e for e in events if isinstance(e, ToolCalled)]
    assert [c.name for c in calls] == ["search_context", "read_context", "search_context"]
    assert calls[0].result.startswith("1. mine/guide.md:") and "Use num_stages to overlap loads." in calls[0].result
    assert "7: Use num_stages to overlap loads." in calls[1].result
    assert "not one of this task's" in calls[2].result
    (it,) = [e for e in events if isinstance(e, IterationFinished)]
    assert it.verdict.verdict == "pass"


# ---- the prompt guard ---------------------------------------------------------------------------------------------------
def test_iteration_prompt_stays_within_its_character_budget(softmax_task):
    def it(n: int, verdict: str) -> IterationFinished:
        rung = RungResult(name="correctness", status="fail" if verdict == "fail" else "ok", message=f"message {n}",
                          details="worst element table\n" * 400)
        return IterationFinished(iteration=n, kernel_sha="x", verdict=Verdict(
            verdict=verdict, failed_rung="correctness" if verdict == "fail" else None, rungs=[rung]))

    history = [it(n, "pass" if n == 5 else "fail") for n in range(1, 41)]
    kernel = "import triton\n" + "# a line of the kernel\n" * 300
    values = dict(task=softmax_task, history=history, last=history[-1], last_code=kernel, best=history[4],
                  best_code=kernel.replace("kernel", "best"), base_code=kernel, hints=[], iteration=41)
    roomy = render_iteration(budget=softmax_task.budgets.model_copy(update={"prompt_chars": 10**7}), **values)
    assert "| 1 | model | correctness: message 1 |" in roomy and "a line of the best" in roomy
    tight = render_iteration(budget=softmax_task.budgets.model_copy(update={"prompt_chars": 12000}), **values)
    assert len(tight) <= 12000
    assert "| 1 | model |" not in tight and "| 1-37 | | 1 pass, 36 fail" in tight
    assert "| 40 | model | correctness: message 40 |" in tight and kernel in tight
    assert "a line of the best" not in tight and "left out to keep this prompt short" in tight
    tiny = render_iteration(budget=softmax_task.budgets.model_copy(update={"prompt_chars": 3000}), **values)
    assert len(tiny) <= 3000 and "characters left out to fit the prompt budget" in tiny


def test_read_context_takes_a_natural_path_too(softmax_task, harness_home, docs_dir, tmp_path):
    """A path as a person writes it (absolute, or with folders above the context's own) reads the same file as the
    short form search prints."""
    from harness.store import RunStore
    from harness.tools import ToolContext, read_context

    context.add("mine", docs_dir)
    agent = ToolContext(task=softmax_task.model_copy(update={"context": ["mine"]}), store=RunStore(tmp_path),
                        dumps_root=tmp_path / "dumps")
    short = read_context(agent, {"path": "mine/guide.md", "start": 5, "end": 7})
    assert "7: Use num_stages to overlap loads." in short
    assert read_context(agent, {"path": str(docs_dir / "guide.md"), "start": 5, "end": 7}) == short
    assert read_context(agent, {"path": "somewhere/docs/guide.md:5-7"}) == short
    with pytest.raises(Exception, match="no such file"):
        read_context(agent, {"path": "mine/nothing.md"})


def test_cute_dsl_fills_from_the_installed_wheel():
    pytest.importorskip("cutlass.cute", reason="nvidia-cutlass-dsl is not installed (the `cute` extra)")
    root, include = context.find_cute_dsl(context.Registry())
    assert "cute" in include and "torch.py" in include and "_mlir" not in include, include
    files = {rel for _, rel in context.iter_files(context.ContextEntry(name="cute-dsl", path=str(root),
                                                                        include=include))}
    assert {"cute/runtime.py", "cute/arch/nvvm_wrappers.py", "torch.py"} <= files
    assert not any(rel.startswith("_mlir/") for rel in files)
