"""`harness export` of CuTe DSL kernels on a CPU (sm_90a): each compiled function written by its own export_to_c, a C
entry calling their host entries, `make` building the library and a shared object linked with the CuTe DSL runtime
and the CUDA runtime (nothing left undefined but the C library), and the refusals, each one line with exit 4."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import TASKS, skip_unless_installed
from test_export import DEMOS, assert_refused, defined, harness

skip_unless_installed("cutlass", "nvidia-cutlass-dsl is not installed (pip install '.[cute]')")
needs_cuda = pytest.mark.skipif(not all(Path("/usr/local/cuda", f).is_file() for f in
                                        ("include/cuda_runtime.h", "lib64/libcudart_static.a")),
                                reason="needs the CUDA toolkit (export_to_c's header includes cuda_runtime.h; "
                                       "the shared object links the static CUDA runtime)")


def undefined_dynamic(shared: Path) -> set[str]:
    out = subprocess.run(["nm", "-D", "--undefined-only", str(shared)], capture_output=True, text=True,
                         check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


@needs_cuda
@pytest.mark.timeout(300)
def test_gemm_cute_exports_links_and_rebuilds(tmp_path):
    out = tmp_path / "c"
    p = harness("export", str(DEMOS / "gemm_cute_4_fast.py"), "--task", str(TASKS / "gemm_cute.yaml"),
                "--shape", "M=256,N=256,K=256", "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert "symbols checked" in p.stderr and "1 launch(es) of gemm_host" in p.stderr
    source = (out / "kh_gemm_cute_kernel.c").read_text()
    # the one compiled call, with the caller's pointers for A, B (its [K, N] storage, seen as (N, K)) and C
    assert "cute_dsl_kh_gemm_cute_kernel_k0_wrapper(&kh_gemm_cute_kernel_k0_module, &a0, &a1, &a2, " \
           "(cudaStream_t)stream)" in source, source
    assert ".data = (void *)(uintptr_t)in1" in source and ".data = (void *)(uintptr_t)out0" in source
    # the layouts are compiled in: only the exported shape, and the 16-byte alignment TMA was told of
    assert "(s_M == 256 && s_N == 256 && s_K == 256) && in0 % 16 == 0 && in1 % 16 == 0 && out0 % 16 == 0" in source
    assert "kh_gemm_cute_kernel" in defined(out / "kh_gemm_cute_kernel.o")
    assert any(n.startswith("_mlir_kh_gemm_cute_kernel_k0__mlir_ciface_cutlass_gemm_host")
               for n in defined(out / "kh_gemm_cute_kernel_k0.o"))
    shared = out / "libkh_gemm_cute_kernel.so"
    assert {"kh_gemm_cute_kernel", "kh_gemm_cute_kernel_unload"} <= defined(shared)
    left = {n.split("@")[0] for n in undefined_dynamic(shared)}
    assert not {n for n in left if n.startswith("cu")}, left  # the CUDA runtime is linked in; cudart loads libcuda
    readme = (out / "README.md").read_text()
    assert "M=256, N=256, K=256: `gemm_host`" in readme and "in0 % 16 == 0" in readme
    # the sources still build from scratch with the Makefile alone (export_to_c's objects are kept by `clean`)
    subprocess.run(["make", "clean"], cwd=out, check=True, capture_output=True)
    subprocess.run(["make"], cwd=out, check=True, capture_output=True)
    assert shared.is_file() and (out / "kh_gemm_cute_kernel_test.o").is_file()


@needs_cuda
@pytest.mark.timeout(300)
def test_softmax_cute_two_shapes_two_compiled_functions(tmp_path):
    out = tmp_path / "c"
    p = harness("export", str(DEMOS / "softmax_cute_4_fast.py"), "--task", str(TASKS / "softmax_cute.yaml"),
                "--shape", "M=64,N=1024", "--shape", "M=8,N=4099", "-o", str(out))
    assert p.returncode == 0, p.stderr
    source = (out / "kh_softmax_cute_kernel.c").read_text()
    assert "(s_M == 64 && s_N == 1024) && in0 % 16 == 0" in source
    assert "(s_M == 8 && s_N == 4099)" in source
    assert "cute_dsl_kh_softmax_cute_kernel_k0_wrapper" in source and "cute_dsl_kh_softmax_cute_kernel_k1_wrapper" in source
    assert {p.name for p in out.glob("kh_softmax_cute_kernel_k*.o")} == {"kh_softmax_cute_kernel_k0.o",
                                                                        "kh_softmax_cute_kernel_k1.o"}
    test = (out / "kh_softmax_cute_kernel_test.c").read_text()
    assert "usage: %s REPS M N in0.bin out0.bin BYTES" in test  # the program harness/export/verify.py runs


COPY = '''
import torch, cutlass, cutlass.cute as cute
import cuda.bindings.driver as cuda
from cutlass.cute.runtime import from_dlpack

CALLS = [0]

@cute.kernel
def copy_kernel(mX: cute.Tensor, mY: cute.Tensor, n: cutlass.Int32):
    tid, _, _ = cute.arch.thread_idx()
    bid, _, _ = cute.arch.block_idx()
    i = bid * 128 + tid
    if i < n:
        mY[i] = mX[i]

@cute.jit
def copy_launch(mX: cute.Tensor, mY: cute.Tensor, n: cutlass.Int32, stream: cuda.CUstream):
    copy_kernel(mX, mY, n).launch(grid=[(n + 127) // 128, 1, 1], block=[128, 1, 1], stream=stream)

def kernel(x):
    y = torch.empty_like(x)
    mx = from_dlpack(x.view(-1), assumed_align=16).mark_layout_dynamic()
    my = from_dlpack(y.view(-1), assumed_align=16).mark_layout_dynamic()
    CALLS[0] += 1
    copy_launch(mx, my, x.numel(), cuda.CUstream(torch.cuda.current_stream().cuda_stream))
    return y
'''
CHANGING = COPY.replace("copy_launch(mx, my, x.numel(),", "copy_launch(mx, my, x.numel() - CALLS[0] % 2,")
HOST_WORK = COPY.replace("    CALLS[0] += 1\n", "    x = x * 2.0\n")
SCRATCH_VIEW = COPY.replace("from_dlpack(y.view(-1)", "from_dlpack(torch.empty_like(x).view(-1)")


@needs_cuda
@pytest.mark.timeout(200)
def test_dynamic_layouts_and_numbers_are_passed_as_recorded(tmp_path):
    kernel = tmp_path / "k.py"
    kernel.write_text(COPY)
    out = tmp_path / "c"
    p = harness("export", str(kernel), "--task", str(TASKS / "softmax_cute.yaml"), "--shape", "M=4,N=300",
                "-o", str(out))
    assert p.returncode == 0, p.stderr
    source = (out / "kh_softmax_cute_kernel.c").read_text()
    # a direct @cute.jit call: its runtime arguments, the dynamic extent in export_to_c's struct, the Int32 by value
    assert "kh_softmax_cute_kernel_k0_Tensor_mX_t a0 = { .data = (void *)(uintptr_t)in0, .dynamic_shapes = {1200} };" \
        in source, source
    assert "int32_t a2 = 1200;" in source and "&a0, &a1, a2, (cudaStream_t)stream);" in source
    assert "symbols checked" in p.stderr


@pytest.mark.timeout(200)
@pytest.mark.parametrize("code, says", [
    (CHANGING, "depends on the input data"),
    (HOST_WORK, "torch work besides allocations and views around its launches (aten.mul)"),
    (SCRATCH_VIEW, "neither an input nor an output")], ids=["changing", "host_work", "scratch_buffer"])
def test_refused_in_one_line_with_exit_4(tmp_path, code, says):
    assert_refused(tmp_path, code, "softmax_cute.yaml", "M=4,N=300", says)


@pytest.mark.timeout(200)
def test_gemm_cute_padding_shape_is_refused(tmp_path):
    """At a shape no multiple of 8 the demo pads A and B with torch before its launch: host work the C entry would
    not do."""
    p = harness("export", str(DEMOS / "gemm_cute_4_fast.py"), "--task", str(TASKS / "gemm_cute.yaml"),
                "--shape", "M=33,N=47,K=65", "-o", str(tmp_path / "c"), "--no-build")
    assert p.returncode == 4, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "torch work besides allocations and views" in lines[0], p.stderr


def test_shapes_differing_only_in_a_flag_cannot_share_one_entry():
    from harness.export import ExportRefused
    from harness.export.cute import plan_cute

    def variant(causal: bool) -> dict:
        return {"shape": {"S": 64, "causal": causal}, "launches": [{"kernel": "attn", "build": 0, "params": []}]}

    capture = {"variants": [variant(True)], "builds": [{"func": "kh_k0"}]}
    [one] = plan_cute(capture)
    assert one.shapes == [{"S": 64}] and one.launches[0].func == "kh_k0"
    capture["variants"].append(variant(False))
    with pytest.raises(ExportRefused, match="differ only in values the C entry does not take"):
        plan_cute(capture)
