"""The CuTe DSL backend (rungs/backends/cute.py, cute_worker.py) on a CPU: compile capture of the softmax_cute demos
for sm_90a, the compiler's message, and the launch gate's counting and skipping.

No GPU here, so the gate tests replace one thing: the wheel's native host launcher (the ctypes `capi_func` a
JitExecutor calls, and `JitCompiledFunction.to`, which loads the cubin on a device) by a recorder. Everything of
ours and every Python layer of the wheel above it is real.
"""
from __future__ import annotations

import contextlib
import importlib.util
import itertools
import re
import types
from pathlib import Path
from typing import Any, Iterator

import pytest
import torch

from conftest import skip_unless_installed  # noqa: E402

skip_unless_installed("cutlass", "nvidia-cutlass-dsl is not installed (pip install '.[cute]')")

cuda = pytest.importorskip("cuda.bindings.driver")
from rungs import backends  # noqa: E402
from rungs.worker.launch_gate import Gate  # noqa: E402
from rungs.backends.cute import BACKEND  # noqa: E402
from rungs.backends import aot_device  # noqa: E402
from rungs.backends.cute_worker import CuteWorker  # noqa: E402
from rungs.ladder.dumps import disassemble, tool  # noqa: E402

DEMOS = Path(__file__).resolve().parent.parent / "tasks" / "demos"
_names = itertools.count()


@pytest.fixture(autouse=True)
def cpu_arch(monkeypatch, tmp_path):
    """What worker_env gives a CPU worker, and a scratch folder for the kept PTX/CUBIN."""
    for key, value in BACKEND.worker_env("cpu").items():
        monkeypatch.setenv(key, value)
    import tempfile

    monkeypatch.chdir(tmp_path)  # the worker's cwd is its scratch: a compile that writes beside it (the gate's
    # tests, after a capture kept PTX/CUBIN) writes there, not into the checkout
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the worker's $TMPDIR; not the environment's: the
    # sandboxed cuobjdump of the dumps rung must keep its own writable /tmp
    from cutlass.cutlass_dsl import CuTeDSL

    monkeypatch.setattr(CuTeDSL._get_dsl().envar, "arch", "sm_90a")  # the singleton read the env at import
    monkeypatch.setattr(CuTeDSL._get_dsl().envar, "dump_dir", str(tmp_path))  # and its cwd then, as the dump folder


class Launches:
    """What the protocol hands install_compile_capture (rungs.worker.compile_phase.Launches today, moving in the
    redesign): `.compiled`, `.count`, `.shape`, `.mark(in_compiler)`; here the marks are kept to see where an error
    was."""

    def __init__(self) -> None:
        self.compiled: list[tuple[str, Any, Any]] = []
        self.count = 0
        self.shape: Any = None
        self.marks: list[bool] = []

    def mark(self, in_compiler: bool) -> None:
        self.marks.append(in_compiler)

    @property
    def in_compiler(self) -> bool:
        return bool(self.marks) and self.marks[-1]


