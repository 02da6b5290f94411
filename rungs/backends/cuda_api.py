"""CUDA C++ kernels from Python, for `dsl: cuda` candidates: compile a source string, launch it on torch tensors.

    from rungs.backends.cuda_api import compile_cuda, launch

    SOURCE = r'''
    extern "C" __global__ void scale(float* y, const float* x, int n) { ... }
    '''
    scale = compile_cuda(SOURCE, "scale")          # once, at import or on first use
    launch(scale, grid=(blocks,), block=(256,), args=(y, x, n))

Arguments: a torch tensor passes its device pointer, an int a 32-bit int, a float a 32-bit float, a bool an 8-bit
one; a ctypes value (`ctypes.c_int64(n)`) passes as it is, and `tensor_map(t, box)` a TMA descriptor by value
(128 bytes: a `const __grid_constant__` kernel parameter). Kernels are declared `extern "C"` so that their names
are not mangled. `shared_bytes` is the dynamic shared memory; past 48 KiB the kernel's limit is raised for it.

Why this route: NVRTC (through cuda.bindings) compiles a kernel in about a second, needs no GPU and no toolkit
install (torch's CUDA wheels bring libnvrtc), so a CPU can compile for sm_90a too. Where libnvrtc is missing and
the toolkit's nvcc is present (a CPU box with /usr/local/cuda) nvcc does the same job. Both give the same cubin
(and PTX for the dumps). torch.utils.cpp_extension.load_inline needs a host compiler and a CUDA torch build and
takes tens of seconds per kernel.

This module is the one plug point of the CUDA backend: its worker half (cuda_worker.py) wraps `_build` (compile
capture: PTX as well as the cubin, nothing launched) and `_launch` (the launch gate: counted, skipped on demand).
Both are looked up at call time, so it does not matter when the candidate imported `compile_cuda` and `launch`.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

DEFAULT_ARCH = "sm_90a"
"""What a CPU compiles for (the H200); a GPU compiles for its own capability."""
BASE_OPTIONS = ("-std=c++17",)


class CudaCompileError(RuntimeError):
    """The CUDA compiler refused the source; the message is its log."""


@dataclass
class CudaKernel:
    """One compiled `extern "C" __global__` function."""

    name: str
    source: str
    options: tuple[str, ...]
    arch: str
    cubin: bytes
    ptx: str | None
    """Kept only where asked for (the compile capture writes it to the dumps)."""
    route: str
    """"nvrtc" or "nvcc"."""
    compile_s: float
    log: str = ""
    hash: str = ""
    _functions: dict[int, Any] = field(default_factory=dict, repr=False)
    """device index -> loaded CUfunction"""
    _max_shared: dict[int, int] = field(default_factory=dict, repr=False)

    def __call__(self, grid: Sequence[int], block: Sequence[int], *args: Any, shared_bytes: int = 0) -> None:
        launch(self, grid, block, args, shared_bytes)


def compile_cuda(source: str, name: str, options: Sequence[str] = ()) -> CudaKernel:
    """Compile `source` and return its kernel `name`. Raises CudaCompileError with the compiler's log."""
    return _build(source, name, tuple(options), target_arch(), False)


def launch(kernel: CudaKernel, grid: Sequence[int], block: Sequence[int], args: Sequence[Any],
           shared_bytes: int = 0) -> None:
    """Launch on the current torch stream of the current device."""
    if not isinstance(kernel, CudaKernel):
        raise TypeError(f"launch() takes a kernel from compile_cuda(), not {type(kernel).__name__}")
    _launch(kernel, tuple(grid), tuple(block), tuple(args), int(shared_bytes))


class TensorMap(ctypes.Structure):
    """A TMA descriptor (the driver's CUtensorMap: 128 opaque bytes) made by `tensor_map`, passed to a kernel by
    value. In the kernel (NVRTC has no cuda.h):

        struct __align__(64) TensorMap { unsigned long long opaque[16]; };
        extern "C" __global__ void k(const __grid_constant__ TensorMap a_map, ...)
        ... "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
            :: "r"(smem_addr), "l"(&a_map), "r"(x), "r"(y), "r"(bar_addr)
    """

    _fields_ = [("opaque", ctypes.c_uint64 * 16)]


_TMA_DTYPES = {"bfloat16": "BFLOAT16", "float16": "FLOAT16", "float32": "FLOAT32", "float64": "FLOAT64",
               "int32": "INT32", "int64": "INT64", "uint8": "UINT8", "int8": "UINT8"}
