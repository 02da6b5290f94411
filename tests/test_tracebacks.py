"""Tracebacks in the candidate's words (rungs/core/tracebacks.py): the kernel line an interpreted @triton.jit function
failed at (not only the launch line), a libdevice call that cannot run in the interpreter, and a compile error's
line in the file."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

from conftest import KERNELS, ROOT
from rungs import backends
from rungs.ladder.run import failure_message
from rungs.core.tracebacks import compile_where, jit_functions, kernel_frames, kernel_line, libdevice_note

STUB = KERNELS / "kb_gemm_libdevice_stub.py"
WHERE_NONE = KERNELS / "kb_gemm_where_none.py"
RUN = """
import json, os, shutil, sys
os.environ["TRITON_INTERPRET"] = "1"
import importlib.util, torch
from rungs.core.tracebacks import short_traceback
path = sys.argv[1]
spec = importlib.util.spec_from_file_location("candidate", path)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
try:
    module.ModelNew(64, 48, 0.5)(torch.randn(40, 64))
except Exception as exc:
    print(json.dumps(short_traceback(exc, path)))
"""


@pytest.fixture(scope="module")
def stub_traceback(tmp_path_factory) -> str:
    """The worker's short traceback of the libdevice kernel, run by Triton's interpreter (in a process of its own:
    the interpreter is chosen when triton is imported), from a copy named kernel.py as in a run folder."""
    kernel = tmp_path_factory.mktemp("k") / "kernel.py"
    kernel.write_text(STUB.read_text())
    proc = subprocess.run([sys.executable, "-c", RUN, str(kernel)], capture_output=True, text=True, timeout=300,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0 and proc.stdout.strip(), proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_short_traceback_follows_the_launch_line_with_the_kernel_line(stub_traceback):
    lines = stub_traceback.splitlines()
    assert lines[0].startswith("  kernel.py:37 in forward: gemm_scale_tanh_kernel[grid](")
    assert lines[1] == ("  kernel.py:22 in gemm_scale_tanh_kernel (@triton.jit): tl.store(y_ptr + rm[:, None] * N + "
                        "rn[None, :], y, mask=(rm[:, None] < M) & (rn[None, :] < N))")
    assert lines[2] == "InterpreterError: TypeError(\"cannot convert None of type <class 'NoneType'> to tensor\")"
    assert kernel_frames(stub_traceback) == [("kernel.py", 22, "gemm_scale_tanh_kernel", lines[1].split(": ", 1)[1])]


def test_run_message_names_the_kernel_line_and_the_libdevice_stub(stub_traceback, tmp_path):
    kernel = tmp_path / "kernel.py"
    kernel.write_text(STUB.read_text())
    message = failure_message(SimpleNamespace(device="cpu", kernel=kernel), stub_traceback)
    assert message == (
        "InterpreterError: TypeError(\"cannot convert None of type <class 'NoneType'> to tensor\"); "
        "at kernel.py:22 in gemm_scale_tanh_kernel (the @triton.jit function): tl.store(y_ptr + rm[:, None] * N + "
        "rn[None, :], y, mask=(rm[:, None] < M) & (rn[None, :] < N)); "
        "`libdevice.tanh` is an empty stub in Triton's interpreter: it returns None, so `y = libdevice.tanh(z)` "
        "(kernel.py:21) made y None. This run executes kernels in the interpreter: compute it with tl functions "
        "(tl.exp, tl.log, tl.sqrt, tl.math.*) or from them")


def test_libdevice_note_from_the_launch_line_alone_says_likely():
    """A traceback without the kernel's frames (the worker before rungs/core/tracebacks.py): the note still comes, as
    the likely cause."""
    error = ("  kernel.py:37 in forward: gemm_scale_tanh_kernel[grid](y, x)\n"
             "InterpreterError: TypeError(\"cannot convert None of type <class 'NoneType'> to tensor\")")
    note = libdevice_note(error, STUB.read_text())
    assert note.startswith("likely: `libdevice.tanh` does not run in Triton's interpreter (kernel.py:21: "
                           "`y = libdevice.tanh(z)`): triton.language.extra.libdevice's functions are empty stubs")
    assert kernel_line(error) == ""
    assert libdevice_note(error, WHERE_NONE.read_text()) == ""  # no libdevice call: nothing to say
    assert libdevice_note("IndexError: list index out of range", STUB.read_text()) == ""  # another cause


def test_cuda_libdevice_on_the_failing_line_is_named_whatever_the_error_says():
    """extra.cuda.libdevice in the interpreter raises 'Did you forget to add @triton.jit ?' at its own line."""
    source = STUB.read_text().replace("from triton.language.extra import libdevice",
                                      "from triton.language.extra.cuda import libdevice")
    error = ("  kernel.py:37 in forward: gemm_scale_tanh_kernel[grid](y, x)\n"
             "  kernel.py:21 in gemm_scale_tanh_kernel (@triton.jit): y = libdevice.tanh(z)\n"
             "InterpreterError: ValueError('Did you forget to add @triton.jit ? (`_semantic` argument must be "
             "provided outside of JIT functions.)')")
    assert libdevice_note(error, source).startswith(
        "`libdevice.tanh` does not run in Triton's interpreter (kernel.py:21: `y = libdevice.tanh(z)`)")


def test_jit_functions_are_found_under_any_decorator_spelling():
    source = ("import triton\nfrom triton import jit\n\n@triton.autotune(configs=[], key=[])\n@triton.jit\n"
              "def a(x):\n    pass\n\n@jit\ndef b(x):\n    return x\n\n@triton.jit(do_not_specialize=['n'])\n"
              "def c(n):\n    pass\n\ndef plain():\n    pass\n")
    assert jit_functions(source) == {"a": (6, 7), "b": (10, 11), "c": (14, 15)}


def test_compile_message_names_the_files_line():
    """Triton counts from the function's def and quotes a long function from a few lines above the error only:
    the recorded softmax and gemm runs' first kernels."""
    triton = backends.get("triton")
    for run, expect in (("softmax", "arange's arguments must be of type tl.constexpr (kernel.py:13, column 11, in "
                                    "the @triton.jit function softmax_kernel; launched from kernel.py:21 in kernel)"),
                        ("gemm", "input and other must have equal reduction dimensions (kernel.py:28, column 15, in "
                                 "the @triton.jit function matmul_kernel; launched from kernel.py:39 in kernel)")):
        folder = ROOT / "tests" / "data" / "runs" / run
        event = json.loads((folder / "events.jsonl").read_text().splitlines()[3])
        error = event["verdict"]["rungs"][1]["details"]
        source = (folder / "iter-001" / "kernel.py").read_text()
        assert triton.compile_message(error, source=source) == expect
        assert "of the @triton.jit function, launched from line" in triton.compile_message(error)  # no source
    assert compile_where("CompilationError: at 3:1:\nx\n^\nbad", "def f():\n    pass\n") is None  # not jit