def load(name: str) -> types.ModuleType:
    """A demo as a fresh module (its per-shape cache of compiled functions starts empty)."""
    spec = importlib.util.spec_from_file_location(f"cute_demo_{next(_names)}", DEMOS / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("source, rule", [
    ("def go(c, packed):\n    c.to(None).capi_func(packed)\n", "private"),  # the native launcher, uncounted
    ("def go(c, args):\n    c.run_compiled_program(args)\n", "private"),
    ("def go(c):\n    return c.jit_module.engine\n", "private"),
    ("def go(c):\n    return getattr(c, '_default_executor')\n", "private"),
    ("from cutlass.cute.runtime import ctypes\n", "ctypes"),  # the wheel re-exports ctypes
    ("import cutlass.cute as cute\nP = cute.runtime.ctypes.c_void_p\n", "ctypes"),
    ("import cutlass.torch as ct\nL = ct.cuda.cuLaunchKernel\n", "private"),  # and the CUDA driver
    ("from cutlass.base_dsl.runtime import cuda as helpers\n", "private"),
    ("from cutlass.base_dsl.jit_executor import JitExecutor\n", "private"),
    ("import cutlass._mlir.execution_engine\n", "private"),
    ("from cutlass.cute.runtime import load_module\n", "private"),
    # the driver's module may be imported for its stream type; its launch calls stay refused, by any path
    ("import cuda.bindings.driver as drv\ndrv.cuLaunchKernel(0)\n", "private"),
    ("from cuda.bindings.driver import cuLaunchKernel\n", "private"),
    ("import cuda.bindings.driver\nL = cuda.bindings.driver.cuLaunchKernel\n", "private"),
    ("import cuda.bindings.runtime\n", "private"),
    ("import cuda\n", "private"),
    # the CUDA C++ helper's public calls only
    ("from rungs.backends.cuda_api import _launch\n", "harness"),
    ("import rungs.backends.cuda_api as api\napi._load(0, 0)\n", "harness"),
    # the original launcher, from the gate's closure
    ("def go(c):\n    return type(c).run.__closure__[0].cell_contents\n", "frames"),
])
def test_screen_refuses_the_ways_past_the_gate(source, rule):
    import ast

    from rungs.ladder.static_checks import screen

    assert [f.rule for f in screen(ast.parse(source))] == [rule]


def test_screen_is_quiet_on_honest_cute_idioms():
    import ast

    from rungs.ladder.static_checks import screen

    source = ("import cutlass\nimport cutlass.cute as cute\nimport cutlass.utils as utils\n"
              "from cutlass.cute.runtime import from_dlpack, make_fake_tensor\n"
              "import cuda.bindings.driver as cuda\nfrom cuda.bindings.driver import CUstream\n"
              "from rungs.backends.cuda_api import compile_cuda, launch\n"
              "S = cuda.CUstream(0)\n"
              "SM = utils.HardwareInfo().get_max_active_clusters(1)\n"
              "def k(x):\n    c = cute.compile[cute.KeepPTX](None)\n    return from_dlpack(x, assumed_align=16), c\n")
    assert screen(ast.parse(source)) == []


def test_registered_with_the_protocol():
    backend = backends.get("cute")
    assert isinstance(backend, backends.Backend) and backend.verifies_on_cpu is False
    assert backend.label == "CuTe DSL" and backend.version() == "4.8.1"
    assert isinstance(backends.load_worker(name="cute"), backends.WorkerBackend)
    assert BACKEND.worker_env("cpu")["CUTE_DSL_ARCH"] == "sm_90a" and "CUTE_DSL_ARCH" not in BACKEND.worker_env("cuda")


def test_compile_capture_writes_ptx_cubin_and_sass(tmp_path):
    worker, launches = CuteWorker(), Launches()
    restore = worker.install_compile_capture(False, launches)
    try:
        demo = load("softmax_cute_4_fast.py")
        for shape in ({"M": 4, "N": 7}, {"M": 16, "N": 2048}):
            launches.shape = shape
            out = demo.kernel(torch.randn(shape["M"], shape["N"]))
            assert out.shape == (shape["M"], shape["N"])  # allocated, never written: nothing ran
        demo.kernel(torch.randn(16, 2048))  # the module's cache: no second compile, one more launch
    finally:
        restore()
    assert launches.count == 3 and launches.marks == [True, False, True, False]
    assert [(name, shape) for name, _, shape in launches.compiled] == [
        ("softmax_launch", {"M": 4, "N": 7}), ("softmax_launch", {"M": 16, "N": 2048})]
    stems = [("softmax_launch" if i == 0 else f"softmax_launch.{i}", h, [s]) for i, (_, h, s) in
             enumerate(launches.compiled)]
    summaries = worker.write_compiled(stems, tmp_path / "compiled")
    assert [s["num_warps"] for s in summaries] == [4, 4]
    ptx = (tmp_path / "compiled" / "softmax_launch.1.ptx").read_text()
    assert ".target sm_90a" in ptx and "ld.global.v4" in ptx
    if tool("cuobjdump") is None:
        pytest.skip("no cuobjdump on PATH or in the Triton wheel")
    sass, _ = disassemble(tmp_path / "compiled" / "softmax_launch.1.cubin")
    assert "LDG.E.128" in sass and "STG.E.128" in sass and "SHFL.BFLY" in sass


def test_a_compile_error_is_one_line_naming_the_reason_and_line():
    worker, launches = CuteWorker(), Launches()
    restore = worker.install_compile_capture(False, launches)
    try:
        demo = load("softmax_cute_1_nocompile.py")
        with pytest.raises(Exception) as caught:
            demo.kernel(torch.randn(4, 7))
    finally:
        restore()
    assert launches.in_compiler and launches.count == 0  # left marked: the compiler's failure, not the launcher's
    error = f"{type(caught.value).__name__}: {caught.value}"
    message = BACKEND.compile_message(error)
    assert "\n" not in message and "\x1b" not in message
    assert message.startswith("`range_constexpr()` requires all arguments to be Python integers")
    bad = "for j in cutlass.range_constexpr(lane, N, 32):"
    line = next(i for i, text in enumerate((DEMOS / "softmax_cute_1_nocompile.py").read_text().splitlines(), 1)
                if bad in text)
    assert message.endswith(f"(line {line}: {bad})")


def test_compile_message_of_a_plain_python_error():
    error = ("  softmax.py:12 in softmax_kernel: y = undefined_name + 1\n"
             "NameError: name 'undefined_name' is not defined")
    assert BACKEND.compile_message(error) == ("NameError: name 'undefined_name' is not defined "
                                              "(line 12 in softmax_kernel: y = undefined_name + 1)")


# ---- the launch gate -----------------------------------------------------------------------------------------
class StandInGate(Gate):
    """The worker's gate (rungs/worker/launch_gate.Gate), recording each launch's handle and arguments and counting insides."""

    def __init__(self) -> None:
        super().__init__()
        self.launches: list[tuple[Any, tuple[Any, ...]]] = []  # type: ignore[assignment]
        self.insides = 0

    def launched(self, handle: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.launches.append((handle, args))

    @contextlib.contextmanager
    def inside(self) -> Iterator[None]:
        self.insides += 1
        with super().inside():
            yield


@pytest.fixture
def gated(monkeypatch):
    """The gate installed on the wheel, with its native launcher recorded instead of run (no GPU); undone after."""
    from cutlass.base_dsl.jit_executor import JitCompiledFunction, JitExecutor

    native: list[int] = []

    def capi_func(packed_args: Any) -> None:
        native.append(len(packed_args))

    capi_func.restype = None

    def to(self: Any, device: Any = None) -> Any:
        module = types.SimpleNamespace(capi_func=capi_func, execution_args=self.execution_args)
        return JitExecutor(module, None, False)

    from cutlass.cutlass_dsl.cuda_jit_executor import CudaDialectJitCompiledFunction

    for cls in (JitCompiledFunction, CudaDialectJitCompiledFunction):
        monkeypatch.setattr(cls, "to", to)
    gate, worker = StandInGate(), CuteWorker()
    worker.install_launch_gate(gate)
    undo_device = aot_device.install()  # the demos launch on torch's current stream: a null one here
    yield gate, native
    undo_device()
    worker._ungate()


def test_gate_counts_compiled_calls_and_skips_them(gated):
    gate, native = gated
    demo = load("softmax_cute_3_simple.py")
    x = torch.randn(4, 7)
    demo.kernel(x)
    demo.kernel(x)
    assert len(native) == 2 and len(gate.launches) == 2
    handle, args = gate.launches[0]
    assert handle.__name__ == "softmax_launch" and len(args) == 3  # the compiled function: two tensors, the stream
    gate.skip = True
    demo.kernel(x)
    assert len(native) == 2 and len(gate.launches) == 2  # the probe: nothing launched, nothing counted
    assert gate.depth == 0 and gate.insides >= 3 and len(gate.launcher_codes) >= 5


def test_gate_counts_a_direct_jit_call(gated):
    gate, native = gated
    demo = load("softmax_cute_3_simple.py")
    from cutlass.cute.runtime import from_dlpack

    x, y = torch.randn(4, 7), torch.empty(4, 7)
    stream = cuda.CUstream(0)
    demo.softmax_launch(from_dlpack(x), from_dlpack(y), stream, 4, 7)  # compiles (JIT cache) and launches
    assert len(native) == 1 and len(gate.launches) == 1
    handle, args = gate.launches[0]
    assert handle.__name__ == "softmax_launch" and args[3:] == (4, 7)  # the @cute.jit function, as it was called
    gate.skip = True
    demo.softmax_launch(from_dlpack(x), from_dlpack(y), stream, 4, 7)
    assert len(native) == 1 and len(gate.launches) == 1


def test_putting_the_launcher_back_is_tampering(gated):
    """A candidate that restores the wheel's own launcher would launch uncounted: the gate names it (tamper.check
    turns that into a refusal after the phase)."""
    from cutlass.base_dsl.jit_executor import JitExecutor

    gate, _ = gated
    assert gate.replaced() == []
    gated_run = JitExecutor.run_compiled_program
    JitExecutor.run_compiled_program = lambda self, exe_args: 0
    try:
        assert gate.replaced() == ["JitExecutor.run_compiled_program"]
    finally:
        JitExecutor.run_compiled_program = gated_run


@pytest.mark.gpu
def test_gpu_gate_counts_real_launches_and_the_probe_skips_them(monkeypatch):
    """On the GPU, nothing replaced: the demo runs, is counted, and with skip set writes nothing (NaN poison)."""
    monkeypatch.setattr(torch.utils.deterministic, "fill_uninitialized_memory", True)
    torch.use_deterministic_algorithms(True, warn_only=True)
    gate, worker = StandInGate(), CuteWorker()
    worker.install_launch_gate(gate)
    try:
        for name in ("softmax_cute_3_simple.py", "softmax_cute_4_fast.py"):
            demo = load(name)
            x = torch.randn(33, 1023, device="cuda")
            torch.testing.assert_close(demo.kernel(x), torch.softmax(x, dim=-1))
            count = len(gate.launches)
            gate.skip = True
            skipped = demo.kernel(x)
            gate.skip = False
            assert len(gate.launches) == count and torch.isnan(skipped).all()
        assert len(gate.launches) == 2
    finally:
        torch.use_deterministic_algorithms(False)
        worker._ungate()


def _flash_attn_ptx(demo_file: str, tmp_path: Path) -> str:
    """The PTX of one CuTe flash attention build (B=1 H=1 S=130 D=64, causal), through the compile capture."""
    worker, launches = CuteWorker(), Launches()
    restore = worker.install_compile_capture(False, launches)
    try:
        demo = load(demo_file)
        launches.shape = {"S": 130}
        q, k, v = (torch.randn(1, 1, 130, 64).to(torch.bfloat16) for _ in range(3))
        demo.kernel(q, k, v, True)
    finally:
        restore()
    out = tmp_path / demo_file
    worker.write_compiled([("attn", launches.compiled[0][1], [{}])], out)
    return (out / "attn.ptx").read_text()


def test_section_markers_add_nothing_to_the_timed_build_and_record_in_the_instrumented_one(tmp_path, monkeypatch):
    """The marked CuTe flash attention's timed build is the unmarked demo's, to the PTX; with the sections step's
    buffer address set (here a made-up one: this only compiles) the build reads the timers and appends records."""
    from rungs.backends import cute_sections

    marked = (DEMOS / "flash_attn_cute_5_sections.py").read_text()
    assert cute_sections.regions(marked) == ["qk", "softmax", "pv"]
    assert backends.get("cute").sections_module == "rungs.backends.cute_sections"
    timed = _flash_attn_ptx("flash_attn_cute_5_sections.py", tmp_path)
    assert timed == _flash_attn_ptx("flash_attn_cute_4_fast.py", tmp_path)
    assert "globaltimer" not in timed
    monkeypatch.setattr(cute_sections._state, "address", 0x7F0000000000)
    instrumented = _flash_attn_ptx("flash_attn_cute_5_sections.py", tmp_path)
    assert "%globaltimer" in instrumented and "%clock64" in instrumented and "atom." in instrumented


def test_the_markers_may_be_imported_but_not_the_buffer_they_write():
    """A candidate that set the markers' buffer address itself would write where it liked through the records."""
    import ast

    from rungs.ladder.static_checks import screen

    assert screen(ast.parse("from rungs.backends.cute_sections import section_begin, section_end\n")) == []
    for source in ("from rungs.backends.cute_sections import _state\n",
                   "import rungs.backends.cute_sections as s\ns._state.address = 1\n"):
        assert "harness" in [f.rule for f in screen(ast.parse(source))], source


def _compiled_sass(demo_file: str, shape: dict, args: list, tmp_path: Path) -> str:
    """The SASS of a demo's one build for `args` (its compile_for's, a fake stream after them), through the compile
    capture and the worker's own dump writer; skips without cuobjdump."""
    import cutlass

    worker, launches = CuteWorker(), Launches()
    restore = worker.install_compile_capture(False, launches)
    try:
        launches.shape = shape
        load(demo_file).compile_for(*args, cutlass.runtime.make_fake_stream())
    finally:
        restore()
    [(name, handle, built)] = launches.compiled
    worker.write_compiled([(name, handle, [built])], tmp_path / "compiled")
    if tool("cuobjdump") is None:
        pytest.skip("no cuobjdump on PATH or in the Triton wheel")
    return disassemble(tmp_path / "compiled" / f"{name}.cubin")[0]

@pytest.mark.parametrize("demo", ["flash_attn_cute_6_overlap.py", "flash_attn_cute_7_persistent.py"])
def test_the_overlapped_attention_keeps_its_wgmma_asynchronous(tmp_path, demo):
    """tasks/demos/flash_attn_cute_6_overlap.py (#38: the CuTe DSL FlashAttention with FlashAttention-3's overlap
    inside each warpgroup) and its persistent successor _7, as far as a CPU can check them: block 0's S, then S of
    block j with P V of block j-1 in the loop, then the last P V (8 HGMMAs each at head dim 128), the softmax waiting
    for S alone (`WARPGROUP.DEPBAR.LE gsb0, 0x1`) with one wait each for the three steps' last products, the two
    warpgroups taking turns on named barriers, no local memory. Whether it is right is the GPU's to say
    (benchmarks/gpu_cute_check.py runs every CuTe demo)."""
    qkvo = [torch.empty(1, 2, 512, 128, dtype=torch.bfloat16) for _ in range(4)]
    sass = _compiled_sass(demo, {"B": 1, "H": 2, "S": 512, "D": 128, "causal": True}, [*qkvo, True], tmp_path)
    hgmma = [line for line in sass.splitlines() if "HGMMA." in line]
    assert len(hgmma) == 4 * 8, len(hgmma)
    waits = re.findall(r"WARPGROUP\.DEPBAR\.LE gsb0, (0x\d)", sass)
    assert sorted(waits) == ["0x0", "0x0", "0x0", "0x1"], waits
    # the overlap itself: the loop's softmax (its exp2s) sits between the wait for S and the wait for P V. ptxas may
    # move the second wait up (it does in the CUDA C++ and TileLang kernels whose P V reads P from registers)
    loop = sass[sass.index("WARPGROUP.DEPBAR.LE gsb0, 0x1"):]
    assert loop[:loop.index("WARPGROUP.DEPBAR.LE gsb0, 0x0")].count("MUFU.EX2") >= 64
    assert "LDL" not in sass and "STL" not in sass
    for op in ("UTMALDG", "SYNCS.PHASECHK", "USETMAXREG", "MUFU.EX2"):
        assert op in sass, op
    # the two MMA warpgroups' turns (ping-pong): a sync on one's named barrier, an arrive on the other's, 256 threads
    assert re.search(r"BAR\.SYNC\S* R\d+, 0x100", sass) and re.search(r"BAR\.ARV R\d+, 0x100", sass)


@pytest.mark.parametrize("causal", [False, True])
def test_the_persistent_attention_visits_every_query_block_once_in_balanced_units(causal):
    """tasks/demos/flash_attn_cute_7_persistent.py's static schedule, with the functions its kernel and host use: CTA
    b of a grid takes units b, b + grid, ...; every (head, query block) comes out exactly once whatever the grid,
    and causal units (a block and its mirror, the long one first) all read the same number of key blocks but a lone
    middle block, which is what keeps the CTAs' loads even."""
    demo = load("flash_attn_cute_7_persistent.py")
    heads = 3
    for q_blocks in range(1, 12):
        S = q_blocks * demo.BM - 5  # the last block ragged
        per_head = demo._units_per_head(q_blocks, causal)
        units = per_head * heads
        for grid in {1, 2, 5, min(units, 132)}:
            seen, work = [], []
            for cta in range(grid):
                for u in range(cta, units, grid):
                    i = u % per_head
                    unit = [demo._query_block(i, h, q_blocks, causal) for h in range(demo._tiles_in(i, q_blocks, causal))]
                    assert unit == sorted(unit, reverse=True)  # the longer block first
                    seen += [(u // per_head, m) for m in unit]
                    if u < per_head:
                        work.append(sum(demo._key_blocks(m, S, causal) for m in unit))
            assert sorted(seen) == [(h, m) for h in range(heads) for m in range(q_blocks)], (q_blocks, grid)
            work.sort(reverse=True)
            if causal:  # pairs hold q_blocks + 1 key blocks; an odd count leaves the middle block alone
                assert work == [q_blocks + 1] * (q_blocks // 2) + [(q_blocks + 1) // 2] * (q_blocks % 2), work
            else:
                assert work == [q_blocks] * q_blocks


def test_the_cluster_gemm_multicasts_b(tmp_path):
    """tasks/demos/gemm_cute_5_multicast.py (#38: gemm at cuBLAS's level), as far as a CPU can check it: launched in
    2-CTA clusters, B's tile loaded by TMA multicast (each CTA its half, into both), A by a plain TMA load, the
    barriers made before a cluster-wide sync, four HGMMA m64n256k16 a K step, no local memory. Whether it is right
    is the GPU's to say (benchmarks/gpu_cute_check.py runs every CuTe demo)."""
    abc = [torch.empty(512, 512, dtype=torch.bfloat16) for _ in range(3)]
    sass = _compiled_sass("gemm_cute_5_multicast.py", {"M": 512, "N": 512, "K": 512}, abc, tmp_path)
    assert "UTMALDG.2D.MULTICAST" in sass and re.search(r"UTMALDG\.2D ", sass)  # B shared, A the CTA's own
    assert "UCGABAR_ARV" in sass and "UCGABAR_WAIT" in sass  # the cluster's barriers exist before any multicast
    assert len(re.findall(r"HGMMA\.64x256x16", sass)) == 4
    assert "LDL" not in sass and "STL" not in sass