_TMA_SWIZZLES = {0: "NONE", 32: "32B", 64: "64B", 128: "128B"}


def tensor_map(tensor: Any, box: Sequence[int], swizzle: int = 128) -> TensorMap:
    """A TMA descriptor of a CUDA tensor, for `cp.async.bulk.tensor` loads (and stores) of `box`-shaped tiles.

    `box` is the tile in the tensor's own dimension order (outermost first, like `tensor.shape`); the kernel's
    coordinates are innermost first ({x = column, y = row} for a 2-D tile). `swizzle` (0, 32, 64, 128 bytes) is the
    shared-memory swizzle TMA writes, which a wgmma descriptor then names (128: swizzle mode 1). Elements past the
    tensor's edge read as zero, so edge tiles need no masks. The tensor must stay alive while kernels use the map.
    Raises ValueError, in one line, for what TMA cannot do (its limits are the driver's cuTensorMapEncodeTiled's)."""
    import torch

    if not isinstance(tensor, torch.Tensor):
        raise ValueError(f"tensor_map() takes a CUDA tensor, not {type(tensor).__name__}")
    return _tensor_map(tensor, tuple(int(b) for b in box), int(swizzle))


def _check_tma(tensor: Any, box: tuple[int, ...], swizzle: int) -> tuple[str, list[int]]:
    """What TMA needs of a tensor and a box, checked here so a mistake is one line (the driver says only
    CUDA_ERROR_INVALID_VALUE); returns the tensor's dtype name and its outer strides in bytes."""
    dtype = str(tensor.dtype).removeprefix("torch.")
    if dtype not in _TMA_DTYPES:
        raise ValueError(f"tensor_map(): TMA has no {dtype} element type ({', '.join(_TMA_DTYPES)})")
    if swizzle not in _TMA_SWIZZLES:
        raise ValueError(f"tensor_map(): swizzle {swizzle} is not one of 0, 32, 64, 128 (bytes)")
    rank, size = tensor.dim(), tensor.element_size()
    if not 1 <= rank <= 5 or len(box) != rank:
        raise ValueError(f"tensor_map(): a box of {rank} dimensions (1-5) for a {rank}-d tensor, got {box}")
    if tensor.stride(-1) != 1:
        raise ValueError("tensor_map(): the innermost dimension must be contiguous (stride 1)")
    strides = [tensor.stride(i) * size for i in range(rank - 1)]
    if tensor.data_ptr() % 16 or any(st % 16 for st in strides):
        raise ValueError(f"tensor_map(): the address and the strides in bytes must be multiples of 16 "
                         f"(address % 16 = {tensor.data_ptr() % 16}, strides {strides})")
    if any(not 1 <= b <= 256 for b in box):
        raise ValueError(f"tensor_map(): every box dimension must be 1-256, got {box}")
    if swizzle and box[-1] * size > swizzle:
        raise ValueError(f"tensor_map(): the box's innermost row is {box[-1] * size} bytes, more than the {swizzle}-byte "
                         "swizzle span (split the tile into several boxes)")
    if box[-1] * size % 16:
        raise ValueError(f"tensor_map(): the box's innermost row must be a multiple of 16 bytes, got {box[-1] * size}")
    return dtype, strides


def _tensor_map(tensor: Any, box: tuple[int, ...], swizzle: int) -> TensorMap:
    """tensor_map's work; a seam like _build and _launch: the CPU compile capture (cuda_worker.py), which launches
    nothing, checks the arguments and hands back a blank descriptor."""
    if tensor.device.type != "cuda":
        raise ValueError(f"tensor_map() takes a CUDA tensor, not a {tensor.device.type} one")
    # A map is a function of these alone (address, layout, box), never of the values: made and checked once, it
    # serves every later call on the same tensor (checking and encoding through cuda.bindings cost about 20 us of
    # host time a map on the H200's host, which a 200 us gemm launched in a loop feels).
    key = (tensor.device.index, tensor.data_ptr(), tensor.shape, tensor.stride(), tensor.dtype, box, swizzle)
    made = _maps.get(key)
    if made is None:
        dtype, strides = _check_tma(tensor, box, swizzle)
        if len(_maps) >= 256:
            _maps.clear()
        made = _maps[key] = _encoded(tensor, dtype, strides, box, swizzle)
    return made


_maps: dict[tuple[Any, ...], TensorMap] = {}