def test_a_compile_error_and_the_libdevice_stub_through_the_ladder(tmp_path):
    from harness.spec import load_task
    from rungs.ladder.ladder import check

    os.environ.setdefault("KERNEL_HARNESS_CACHE", str(tmp_path / "cache"))
    task = load_task(ROOT / "tests" / "kernelbench_format" / "level2" / "9_gemm_scale_tanh.py")
    v = check(task, WHERE_NONE, tmp_path / "w1", seeds=1)
    assert v.failed_rung == "compile"
    assert v.rung("compile").message == (
        "'NoneType' object has no attribute 'dtype' (kb_gemm_where_none.py:21, column 8, in the @triton.jit "
        "function gemm_scale_tanh_kernel; launched from kb_gemm_where_none.py:37 in forward)")
    v = check(task, STUB, tmp_path / "w2", seeds=1)
    assert v.failed_rung == "run"
    message = v.rung("run").message
    assert message.startswith("InterpreterError: TypeError(\"cannot convert None of type <class 'NoneType'> to "
                              "tensor\"); ")
    assert "`libdevice.tanh`" in message and "kb_gemm_libdevice_stub.py:21" in message, message
    if "(@triton.jit)" in v.rung("run").details:  # the worker formats its tracebacks with rungs/core/tracebacks.py
        assert "at kb_gemm_libdevice_stub.py:22 in gemm_scale_tanh_kernel (the @triton.jit function)" in message


def test_a_huge_exception_message_keeps_its_type_and_first_line():
    """A red team (2026-12-05) raised RuntimeError with 200000 lines: the traceback kept its last 4000 characters,
    and the verdict read `line`, the exception's type lost."""
    from rungs.core.result import headline
    from rungs.core.tracebacks import short_traceback

    try:
        raise RuntimeError("first words\n" + "line\n" * 200000)
    except RuntimeError as exc:
        text = short_traceback(exc, __file__)
    assert len(text) <= 4000
    assert headline(text) == "RuntimeError: first words", headline(text)
    assert "(1000012 characters)" in text
