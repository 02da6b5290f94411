"""`harness export` on a CPU: the softmax and gemm demos' fast kernels as C sources that `make` compiles to objects
with the right symbols, and the refusals (a launch sequence that changes between calls, torch work between launches,
a kernel that needs global scratch, bad input), each one line with its exit code."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, TASKS
import warm

DEMOS = TASKS / "demos"


def harness(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return warm.run([sys.executable, "-m", "harness.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          env=env, timeout=timeout)


def defined(obj: Path) -> set[str]:
    out = subprocess.run(["nm", "-g", "--defined-only", str(obj)], capture_output=True, text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


needs_cc = pytest.mark.skipif(not Path("/usr/local/cuda/include/cuda.h").is_file(), reason="needs CUDA's cuda.h")


@needs_cc
@pytest.mark.timeout(1200)  # the demo run is four climbs through the ladder
def test_softmax_run_best_iteration_exports_and_builds(tmp_path, demo_run):
    # The demo run at one small shape (conftest.demo_run, which tests/test_cli.py checks): its two passing kernels are
    # the row-wise and the tuned demo; the export records its own shape.
    assert demo_run.returncode == 0, demo_run.stderr
    run = next(demo_run.runs.iterdir())
    out = tmp_path / "c"
    p = harness("export", str(run), "--task", str(TASKS / "softmax.yaml"), "--shape", "M=64,N=8192", "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert "symbols checked" in p.stderr
    source = (out / "kh_softmax_kernel.c").read_text()
    # the best iteration on a CPU is the latest passing one: the tuned demo (BLOCK 8192, 16 warps = 512 threads)
    assert "softmax_kernel BLOCK=8192" in source and ", 512, " in source
    # grid (M,) and the row length and strides N: derived from the recordings, not fixed
    assert "(unsigned)(s_M)" in source and "int32_t a2 = (int32_t)(s_N);" in source
    assert "(s_N) % 16 == 0" in source  # n_cols was specialized as divisible by 16: the entry checks it
    entry = defined(out / "kh_softmax_kernel.o")
    assert "kh_softmax_kernel" in entry
    kernels = [o for o in out.glob("softmax_kernel_0.*.o")]
    assert len(kernels) == 1
    names = defined(kernels[0])
    assert any(n.endswith("_cubin") for n in names) and any(n.startswith("load_softmax_kernel_0") for n in names)
    assert (out / "libkh_softmax_kernel.a").is_file() and (out / "kh_softmax_kernel_test.o").is_file()
    readme = (out / "README.md").read_text()
    assert "exported at M=64, N=8192" in readme and "in0 % 16 == 0" in readme
    # the sources still build from scratch with the Makefile alone
    subprocess.run(["make", "clean"], cwd=out, check=True, capture_output=True)
    subprocess.run(["make"], cwd=out, check=True, capture_output=True)
    assert (out / "libkh_softmax_kernel.a").is_file()


@needs_cc
@pytest.mark.timeout(900)
def test_gemm_grouped_kernel_exports_with_its_grid_as_an_expression(tmp_path):
    out = tmp_path / "c"
    p = harness("export", str(DEMOS / "gemm_4_grouped.py"), "--task", str(TASKS / "gemm.yaml"),
                "--shape", "M=512,N=512,K=512", "-o", str(out))
    assert p.returncode == 0, p.stderr
    source = (out / "kh_gemm_kernel.c").read_text()
    assert "KH_CDIV(s_M, 128) * KH_CDIV(s_N, 256)" in source, source
    assert "BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=16, EVEN_K=True" in source
    assert re.search(r"kh_launch\(&matmul_kernel_0_\w+_func, load_matmul_kernel_0_\w+, .*\n.*, 256, \d+, stream",
                     source)
    assert "kh_gemm_kernel" in defined(out / "kh_gemm_kernel.o")
    assert len(list(out.glob("matmul_kernel_0.*.o"))) == 1


CHANGING = '''
import torch, triton, triton.language as tl

CALLS = [0]

@triton.jit
def copy_kernel(out_ptr, in_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(in_ptr + offs, mask=offs < n), mask=offs < n)

def kernel(x):
    y = torch.empty_like(x)
    CALLS[0] += 1
    block = 256 if CALLS[0] == 1 else 512   # the second call launches differently: not a fixed sequence
    copy_kernel[(triton.cdiv(x.numel(), block),)](y, x, x.numel(), BLOCK=block)
    return y
'''
HOST_WORK = CHANGING.replace("    CALLS[0] += 1\n", "    x = x * 1.0\n").replace(
    "256 if CALLS[0] == 1 else 512", "256")

SCRATCH = '''
import torch, triton, triton.language as tl

@triton.jit
def copy_kernel(out_ptr, in_ptr, M, N, BLOCK: tl.constexpr):   # device-side TMA descriptors live in global scratch
    src = tl.make_tensor_descriptor(in_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK, BLOCK])
    dst = tl.make_tensor_descriptor(out_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK, BLOCK])
    pm, pn = tl.program_id(0), tl.program_id(1)
    dst.store([pm * BLOCK, pn * BLOCK], src.load([pm * BLOCK, pn * BLOCK]))

def kernel(x):
    y = torch.empty_like(x)
    copy_kernel[(triton.cdiv(x.shape[0], 32), triton.cdiv(x.shape[1], 32))](y, x, x.shape[0], x.shape[1], BLOCK=32)
    return y
'''


@pytest.mark.parametrize("code, says", [
    (CHANGING, "depends on the input data"),
    (HOST_WORK, "torch work besides allocations and views around its launches (aten.mul)"),
    (SCRATCH, "needs global scratch memory")])
def test_refused_in_one_line_with_exit_4(tmp_path, code, says):
    assert_refused(tmp_path, code, "softmax.yaml", "M=64,N=300", says)


def assert_refused(tmp_path: Path, code: str, task: str, shape: str, says: str) -> None:
    """`harness export` of this kernel file: exit 4 and one line that says why."""
    kernel = tmp_path / "k.py"
    kernel.write_text(code)
    p = harness("export", str(kernel), "--task", str(TASKS / task), "--shape", shape, "-o", str(tmp_path / "c"),
                "--no-build")
    assert p.returncode == 4, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "export refused" in lines[0] and says in lines[0], p.stderr


@pytest.mark.parametrize("args, says", [
    (["tasks/demos/nope.py", "--task", "tasks/softmax.yaml"], "neither a run folder nor a kernel file"),
    (["tasks/demos/softmax_4_tuned.py", "--task", "tasks/softmax.yaml", "--shape", "Q=3"], "NAME=VALUE pairs"),
    (["tasks/demos/softmax_4_tuned.py", "--task", "tasks/softmax.yaml", "--shape", "M=x"], "is not an integer"),
])
def test_bad_input_one_line_exit_2(tmp_path, args, says):
    p = harness("export", *args, "-o", str(tmp_path / "c"))
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], p.stderr


def test_grid_expressions_come_from_the_recordings():
    from harness.export.derive import derive, divisors_of

    def grid(m: int, n: int) -> int:
        return -(-m // 128) * -(-n // 256)

    shapes = [(4096, 4096), (4095, 4096), (3996, 4096), (3072, 4096), (4096, 4080), (4096, 2048)]
    e = derive([({"M": m, "N": n}, grid(m, n)) for m, n in shapes], divisors_of([128, 256, 64, True]))
    assert e.text == "cdiv(M, 128) * cdiv(N, 256)" and not e.fixed
    assert e.c("s_") == "KH_CDIV(s_M, 128) * KH_CDIV(s_N, 256)"
    # a value no expression of the sizes gives: fixed at the exported shape, and said so
    e = derive([({"M": 64}, 7), ({"M": 63}, 11), ({"M": 48}, 5)], [16])
    assert e.fixed and e.text == "7"


def test_the_aot_tool_gets_a_typed_target():
    """triton.tools.compile builds GPUTarget(*target.split(":")); with plain text the architecture stays a string,
    which Triton 3.6 compares with numbers (TypeError in get_ptxas: every export failed on the H200's triton 3.6)."""
    from triton.backends.compiler import GPUTarget

    from harness.export.capture import TargetText

    target = GPUTarget(*TargetText("cuda:90:32").split(":"))
    assert (target.backend, target.arch, target.warp_size) == ("cuda", 90, 32)
    assert TargetText("cuda:90:32") == "cuda:90:32"  # still the text where the tool prints or hashes it


def test_the_c_library_left_to_the_program_includes_glibcs_fortified_calls():
    """The H200 image's compiler defines _FORTIFY_SOURCE: the CuTe DSL runtime's printf became `__printf_chk`."""
    from harness.export.cute import ALLOWED_UNDEFINED as cute
    from harness.export.symbols import ALLOWED_UNDEFINED as triton

    for allowed in (cute, triton):
        assert all(allowed.match(n) for n in ("printf", "__printf_chk", "__fprintf_chk", "__memcpy_chk", "cuLaunchKernel"))
        assert not any(allowed.match(n) for n in ("system", "dlopen", "execve", "__system_chk", "fork"))


def test_the_test_programs_flush_assembles_and_only_reads(tmp_path):
    """The C test program times a call as the harness does, after an L2 flush by this PTX (the driver JIT-compiles
    it on the GPU; ptxas here): 16-byte loads in a loop, and one store behind a test the buffer's ones never pass."""
    from harness.export.flush import PTX, c_string
    from rungs.ladder.dumps import tool

    ptxas, cuobjdump = tool("ptxas"), tool("cuobjdump")
    assert ptxas and cuobjdump
    (tmp_path / "flush.ptx").write_text(PTX)
    subprocess.run([ptxas, "-arch=sm_90a", str(tmp_path / "flush.ptx"), "-o", str(tmp_path / "flush.cubin")],
                   check=True, capture_output=True)
    sass = subprocess.run([cuobjdump, "--dump-sass", str(tmp_path / "flush.cubin")], capture_output=True, text=True,
                          check=True).stdout
    assert "LDG.E.128" in sass
    assert sass.count("STG") == 1 and "0x7eadbeef" in sass and "@P0 EXIT" in sass  # the store sits behind the test
    assert c_string().count("\\n\"") == len(PTX.splitlines())
    spin = sass[sass.index("Function : kh_spin"):].split("Function :")[1]  # the spin before each timed call
    assert "SR_CLOCKLO" in spin and "LDG" not in spin and "STG" not in spin


def test_a_forged_capture_never_reaches_the_makefile_or_the_c(tmp_path):
    """capture.json is written by the process that runs the candidate: names and values that would run in `make` on
    the host or end a C token are refused in one line; a link in the recording's folder is not copied."""
    from harness.export.untrusted import check_capture, copyable
    from rungs.core.errors import HarnessError

    (tmp_path / "k.c").write_text("int x;\n")
    (tmp_path / "k.h").write_text("")
    honest = {"builds": [{"func": "k_0_ab", "files": ["k.c", "k.h"], "signature": "*fp32:16, i32", "kernel": "k"}],
              "variants": [{"shape": {"N": 8}}]}
    check_capture(honest, tmp_path)
    forged = [{"files": ["$(shell touch /tmp/owned).c"]}, {"files": ["../k.c"]}, {"func": "x,exit(1)"},
              {"function_name": "a */ system(0); /* b"}, {"signature": "i32\nall:"}]
    for extra in forged:
        with pytest.raises(HarnessError):
            check_capture({"builds": [{**honest["builds"][0], **extra}]}, tmp_path)
    (tmp_path / "secret.txt").write_text("root's")
    (tmp_path / "leak.txt").symlink_to(tmp_path / "secret.txt")
    assert copyable(tmp_path / "k.c") and not copyable(tmp_path / "leak.txt")


def test_a_kernel_that_prints_without_end_fails_the_export_in_one_line(tmp_path):
    """The recording process's output goes to size-limited files, not into the harness's memory."""
    kernel = tmp_path / "k.py"
    kernel.write_text("import os\nwhile True:\n    os.write(1, b'x' * (1 << 20))\n")
    p = harness("export", str(kernel), "--task", str(TASKS / "softmax.yaml"), "--shape", "M=64,N=300", "-o",
                str(tmp_path / "c"), "--no-build")
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 3 and len(lines) == 1, p.stderr
    assert "File too large" in lines[0] or "recording process died" in lines[0], p.stderr  # EFBIG, or SIGXFSZ