def _encoded(tensor: Any, dtype: str, strides: list[int], box: tuple[int, ...], swizzle: int) -> TensorMap:
    rank = tensor.dim()
    from cuda.bindings import driver

    u64, u32 = driver.cuuint64_t, driver.cuuint32_t
    err, made = driver.cuTensorMapEncodeTiled(
        getattr(driver.CUtensorMapDataType, f"CU_TENSOR_MAP_DATA_TYPE_{_TMA_DTYPES[dtype]}"), rank, tensor.data_ptr(),
        [u64(d) for d in reversed(tensor.shape)], [u64(st) for st in reversed(strides)],
        [u32(b) for b in reversed(box)], [u32(1)] * rank, driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        getattr(driver.CUtensorMapSwizzle, f"CU_TENSOR_MAP_SWIZZLE_{_TMA_SWIZZLES[swizzle]}"),
        driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    _check(err, f"cuTensorMapEncodeTiled (shape {tuple(tensor.shape)}, box {tuple(box)}, swizzle {swizzle})")
    out = TensorMap()
    ctypes.memmove(ctypes.addressof(out), made.getPtr(), ctypes.sizeof(out))
    return out


def target_arch() -> str:
    """sm_90a on a CPU (or HARNESS_CUDA_ARCH); on a GPU its own capability, with the `a` features on Hopper and
    Blackwell (wgmma, setmaxnreg) since a kernel compiled there runs nowhere else."""
    if os.environ.get("HARNESS_CUDA_ARCH"):
        return os.environ["HARNESS_CUDA_ARCH"]
    try:
        import torch

        if torch.cuda.is_available():
            major, minor = torch.cuda.get_device_capability()
            return f"sm_{major}{minor}" + ("a" if major in (9, 10) else "")
    except Exception:  # noqa: BLE001 - no usable torch CUDA: compile for the default
        pass
    return DEFAULT_ARCH


def compiler_route() -> str:
    """"nvrtc" where libnvrtc loads, else "nvcc" where the toolkit is found; raises where neither is."""
    if _nvrtc() is not None:
        return "nvrtc"
    if nvcc_path() is not None:
        return "nvcc"
    raise CudaCompileError("no CUDA compiler: neither libnvrtc (pip install nvidia-cuda-nvrtc) nor nvcc was found")


def nvcc_path() -> str | None:
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")):
        if home and (Path(home) / "bin" / "nvcc").is_file():
            return str(Path(home) / "bin" / "nvcc")
    found = shutil.which("nvcc")
    if found:
        return found
    return "/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").is_file() else None


def compiler_version() -> str:
    """"CUDA 13.0" from NVRTC's version, or from nvcc's banner."""
    nvrtc = _nvrtc()
    if nvrtc is not None:
        _, major, minor = nvrtc.nvrtcVersion()
        return f"CUDA {major}.{minor}"
    nvcc = nvcc_path()
    if nvcc is None:
        return "not installed"
    banner = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60).stdout
    release = banner.rsplit("release ", 1)[-1].split(",")[0] if "release " in banner else "?"
    return f"CUDA {release}"


_nvrtc_module: list[Any] = []


def _nvrtc() -> Any:
    """cuda.bindings.nvrtc when libnvrtc can be loaded, else None (checked once)."""
    if not _nvrtc_module:
        try:
            from cuda.bindings import nvrtc

            nvrtc.nvrtcVersion()[0]  # loads the library: raises where it is missing
            _nvrtc_module.append(nvrtc)
        except Exception:  # noqa: BLE001 - no cuda-bindings, or no libnvrtc
            _nvrtc_module.append(None)
    return _nvrtc_module[0]


SECTION_MARK = "KH_SECTION_"
"""A source that marks timing sections (KH_SECTION_BEGIN(name) ... KH_SECTION_END(name), see cuda_sections.py)
is compiled with the markers' definitions in front; any other source is compiled exactly as written."""
SECTIONS_OFF = "#define KH_SECTION_BEGIN(name)\n#define KH_SECTION_END(name)\n"
"""The markers in every build but the sections step's: nothing (the timed build's SASS is the unmarked kernel's)."""


def section_header(source: str) -> str:
    """What goes before a marked source; the sections step's instrumented build replaces this function."""
    return SECTIONS_OFF


def _prepared(source: str, name: str) -> str:
    if SECTION_MARK not in source:
        return source
    return f'{section_header(source)}#line 1 "{name}.cu"\n{source}'  # diagnostics keep the source's own lines


def _build(source: str, name: str, options: tuple[str, ...], arch: str, with_ptx: bool) -> CudaKernel:
    if not isinstance(source, str) or not isinstance(name, str):
        raise TypeError("compile_cuda(source, name): both are strings")
    t0 = time.perf_counter()
    route = compiler_route()
    text = _prepared(source, name)
    cubin, log = _compiled(route, text, name, options, arch, "cubin")
    ptx = _compiled(route, text, name, options, arch, "ptx")[0].decode() if with_ptx else None
    if name not in cubin_functions(cubin):
        raise CudaCompileError(f"error: kernel '{name}' is not in the compiled module: declare it "
                               f"extern \"C\" __global__ (C++ names are mangled)")
    digest = hashlib.sha256("\0".join((text, name, arch, *options)).encode()).hexdigest()[:16]
    return CudaKernel(name=name, source=source, options=options, arch=arch, cubin=cubin, ptx=ptx, route=route,
                      compile_s=time.perf_counter() - t0, log=log, hash=digest)


_built: dict[tuple[str, ...], tuple[bytes, str]] = {}
"""(route, source, options, arch, kind) -> (output, log): several kernels of one source compile once."""


def _compiled(route: str, source: str, name: str, options: tuple[str, ...], arch: str, kind: str) -> tuple[bytes, str]:
    key = (route, source, arch, kind, *options)
    if key not in _built:
        build = _nvrtc_build if route == "nvrtc" else _nvcc_build
        _built[key] = build(source, name, (*BASE_OPTIONS, *options), arch, kind)
    return _built[key]


def cubin_functions(cubin: bytes) -> set[str]:
    """Names of the functions in a cubin's ELF symbol table (a mangled C++ name is not its source name)."""
    import struct

    if cubin[:4] != b"\x7fELF" or cubin[4] != 2:
        return set()
    shoff, = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", cubin, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize) for i in range(shnum)]
    names: set[str] = set()
    for _, kind, _, _, offset, size, link, _, _, entsize in sections:
        if kind != 2 or not entsize:  # SHT_SYMTAB
            continue
        strtab = sections[link][4]
        for at in range(offset, offset + size, entsize):
            st_name, st_info = struct.unpack_from("<IB", cubin, at)
            if st_info & 0xF == 2:  # STT_FUNC
                end = cubin.index(b"\0", strtab + st_name)
                names.add(cubin[strtab + st_name:end].decode(errors="replace"))
    return names


def _nvrtc_build(source: str, name: str, options: tuple[str, ...], arch: str, kind: str) -> tuple[bytes, str]:
    nvrtc = _nvrtc()
    # PTX comes from a virtual architecture (compute_90a), the cubin from the real one (sm_90a).
    gpu = arch.replace("sm_", "compute_") if kind == "ptx" else arch
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), f"{name}.cu".encode(), 0, [], [])
    _nvrtc_check(nvrtc, err, "nvrtcCreateProgram")
    try:
        opts = [f"--gpu-architecture={gpu}".encode(), *(o.encode() for o in options)]
        (result,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        # A writable buffer of its own: NVRTC writes into what it is given, and `b" " * size` of size 1 is CPython's
        # shared one-byte object (an empty log wrote b"\0" into every b" " of the process: torch.load then read
        # wrong shapes).
        log_buf = bytearray(max(size, 1))
        nvrtc.nvrtcGetProgramLog(prog, log_buf)
        log = bytes(log_buf).replace(b"\0", b"").strip().decode(errors="replace")
        if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise CudaCompileError(log or str(result))
        get_size, get = ((nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX) if kind == "ptx"
                         else (nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN))
        _, size = get_size(prog)
        buf = bytearray(max(size, 1))
        _nvrtc_check(nvrtc, get(prog, buf)[0], "nvrtcGet" + kind.upper())
        out = bytes(buf)
        return out.rstrip(b"\0") if kind == "ptx" else out, log
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _nvrtc_check(nvrtc: Any, err: Any, what: str) -> None:
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise CudaCompileError(f"{what} failed: {err}")


def _nvcc_build(source: str, name: str, options: tuple[str, ...], arch: str, kind: str) -> tuple[bytes, str]:
    nvcc = nvcc_path()
    assert nvcc is not None
    with tempfile.TemporaryDirectory(prefix="cuda_api_") as tmp:
        src, out = Path(tmp) / f"{name}.cu", Path(tmp) / f"{name}.{kind}"
        src.write_text(source)
        cmd = [nvcc, f"-{kind}", f"-arch={arch}", "-O3", *options, "-o", str(out), str(src)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        log = (proc.stdout + proc.stderr).strip()
        if proc.returncode != 0:
            raise CudaCompileError(log.replace(str(src), f"{name}.cu"))
        return out.read_bytes(), log


# ---- launching (GPU only) ---------------------------------------------------------------------------------------
def _launch(kernel: CudaKernel, grid: tuple[int, ...], block: tuple[int, ...], args: tuple[Any, ...],
            shared_bytes: int) -> None:
    import torch
    from cuda.bindings import driver

    device = torch.cuda.current_device()
    function = kernel._functions.get(device) or _load(kernel, device)
    if shared_bytes > 48 * 1024 and kernel._max_shared.get(device, 0) < shared_bytes:
        attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        _check(driver.cuFuncSetAttribute(function, attr, shared_bytes)[0], "cuFuncSetAttribute")
        kernel._max_shared[device] = shared_bytes
    values = [_c_value(a) for a in args]
    pointers = (ctypes.c_void_p * max(len(values), 1))(*[ctypes.addressof(v) for v in values])
    g, b = (*grid, 1, 1)[:3], (*block, 1, 1)[:3]
    stream = torch.cuda.current_stream().cuda_stream
    direct = _driver_launch()
    if direct is not None:  # the driver's own entry through ctypes: a few microseconds, not cuda.bindings' ~40
        err = direct(int(function), *g, *b, shared_bytes, stream, ctypes.addressof(pointers), None)
        if err:
            _check(driver.CUresult(err), f"launch of {kernel.name}")
        return
    _check(driver.cuLaunchKernel(function, *g, *b, shared_bytes, driver.CUstream(stream), ctypes.addressof(pointers),
                                 0)[0], f"launch of {kernel.name}")


_direct: list[Any] = []


def _driver_launch() -> Any:
    """libcuda's cuLaunchKernel as a ctypes function (None where the library does not load: cuda.bindings then)."""
    if not _direct:
        try:
            fn = ctypes.CDLL("libcuda.so.1").cuLaunchKernel
            fn.argtypes = [ctypes.c_void_p, *[ctypes.c_uint] * 7, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
            fn.restype = ctypes.c_int
            _direct.append(fn)
        except (OSError, AttributeError):
            _direct.append(None)
    return _direct[0]


def _c_value(arg: Any) -> Any:
    import torch

    if isinstance(arg, torch.Tensor):
        if arg.device.type != "cuda":
            raise ValueError(f"a {arg.device.type} tensor was passed to a CUDA kernel")
        return ctypes.c_void_p(arg.data_ptr())
    if isinstance(arg, bool):
        return ctypes.c_bool(arg)
    if isinstance(arg, int):
        return ctypes.c_int32(arg)
    if isinstance(arg, float):
        return ctypes.c_float(arg)
    if isinstance(arg, (ctypes._SimpleCData, TensorMap)):
        return arg
    raise TypeError(f"cannot pass a {type(arg).__name__} to a CUDA kernel (tensor, int, float, bool, tensor_map() "
                    "or ctypes)")


def _load(kernel: CudaKernel, device: int) -> Any:
    from cuda.bindings import driver

    _check(driver.cuInit(0)[0], "cuInit")
    err, ctx = driver.cuCtxGetCurrent()
    if int(ctx) == 0:  # torch has not made its context current on this thread: use the same primary context
        _, dev = driver.cuDeviceGet(device)
        _, ctx = driver.cuDevicePrimaryCtxRetain(dev)
        _check(driver.cuCtxSetCurrent(ctx)[0], "cuCtxSetCurrent")
    err, module = driver.cuModuleLoadData(kernel.cubin)
    _check(err, f"loading the cubin of {kernel.name}")
    err, function = driver.cuModuleGetFunction(module, kernel.name.encode())
    _check(err, f"finding {kernel.name} in its cubin")
    kernel._functions[device] = function
    return function


def _check(err: Any, what: str) -> None:
    from cuda.bindings import driver

    if err != driver.CUresult.CUDA_SUCCESS:
        _, text = driver.cuGetErrorString(err)
        raise RuntimeError(f"{what}: {text.decode() if isinstance(text, bytes) else err}")
