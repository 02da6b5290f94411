"""Static screen of a candidate's source for known cheating tricks (called by rungs/ladder/precheck.py).

An AST pass, no code runs. Each rule names the trick it refuses, in words a model can act on. The screen is the
first of several defences (docs/threat-model.md): what it misses, the worker's guards (rungs/worker/), the
process boundary (rungs/sandbox/pool.py) and the parent's judgement catch. It errs towards refusing what an honest
kernel never needs (the garbage collector, caller frames, ctypes, the environment, sockets, processes, files,
monkeypatching) and stays quiet on what honest kernels do (torch allocations and views, triton, math, streams,
caches keyed by shapes). The whole file is screened, a demo's `if __name__ == "__main__":` check included: a skipped
block is one the candidate could make run (a rebound __name__, a `!=`).
"""
from __future__ import annotations

import ast
import functools
import types
from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    rule: str
    """Short name of the trick, e.g. 'gc', 'monkeypatch'."""
    line: int
    reason: str
    """What the code does and why it is refused."""

    def message(self) -> str:
        return f"line {self.line}: {self.reason}"


# ---- the rules ---------------------------------------------------------------------------------------------
REASONS = {
    "gc": "the garbage collector (gc) walks every live object, the harness's timers, inputs and outputs included",
    "frames": "reading call frames (sys._getframe, inspect.currentframe/stack, f_back/f_locals, __globals__, a "
              "function's __closure__ or __defaults__) reaches the harness's variables",
    "ctypes": "ctypes/cffi/mmap: raw memory access and native calls get around every check",
    "environment": "reading or changing environment variables (os.environ, os.getenv): that is where API keys live",
    "network": "network access (socket, urllib, http, requests...): a kernel has nothing to fetch or send",
    "processes": "starting or signalling processes (subprocess, os.system, os.fork, os.kill, multiprocessing): "
                 "work in another process is neither timed nor checked, and signals can reach the harness",
    "threads": "threads (threading, concurrent.futures): work running off the timed path or racing the harness's "
               "checks",
    "monkeypatch": "monkeypatching: assigning to attributes of imported modules or classes changes what the harness "
                   "measures and checks",
    "timer": "timer or synchronization tampering: replacing the functions the harness times with",
    "builtins": "editing builtins (builtins, __builtins__) changes functions the harness itself calls",
    "sys.modules": "editing sys.modules or import hooks swaps modules under the harness",
    "dynamic": "dynamic code or imports (exec, eval, compile, __import__, importlib): hides what the kernel runs "
               "or reloads the harness's modules",
    "files": "file access (open, pathlib, os file calls, shutil, glob): reading saved or expected outputs, or "
             "writing outside the scratch folder",
    "serialization": "loading or saving objects (torch.save/load, pickle, numpy.load): serving saved results "
                     "instead of computing them",
    "cache": "a cache keyed by a tensor's address or identity (data_ptr(), id(), weakref): serves a stale result "
             "when a new input lands at the same address",
    "private": "private torch, triton or CUDA bindings (torch._C, torch.library, dispatch modes, swapping "
               "Triton's driver, the CuTe DSL's executor and runtime internals, cuda-python, cupy): reach past the "
               "APIs the harness checks (launch counting, L2 persistence windows, dispatch overrides)",
    "harness": "importing the harness's own modules (rungs, harness, __main__)",
    "module": "a module outside what kernels import (torch, triton, numpy, einops, the DSLs, math and a few pure "
              "standard modules: ALLOWED_ROOTS): each standard module can read files or run strings by a name the "
              "screen does not know (argparse reads @files, xml and site open paths, webbrowser starts processes)",
    "torch-codegen": "torch.compile / inductor / TorchScript: the kernel must be written in the task's DSL, not "
                     "generated from torch code",
    "introspection": "walking the class graph (__subclasses__, __mro__ edits, __class__ assignment) or dynamic "
                     "attribute lookup on a module hides which objects the kernel reaches",
    "limits": "changing resource limits or signal handlers (resource, signal) undoes the sandbox's limits",
    "namespace": "reading a module's namespace or hidden attributes (module.__dict__, vars(module), getattr(x, "
                 "'__...__'), getattr passed around as a value, operator.attrgetter): reaches modules and functions, "
                 "the harness's among them, without naming them",
    "inspect": "the inspect module's object-finding functions (getmodule, getmembers, getsourcefile, unwrap, "
               "getclosurevars, signature...): reach the harness's modules and the launchers its gate wraps without "
               "naming them",
    "interpreter": "Python in a @triton.jit body that can tell Triton's CPU interpreter from the compiled build "
                   "(introspection builtins such as hasattr or isinstance, private or dunder attributes, a value's "
                   ".handle, `is` other than against None, plain Python functions or objects of the file called "
                   "from the body): on a CPU the verdict is the interpreter's, so the GPU would run other code than "
                   "the one judged",
    "code": "forging or swapping a function's code (__code__, co_filename and the other co_ attributes, "
            "code.replace(co_...=), types.CodeType, types.FunctionType): candidate code passed off as the harness's "
            "or Triton's escapes the worker's op trace",
}

# Modules whose import alone is refused: module (or package prefix) -> rule.
IMPORT_RULES = {
    "gc": "gc", "ctypes": "ctypes", "_ctypes": "ctypes", "cffi": "ctypes", "mmap": "ctypes",
    "socket": "network", "ssl": "network", "urllib": "network", "urllib3": "network", "http": "network",
    "requests": "network", "httpx": "network", "aiohttp": "network", "ftplib": "network", "smtplib": "network",
    "telnetlib": "network", "xmlrpc": "network", "websocket": "network", "websockets": "network",
    "paramiko": "network", "asyncio": "network",
    "subprocess": "processes", "multiprocessing": "processes", "pty": "processes",
    "threading": "threads", "_thread": "threads", "concurrent": "threads",
    "builtins": "builtins", "__builtin__": "builtins",
    "importlib": "dynamic", "imp": "dynamic", "code": "dynamic", "codeop": "dynamic", "runpy": "dynamic",
    "pkgutil": "dynamic", "pydoc": "dynamic", "zipimport": "dynamic",  # pkgutil.resolve_name, pydoc.locate import
    "pickle": "serialization", "_pickle": "serialization", "cPickle": "serialization", "marshal": "serialization",
    "shelve": "serialization", "dill": "serialization", "cloudpickle": "serialization", "joblib": "serialization",
    "copyreg": "serialization",
    "shutil": "files", "glob": "files", "tempfile": "files", "pathlib": "files", "fileinput": "files",
    # Modules that open a file by its name for you (linecache.getline("job.json", 1) is open() by another name).
    "linecache": "files", "tokenize": "files", "zipfile": "files", "tarfile": "files", "gzip": "files",
    "bz2": "files", "lzma": "files", "sqlite3": "files", "_sqlite3": "files", "dbm": "files", "configparser": "files",
    "mimetypes": "files", "netrc": "files", "filecmp": "files", "wave": "files", "aifc": "files", "sunau": "files",
    "mailbox": "files", "plistlib": "files", "py_compile": "files", "compileall": "files", "zipapp": "files",
    "logging.handlers": "files", "logging.config": "dynamic",
    "numpy.lib.format": "serialization", "numpy.lib.npyio": "serialization", "numpy.lib._npyio_impl": "serialization",
    "numpy.lib._format_impl": "serialization", "numpy.lib._datasource": "serialization",
    "triton.runtime.cache": "files", "torch.hub": "network",
    # the environment and the compiler (its cache manager writes any path; `triton.compile` and ASTSource build a
    # kernel past the launchers the harness captures), under whatever name they are reached (triton.runtime.jit.knobs)
    "triton.knobs": "environment", "triton.compiler": "files",
    # Native code of the candidate's own, loaded into the process: ctypes by another name.
    "torch.utils.cpp_extension": "ctypes", "triton.runtime.build": "ctypes",
    "_pyio": "files",
    # Modules that run Python (or a shell) from a string, or patch objects by name.
    "timeit": "dynamic", "cProfile": "dynamic", "profile": "dynamic", "bdb": "dynamic", "pdb": "dynamic",
    "trace": "dynamic", "doctest": "dynamic", "sympy": "dynamic", "yaml": "dynamic", "torch.fx": "dynamic",
    "torch._ops": "private", "torch.utils.collect_env": "processes", "tracemalloc": "serialization",
    "unittest": "dynamic", "mock": "monkeypatch",  # unittest.mock patches by name; TestLoader resolves any name
    "_frozen_importlib": "dynamic", "_frozen_importlib_external": "dynamic", "_imp": "dynamic",
    "string": "namespace", "_string": "namespace",  # Formatter().get_field: getattr and getitem by a string
    "torch.utils.benchmark": "dynamic", "torch.utils._sympy": "dynamic", "torch._utils": "private",
    "torch.utils.data": "processes",  # DataLoader's workers are processes
    # red team 7 (2026-12-05): torch's own tools, none a kernel's: hipify's openf is open(), show_pickle and
    # model_dump read files, jit.log_extract opens one (the rules above name the worse of the rest)
    "torch.utils": "module",
    "weakref": "cache",
    "cuda": "private", "cupy": "private", "pycuda": "private", "numba": "private", "torch._C": "private",
    "torch.library": "private", "torch.overrides": "private", "torch.utils._python_dispatch": "private",
    "triton.runtime.interpreter": "private",
    "torch._dynamo": "torch-codegen", "torch._inductor": "torch-codegen", "torch.jit": "torch-codegen",
    "rungs": "harness", "harness": "harness", "__main__": "harness",
    "resource": "limits", "signal": "limits",
    # The C modules under the ones above reach the same system calls by another name.
    "posix": "processes", "nt": "processes", "_posixsubprocess": "processes", "_io": "files", "fcntl": "files",
    "_socket": "network", "select": "network", "selectors": "network", "_signal": "limits",
    "numpy.ctypeslib": "ctypes",
}

# The CuTe DSL's internals below its public API (cute.compile, calling what it returns, @cute.jit calls): the
# executor that calls the native launcher (which the launch gate wraps), the CUDA driver and ctypes the wheel
# re-exports, loading prebuilt modules. An honest kernel needs none of them (rungs/backends/cute_worker.py).
CUTE_PRIVATE = {
    "cutlass.base_dsl.jit_executor": "private", "cutlass.base_dsl.runtime": "private", "cutlass.base_dsl.dsl": "private",
    "cutlass.cutlass_dsl.cuda_jit_executor": "private", "cutlass.cutlass_dsl.tvm_ffi_provider": "private",
    "cutlass._mlir.execution_engine": "private", "cutlass._mlir._mlir_libs": "private",
    "cutlass.cute.runtime.load_module": "private", "cutlass.cute.runtime.ctypes": "ctypes",
    "cutlass.cute.runtime.find_runtime_libraries": "private", "tvm_ffi": "private",
}
CUTE_PRIVATE_PARTS = {"cuda": "private", "cudart": "private", "cuda_helpers": "private", "ctypes": "ctypes"}
"""Any name under `cutlass.` through one of these modules (`cutlass.torch.cuda`, `cutlass.utils.hardware_info.cuda`):
the driver and ctypes the wheel imports, reached by another path."""
IMPORT_RULES.update(CUTE_PRIVATE)

ALLOWED_ROOTS = frozenset({
    "torch", "triton", "numpy", "einops", "cutlass", "cuda", "tilelang", "tvm", "rungs",  # the DSLs (cuda, rungs:
    # only their PUBLIC_EXCEPTIONS), torch and numpy
    "math", "cmath", "functools", "itertools", "collections", "typing", "typing_extensions", "dataclasses", "enum",
    "abc", "numbers", "operator", "statistics", "bisect", "heapq", "decimal", "fractions", "__future__", "warnings",
    "contextlib", "copy", "re", "random", "os", "sys", "time", "struct", "array", "types",
    "inspect"})  # inspect: its predicates and cleandoc only (the "inspect" rule)
"""Top-level modules a candidate may import at all (an allowlist: every standard module past these has a way to
read a file or run a string the deny-lists below would have to know by name). What each allowed one may not do is
refused by name below (os.environ, sys.modules, functools.update_wrapper with names, operator.attrgetter...)."""
DUNDER_DEFS = frozenset({"__getattr__", "__getattribute__", "__setattr__", "__delattr__", "__reduce__",
                         "__reduce_ex__", "__setstate__", "__getstate__", "__torch_dispatch__", "__torch_function__",
                         "__init_subclass__", "__class_getitem__", "__set_name__", "__del__", "__instancecheck__",
                         "__subclasshook__", "__prepare__"})
"""Methods Python or a library calls by name behind the code's back: copy.copy() sets attributes on any object from
__reduce_ex__, functools.update_wrapper writes through __setattr__, torch routes every op through
__torch_dispatch__, a finalizer runs whenever the collector likes."""

# Dotted names (after resolving import aliases) refused wherever they are used: exact name or package prefix.
NAME_RULES = {
    **CUTE_PRIVATE,
    "sys._getframe": "frames", "sys._current_frames": "frames", "sys._current_exceptions": "frames",
    "inspect.currentframe": "frames", "inspect.stack": "frames", "inspect.trace": "frames",
    "inspect.getouterframes": "frames", "inspect.getinnerframes": "frames", "inspect.getframeinfo": "frames",
    "traceback.walk_stack": "frames", "traceback.extract_stack": "frames",
    "sys.modules": "sys.modules", "sys.meta_path": "sys.modules", "sys.path_hooks": "sys.modules",
    "sys.path_importer_cache": "sys.modules",
    "sys.settrace": "frames", "sys.setprofile": "frames", "sys.addaudithook": "frames",
    "os.environ": "environment", "os.environb": "environment", "os.getenv": "environment",
    "os.getenvb": "environment", "os.putenv": "environment", "os.unsetenv": "environment",
    "os.system": "processes", "os.popen": "processes", "os.fork": "processes", "os.forkpty": "processes",
    "os.execv": "processes", "os.execve": "processes", "os.execl": "processes", "os.execle": "processes",
    "os.execlp": "processes", "os.execlpe": "processes", "os.execvp": "processes", "os.execvpe": "processes",
    "os.spawnl": "processes", "os.spawnle": "processes", "os.spawnlp": "processes", "os.spawnlpe": "processes",
    "os.spawnv": "processes", "os.spawnve": "processes", "os.spawnvp": "processes", "os.spawnvpe": "processes",
    "os.posix_spawn": "processes", "os.posix_spawnp": "processes", "os.kill": "processes",
    "os.killpg": "processes", "os.setsid": "processes", "os.setpgid": "processes", "os.setpgrp": "processes",
    "os.register_at_fork": "processes", "os.pidfd_open": "processes",
    "os.open": "files", "os.fdopen": "files", "os.listdir": "files", "os.scandir": "files", "os.walk": "files",
    "os.remove": "files", "os.unlink": "files", "os.rename": "files", "os.replace": "files", "os.rmdir": "files",
    "os.removedirs": "files", "os.mkdir": "files", "os.makedirs": "files", "os.chdir": "files",
    "os.symlink": "files", "os.link": "files", "os.truncate": "files", "os.chmod": "files", "os.chown": "files",
    "os.stat": "files", "os.lstat": "files", "os.access": "files", "os.path.exists": "files",
    "os.path.isfile": "files", "os.path.isdir": "files", "os.path.getsize": "files", "os.path.getmtime": "files",
    "io.open": "files", "io.FileIO": "files", "codecs.open": "files",
    "torch.save": "serialization", "torch.load": "serialization", "torch.from_file": "serialization",
    "torch.UntypedStorage.from_file": "serialization", "torch.serialization": "serialization",
    "numpy.save": "serialization", "numpy.savez": "serialization", "numpy.load": "serialization",
    "numpy.fromfile": "serialization", "numpy.memmap": "serialization", "numpy.loadtxt": "serialization",
    "numpy.genfromtxt": "serialization", "numpy.DataSource": "serialization", "logging.FileHandler": "files",
    # (dotted IMPORT_RULES keys, numpy.lib.format or torch.hub, are judged where used too: _rule)
    "torch.ops.load_library": "ctypes", "torch.classes.load_library": "ctypes",
    "io.open_code": "files", "numpy.fromregex": "serialization", "numpy.rec": "serialization",
    "numpy._core": "serialization", "numpy.core": "serialization", "os.fwalk": "files",
    "traceback.FrameSummary": "files", "traceback.StackSummary": "files", "warnings.formatwarning": "files",
    "warnings.showwarning": "files", "typing.get_type_hints": "dynamic", "typing.ForwardRef": "dynamic",
    "torch.cuda.jiterator": "torch-codegen", "triton.runtime.driver.active.utils.load_binary": "private",
    "torch.ops.import_module": "dynamic", "traceback.walk_tb": "frames",
    "torch._subclasses": "private", "torch._library": "private", "torch.package": "serialization",
    "numpy.ma.mrecords": "serialization", "numpy.f2py": "dynamic", "numpy.distutils": "dynamic",
    # a fourth pass: what the allowed modules still hold
    "numpy.testing": "dynamic", "numpy.savetxt": "serialization", "numpy.savez_compressed": "serialization",
    "numpy.lib.stride_tricks": "ctypes",  # as_strided: unchecked strides read any address in the process
    "torch.utils.model_zoo": "network", "triton.testing.nvsmi": "processes",
    "torch.utils.file_baton": "files", "torch.export.save": "serialization", "torch.export.load": "serialization",
    "torch.fork": "threads", "torch.wait": "threads",  # TorchScript's async tasks: work off the timed path
    # red team 6: package tools no kernel calls, each a door to a module by name, a process, the environment or a file
    "triton.tools.triton_to_gluon_translator": "dynamic", "tvm.contrib": "processes",  # triton.knobs: IMPORT_RULES
    "triton.experimental.gluon.GluonASTSource": "files", "triton.experimental.gluon._runtime.GluonASTSource": "files",
    "tilelang.contrib": "processes", "tvm.runtime.load_module": "ctypes", "numpy.test": "dynamic",
    "torch.onnx": "files", "torch.cuda.tunable": "files", "torch.cuda.CUDAPluggableAllocator": "ctypes",
    "torch.cuda.memory.CUDAPluggableAllocator": "ctypes", "triton.backends": "ctypes",
    # red team 7 (2026-12-05): the XPU allocator's ctypes.CDLL (torch.utils: IMPORT_RULES)
    "torch.xpu.memory.XPUPluggableAllocator": "ctypes",
    "torch.xpu.XPUPluggableAllocator": "ctypes",
    "torch.monitor": "private", "torch.import_ir_module": "torch-codegen",
    "torch.profiler": "files", "torch.autograd.profiler": "files",  # traces exported to any path
    "triton.testing.get_max_tensorcore_tflops": "processes", "triton.testing.get_max_simd_tflops": "processes",
    "warnings.warn_explicit": "files", "contextlib.redirect_stdout": "files", "contextlib.redirect_stderr": "files",
    "sys.stdin": "files", "sys.stdout": "files", "sys.stderr": "files", "sys.__stdin__": "files",
    "sys.__stdout__": "files", "sys.__stderr__": "files", "sys.path": "sys.modules",
    "functools.update_wrapper": "namespace", "functools.singledispatch": "dynamic",
    "functools.singledispatchmethod": "dynamic", "typing_extensions.get_type_hints": "dynamic",
    "typing_extensions.get_annotations": "dynamic", "typing_extensions.evaluate_forward_ref": "dynamic",
    "typing_extensions.ForwardRef": "dynamic",
    "torch.distributed": "network",
    "os.path.expandvars": "environment", "os.get_exec_path": "environment", "os.readlink": "files",
    "os.path.realpath": "files", "os.path.lexists": "files", "os.renames": "files", "os.fstat": "files",
    "os.read": "files", "os.write": "files", "os.pread": "files", "os.pwrite": "files", "os.sendfile": "files",
    "numpy.ctypeslib": "ctypes",
    "torch._C": "private", "torch.library": "private", "torch.overrides": "private",
    "torch.utils._python_dispatch": "private", "torch.cuda.cudart": "private", "torch.cuda._lazy_call": "private",
    "triton.runtime.driver.set_active": "private", "triton.runtime.driver.reset_active": "private",
    "triton.runtime.interpreter": "private",
    # A Triton builtin of the candidate's own (a member registered on tl.tensor and called `x.shift()` in a jit body)
    # is handed the compiler's or the interpreter's `_semantic` and can tell them apart: red team 2026-12-06, a
    # softmax right here and scaled in the build (`interpreter_own_builtin.py`)
    "triton.language.core.builtin": "interpreter", "triton.language.core._tensor_member_fn": "interpreter",
    "triton.language.core.TRITON_BUILTIN": "interpreter", "triton.language.core.is_builtin": "interpreter",
    "torch.compile": "torch-codegen", "torch._dynamo": "torch-codegen", "torch._inductor": "torch-codegen",
    "torch.jit": "torch-codegen",
    "threading.settrace": "frames",
    "types.CodeType": "code", "types.FunctionType": "code", "types.LambdaType": "code",
    "operator.attrgetter": "namespace", "operator.methodcaller": "namespace",
}

INSPECT_ALLOWED = frozenset({"cleandoc", "getdoc", "Parameter"})
"""What an honest kernel may use of `inspect` besides its `is...` predicates: nothing that hands back an object. The
rest finds objects without naming them (`inspect.getmodule(f)` is the module that defined f, the harness's
guards for a gate wrapper; `inspect.signature(w)` holds the defaults the gate keeps its launcher in)."""

REROOT = frozenset({"torch", "triton", "numpy",  # custom_ops.torch.library is torch.library
                    "sys", "os", "inspect", "types", "builtins", "importlib", "gc", "ctypes", "_ctypes", "subprocess",
                    "multiprocessing", "threading", "_thread", "concurrent", "pickle", "marshal", "shutil", "glob",
                    "pathlib", "tempfile", "socket", "urllib", "http", "traceback", "io", "codecs", "pkgutil", "pydoc",
                    "runpy", "weakref", "mmap", "operator"})
"""Standard modules that other modules hold as attributes (`torch.sys`, `torch.importlib`, `torch.inspect`,
`os.path.sys`): a name under one of them, reached through another module, is judged as if named directly
(`torch.sys.modules` is `sys.modules`). Not `signal`, `select`, `code`: torch.signal and torch.select are torch's."""

# Builtins refused when called (or, for __builtins__, named at all).
BUILTIN_CALL_RULES = {"exec": "dynamic", "eval": "dynamic", "compile": "dynamic", "__import__": "dynamic",
                      "open": "files", "breakpoint": "dynamic", "globals": "namespace", "locals": "namespace"}
HOLDERS = ("sys", "_sys", "os", "_os", "builtins", "_builtins", "bltns", "builtin_mod", "__builtin__", "importlib",
           "_importlib", "_io", "_pyio", "gc", "ctypes", "_ctypes", "subprocess", "inspect", "_inspect", "_weakref",
           "weakref")
"""Attribute names under which modules hold other modules (torch.sys, collections._sys, enum.bltns, random._os)."""
# Attributes refused on any object: frames and globals of functions, the class graph.
ATTR_RULES = {"getattr": "namespace", "setattr": "monkeypatch", "delattr": "monkeypatch", "exec": "dynamic",
              "export_chrome_trace": "files", "export_stacks": "files", "export_memory_timeline": "files",
              "f_back": "frames", "f_locals": "frames", "f_globals": "frames", "f_builtins": "frames",
              "tb_frame": "frames", "gi_frame": "frames", "cr_frame": "frames", "ag_frame": "frames",
              "__globals__": "frames", "__builtins__": "builtins",
              # a function's captured state: the launch gates keep the launcher they wrap in a closure or a default
              "__closure__": "frames", "cell_contents": "frames", "__defaults__": "frames", "__kwdefaults__": "frames", "__subclasses__": "introspection",
              "__self__": "builtins",  # print.__self__ is the builtins module
              "__torch_dispatch__": "private", "read_text": "files", "read_bytes": "files",
              "write_text": "files", "write_bytes": "files", "tofile": "serialization",
              # a CuTe DSL compiled function's executor: the native launcher and the path to it, past launch counting
              "capi_func": "private", "run_compiled_program": "private", "_default_executor": "private",
              "jit_module": "private", "raw_lookup": "private", "exec_context": "private",
              "kernel_functions_ptrs": "private",
              # a module's namespace and what wraps a function
              "__wrapped__": "namespace", "__loader__": "namespace", "__spec__": "namespace",
              # a function's code: its co_filename is what the op trace reads to tell the candidate's frames
              "__code__": "code", "gi_code": "code", "cr_code": "code", "ag_code": "code", "f_code": "code",
              "CodeType": "code", "FunctionType": "code", "LambdaType": "code",
              **{a: "code" for a in dir(types.CodeType) if a.startswith("co_")},
              # attribute lookup and assignment by name, past the checks on `getattr`/`setattr`
              "__getattribute__": "namespace", "__getattr__": "namespace", "__setattr__": "monkeypatch",
              "__delattr__": "monkeypatch", "__get__": "namespace", "__import__": "dynamic",
              "__getstate__": "namespace", "__reduce__": "namespace", "__reduce_ex__": "namespace",
              "__setstate__": "monkeypatch", "__annotations__": "dynamic", "__array_interface__": "ctypes",
              "__array_struct__": "ctypes", "dump": "serialization", "dumps": "serialization",
              # the payloads themselves, on whatever base they are reached (a name bound by a loop, a default, a
              # tuple: the alias table cannot follow every binding)
              "environ": "environment", "environb": "environment", "_getframe": "frames", "settrace": "frames",
              "setprofile": "frames", "meta_path": "sys.modules", "path_hooks": "sys.modules",
              # files by another door
              "from_file": "serialization", "open_code": "files", "Path": "files", "PosixPath": "files",
              "PurePath": "files", "PurePosixPath": "files",
              # a module held as an attribute of another object (torch.sys, collections._sys, enum.bltns,
              # random._os): whatever the object is, an honest kernel reaches none of them
              **{a: "namespace" for a in HOLDERS}}
MODULE_COLLISIONS = frozenset({"cuda", "signal", "select", "code", "trace", "profile", "string"})
"""Refused modules whose names are also torch's or a tensor's (torch.cuda, torch.signal, x.select, x.trace) or a
common attribute's (re.Match.string)."""
ATTR_RULES.update({k: v for k, v in IMPORT_RULES.items()
                   if "." not in k and k not in MODULE_COLLISIONS and k not in ATTR_RULES})
MODULES_CALLED = frozenset({"modules"})
"""Payload attributes an honest kernel calls under the same name (nn.Module.modules()): refused when read, not when
called."""
ATTR_RULES.update({"modules": "sys.modules", "Formatter": "namespace", "_C": "private", "_cuda_runtime": "private",
                   "Process": "processes", "Popen": "processes", "get_context": "processes"})
SELF_NAMES = frozenset({"time", "record", "query", "wait", "Event", "Stream", "CUDAGraph"})
"""Timer names a layer of one's own takes (self.query, self.time embeddings, self.record = []): allowed on `self`.
`self` can still be any object a method is called with: the worker's tamper check watches time and torch.cuda.Event."""
TIMER_ATTRS = frozenset({"synchronize", "perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time",
                         "time_ns", "process_time", "elapsed_time", "record", "query", "wait", "Event", "Stream",
                         "do_bench", "do_bench_cudagraph", "current_stream", "default_stream", "CUDAGraph", "replay"})
"""Attribute names whose assignment is timer tampering on whatever object it is made (a name bound by a loop or a
tuple holds torch.cuda or time as well as an import does)."""
SHADOWED = frozenset({*BUILTIN_CALL_RULES, "getattr", "setattr", "delattr", "vars", "__builtins__"})
"""Names the screen reads as the builtins: binding one (an import alias, an assignment, a parameter) would turn the
screen's view of every use of it off."""
SAFE_DUNDERS = frozenset({"__name__", "__qualname__", "__doc__", "__module__", "__version__"})
"""Dunder attributes getattr may read by a literal name: strings, never objects."""
VALUE_BUILTINS = {"getattr": "namespace", "setattr": "monkeypatch", "delattr": "monkeypatch", "vars": "namespace",
                  "__import__": "dynamic", "exec": "dynamic", "eval": "dynamic", "compile": "dynamic", "open": "files"}
"""Builtins refused when passed around as a value (`functools.reduce(getattr, ["sys", "modules"], torch)`): the
call-site checks never see their arguments."""
# Names whose assignment is timer tampering rather than plain monkeypatching.
TIMER_PREFIXES = ("time.", "torch.cuda.synchronize", "torch.cuda.Event", "torch.cuda.Stream", "torch.cuda.current_stream",
                  "torch.cuda.streams", "torch.cuda.graph", "torch.cuda.CUDAGraph", "triton.testing",
                  "torch.Tensor.record_stream", "torch.cuda.default_stream")
ADDRESS_CALLS = ("data_ptr", "untyped_storage", "storage", "_cdata")


PUBLIC_EXCEPTIONS: dict[str, frozenset[str]] = {
    "cuda.bindings.driver": frozenset({"CUstream"}),
    "rungs.backends.cuda_api": frozenset({"compile_cuda", "launch", "CudaKernel", "target_arch", "tensor_map"}),
    "rungs.backends.cute_sections": frozenset({"section_begin", "section_end"}),
    "rungs.backends.tilelang_sections": frozenset({"section_begin", "section_end"}),
}
"""Modules a refused package holds that honest kernels need, and the names of each they may use: the stream type a
CuTe DSL launcher takes (`cuda.CUstream(torch.cuda.current_stream().cuda_stream)`; the driver's launch calls stay
refused), the CUDA C++ backend's documented helper (compile and launch, which the launch gate wraps, and TMA
descriptors of the candidate's own tensors) and the CuTe
DSL's and TileLang's timing-section markers (nothing in any build but the sections step's). The module itself may be imported; any other name under it keeps the package's rule."""


def _excepted(name: str) -> bool | None:
    """True: a name the exceptions allow; False: a name under an excepted module that they do not (the package's
    rule applies, also where the module was imported under an alias); None: not under an excepted module."""
    for module, names in PUBLIC_EXCEPTIONS.items():
        if name == module:
            return True
        if name.startswith(module + "."):
            return name[len(module) + 1:].split(".")[0] in names
    return None


def _refused_under_exception(name: str) -> str | None:
    """The rule of a name used under an excepted module but not one of its allowed names (`cuda.cuLaunchKernel`
    after `import cuda.bindings.driver as cuda`)."""
    if _excepted(name) is not False:
        return None
    parts = name.split(".")
    return next((IMPORT_RULES[".".join(parts[:n])] for n in range(len(parts), 0, -1)
                 if ".".join(parts[:n]) in IMPORT_RULES), None)


def _matches(name: str, table: dict[str, str]) -> str | None:
    """The rule of `name` or of its longest package prefix in `table`."""
    allowed = _excepted(name)
    if allowed is not None:
        return None if allowed else _refused_under_exception(name)
    parts = name.split(".")
    if parts[0] == "cutlass":
        for part in parts[1:]:
            if part in CUTE_PRIVATE_PARTS:
                return CUTE_PRIVATE_PARTS[part]
    for n in range(len(parts), 0, -1):
        rule = table.get(".".join(parts[:n]))
        if rule:
            return rule
    return None


REACHED_PURE = frozenset({"posixpath", "genericpath", "ntpath", "stat", "keyword", "textwrap", "colorsys", "zlib",
                          "base64", "hashlib", "contextvars", "_operator", "_functools", "_collections",
                          "_collections_abc", "collections_abc", "_abc", "_weakrefset", "_struct", "_random", "_bisect",
                          "_heapq", "_decimal", "_pydecimal", "_sre", "re", "sre_compile", "sre_parse"})
"""Standard modules the allowed packages hold as attributes (found by walking them: tests/test_adversarial.py::
test_every_module_the_allowed_packages_hold_is_allowed_or_refused) that only compute: reached, they pass. Any other
module reached through an allowed package is judged as importing it (`tvm.libinfo.im` is importlib.metadata,
`cutlass.base_dsl.utils.logger.logging` is logging, `torch.cuda.tunable.mp` is multiprocessing)."""


def _walk(name: str) -> list[object]:
    """The objects a dotted name rooted in an allowed module walks through, looked up in the harness's own (trusted)
    imports of those packages; [] where a step does not resolve (a name the candidate defines, a package not
    installed here)."""
    import importlib
    import sys
    import warnings

    parts = name.split(".")
    if parts[0] not in ALLOWED_ROOTS or parts[0] in ("rungs", "os", "sys"):  # rungs: PUBLIC_EXCEPTIONS; os, sys: by name
        return []
    objs: list[object] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if parts[0] == "tvm" and "tvm" not in sys.modules:
                importlib.import_module("tilelang")  # TileLang's wheel puts its own tvm on the path
            obj: object = sys.modules.get(parts[0]) or importlib.import_module(parts[0])
        except Exception:  # noqa: BLE001 - not installed here, or broken: nothing to follow
            return []
        cursors = [obj]
        for i, part in enumerate(parts[1:], start=2):
            # `from a.b import c` takes module a.b from the import system, where attribute a.b may be another object
            # (tilelang.jit is a function, module tilelang.jit holds os.path as `path`): both routes are followed
            prefix = sys.modules.get(".".join(parts[:i - 1]))
            nexts: list[object] = []
            for base in [*cursors, *([prefix] if isinstance(prefix, types.ModuleType) else [])]:
                try:
                    step = getattr(base, part)
                except Exception:  # noqa: BLE001 - not there on this route
                    continue
                if all(step is not o for o in nexts):
                    nexts.append(step)
            if not nexts:
                try:
                    nexts = [importlib.import_module(".".join(parts[:i]))]  # a submodule not imported yet
                except Exception:  # noqa: BLE001
                    return objs
            objs.extend(nexts)
            cursors = nexts
    return objs


DSL_SURFACE: dict[str, dict[str, frozenset[str] | None]] = {
    "triton": {"language": None, "testing": None, "errors": None, "runtime": None,
               "tools": frozenset({"tensor_descriptor"}), "profiler": frozenset({"language"}),
               "experimental": frozenset({"gluon"})},  # Triton's lower-level dialect; not its sanitizer (gsan)
    "cutlass": {"cute": None, "pipeline": None, "utils": None, "memory": None, "block": None, "vector": None, "torch": None,
                "gpu": None, "tensor_utils": None},
    "tilelang": {"language": None, "layout": None, "math": None, "dtypes": None, "tileop": None, "autotuner": None,
                 "carver": None, "ir": None, "transform": None},
    "tvm": {"tir": None, "ir": None, "arith": None, "te": None},
}
"""The submodules of the DSL packages a kernel may reach (their functions and types at the top, triton.jit,
cutlass.Float32, tilelang.compile, stay open): the rest are the packages' own machinery, where a red team found a
function importing any module by name (triton.tools' translator), a cache manager writing any path
(triton.compiler), compiler wrappers running a shell (tvm.contrib) and the environment (triton.knobs). An allowlist,
since what such a function returns when called is past any screen. None: no narrower list below it."""


def _off_surface(name: str) -> str | None:
    """Where a dotted name under a DSL package steps off DSL_SURFACE, the name of the step: at the package's top a
    submodule not listed (its functions and types stay open), below a narrowed submodule any name not listed."""
    parts = name.split(".")
    surface = DSL_SURFACE.get(parts[0])
    if surface is None or len(parts) < 2:
        return None
    top = ".".join(parts[:2])
    if parts[1] not in surface:
        return top if any(isinstance(o, types.ModuleType) for o in _walk(top)) else None
    narrowed = surface[parts[1]]
    if narrowed is not None and len(parts) > 2 and parts[2] not in narrowed:
        return ".".join(parts[:3])
    return None


@functools.cache
def _refused_objects() -> dict[int, tuple[str, object, str]]:
    """id -> (rule, the object, its refused name) for every object a refused name stands for (NAME_RULES' dotted
    names, and os's and os.path's attributes off their allowlists), so the same object reached under another name
    (torch.autograd.profiler_util.attrgetter is operator.attrgetter, tilelang.jit.path.expandvars is
    os.path.expandvars) is judged as that name."""
    import importlib
    import os
    import sys

    refused: dict[int, tuple[str, object, str]] = {}

    def add(key: str, rule: str, obj: object) -> None:
        if obj is not None and not isinstance(obj, (int, float, str, bytes, bool, tuple, types.ModuleType)):
            refused.setdefault(id(obj), (rule, obj, key))

    for key, rule in NAME_RULES.items():
        head, _, attr = key.rpartition(".")
        module = sys.modules.get(head)
        if module is None and head.split(".")[0] in ("os", "sys", "operator", "functools", "inspect", "types",
                                                     "copy", "warnings", "random", "time", "collections"):
            try:
                module = importlib.import_module(head)
            except Exception:  # noqa: BLE001
                module = None
        # what the module already holds: getattr would import lazy submodules (torch._dynamo: a second a process)
        add(key, rule, vars(module).get(attr) if module is not None and attr else None)
    for head, module in (("os", os), ("os.path", os.path)):
        for attr, obj in vars(module).items():  # os's own functions only: it also holds Mapping, GenericAlias...
            rule = _os_rule(f"{head}.{attr}")
            if rule and isinstance(obj, (types.FunctionType, types.BuiltinFunctionType)) \
                    and getattr(obj, "__module__", None) in ("os", "posix", "posixpath", "genericpath"):
                add(f"{head}.{attr}", rule, obj)
    return refused


def _outside(module: str, pure: frozenset[str]) -> str | None:
    """The rule for a module, or an object's defining module, outside the allowlist and not in `pure`: its IMPORT_RULES
    reason, else 'module'; None for one inside."""
    root = module.split(".")[0]
    return (_matches(module, IMPORT_RULES) or "module") if root and root not in pure else None


ALLOWED_OR_PURE = ALLOWED_ROOTS | REACHED_PURE
OBJECTS_PURE = ALLOWED_OR_PURE | {"builtins"}
"""What a function's, class's or instance's defining module may be (builtins' own functions and types are plain);
the builtins module itself, reached, is refused."""
PLAIN_VALUES = (int, float, str, bytes, bool, tuple, list, dict, frozenset, set, type(None))


@functools.cache
def _reached(name: str) -> tuple[str, str] | None:
    """(rule, what) where a dotted name reaches, through an allowed package, a module outside the allowlist, a refused
    object under another name, a function, class or instance of a module outside the allowlist or of a refused one
    (`torch.hub.urlopen` is urllib's), or a DSL package's machinery; None where it does not."""
    refused = _refused_objects()
    for obj in _walk(name):
        if id(obj) in refused and refused[id(obj)][1] is obj:  # a refused function under another name (attrgetter)
            return refused[id(obj)][0], f"{name} is {refused[id(obj)][2]}"
        if isinstance(obj, types.ModuleType):  # a refused module held by an allowed one (triton.runtime.jit.knobs)
            rule = _outside(obj.__name__, ALLOWED_OR_PURE) or _matches(obj.__name__, IMPORT_RULES)
            if rule:
                return rule, f"{name} is the module {obj.__name__}"
            continue
        if isinstance(obj, PLAIN_VALUES):
            continue
        # a function or class by its defining module; an instance a package holds (a ctypes.CDLL, a pathlib.Path, an
        # import finder, a logger) by its class's, as the class would be
        plain = isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType))
        mod = getattr(obj if plain else type(obj), "__module__", None)
        if not isinstance(mod, str):
            continue
        # a refused module's function re-exported (triton.runtime.cache's get_cache_manager); torch's own C functions
        # (torch._C._nn's) are what its public names are
        inside = _matches(mod, IMPORT_RULES) if plain and not mod.startswith("torch._C") else None
        rule = inside or _outside(mod, OBJECTS_PURE)
        if rule:
            return rule, f"{name} is {mod}'s" if plain else f"{name} is a {mod}.{type(obj).__name__}"
    off = _off_surface(name)  # a specific rule first, where one applies
    return ("module", f"{off} is a module of the package's own machinery") if off else None


OS_ALLOWED = frozenset({"path", "cpu_count", "sep", "linesep", "name", "curdir", "pardir", "extsep", "altsep", "abort",
                        "pathsep", "devnull"})
OS_PATH_ALLOWED = frozenset({"join", "basename", "dirname", "split", "splitext", "normpath", "normcase", "isabs",
                             "commonprefix", "commonpath", "sep"})
"""What of `os` a kernel may use: an allowlist (red team 5 found mkfifo, utime, readv/writev, expanduser past the
deny-list of os's names): paths as strings, never the file system or the environment."""


def _os_rule(name: str) -> str | None:
    parts = name.split(".")
    if parts[0] != "os" or len(parts) < 2:
        return None
    if parts[1] not in OS_ALLOWED:
        return _matches(name, NAME_RULES) or "files"
    if parts[1] == "path" and len(parts) > 2 and parts[2] not in OS_PATH_ALLOWED:
        return _matches(name, NAME_RULES) or "files"
    return None


def _rule(name: str) -> str | None:
    """The rule of a dotted name used anywhere (not only imported): NAME_RULES, names under an excepted module, the
    inspect module's object finders, and a name under a standard module reached through another (REROOT)."""
    rule = _os_rule(name) or _matches(name, NAME_RULES) or _refused_under_exception(name)
    if rule or _excepted(name):
        return rule
    if "." in name:  # a refused module reached as an attribute of an allowed one (unittest.mock, torch.fx)
        rule = _matches(name, IMPORT_RULES) or _private(name)
        if rule:
            return rule
    parts = name.split(".")
    if parts[0] == "inspect" and len(parts) > 1 and not (parts[1].startswith("is") or parts[1] in INSPECT_ALLOWED):
        return "inspect"
    for i in range(1, len(parts)):
        if parts[i] in REROOT:
            sub = ".".join(parts[i:])
            rule = _rule(sub) or _matches(sub, IMPORT_RULES)
            if rule:
                return rule
    reached = _reached(name) if "." in name else None
    return reached[0] if reached else None


class _Screen(ast.NodeVisitor):
    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}
        """Local name -> the dotted name it stands for (`import torch as T`, `from torch import cuda`, `E = torch.cuda.Event`)."""
        self.findings: list[Finding] = []
        self.tainted: set[str] = set()
        """Names assigned from a tensor's address or identity (`key = (x.data_ptr(), n)`)."""
        self.called: set[int] = set()
        """ids of the Name nodes that are called (`getattr(...)`), to tell them from a builtin passed as a value."""
        self.jit_defs: set[int] = set()
        """ids of the functions Triton compiles (@triton.jit, gluon.jit, constexpr_function, or passed to one)."""
        self.jit_names: set[str] = set()
        self.module_names: set[str] = set()
        """Names the file binds at its top level other than imports and jit functions: plain Python."""
        self.rooted: set[int] = set()
        """ids of Names already named in a finding as the root of an attribute chain."""
        self.messages: set[int] = set()
        """ids of f-strings that are a message call's direct arguments in a jit body."""
        self.jit_scope: list[set[str]] = []
        """Inside a jit body: its parameters and the names it assigns."""
        self.own_objects: set[str] = set()
        """Names whose every binding is an object the file made: its own functions and classes, and names assigned
        a call of one of them, of a library class (`nn.Linear(...)`) or a literal: attributes set on these change
        nothing of a library's. Any other name whose target the screen cannot follow (bound by a loop, `with`, a
        parameter, a walrus, unpacking, another call) may be a module: red teams 2026-12-07 set `tl.pick_scaled`,
        `TritonSemantic.sub` and `knobs.runtime.add_stages_inspection_hook` through `for _m in (tl,): _m.x = f`."""

    # ---- names ------------------------------------------------------------------------------------------
    def dotted(self, node: ast.AST) -> str | None:
        """`T.cuda.Event` -> 'torch.cuda.Event' when T is an import alias; None for anything not rooted in an import."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.dotted(node.value)
            return f"{base}.{node.attr}" if base else None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
                and node.func.id not in self.aliases and len(node.args) >= 2 and _literal(node.args[1]):
            base = self.dotted(node.args[0])  # getattr(sys, "modules") is sys.modules
            return f"{base}.{_literal(node.args[1])}" if base else None
        return None

    def flag(self, node: ast.AST, rule: str, detail: str = "") -> None:
        reason = REASONS[rule] + (f" ({detail})" if detail else "")
        self.findings.append(Finding(rule=rule, line=getattr(node, "lineno", 0), reason=reason))

    def collect_aliases(self, tree: ast.AST) -> None:
        bound: dict[str, set[str]] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    local, target = (a.asname, a.name) if a.asname else ((a.name.split(".")[0],) * 2)
                    bound.setdefault(local, set()).add(target)
                    self.aliases[local] = target
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:
                    if a.name != "*":
                        bound.setdefault(a.asname or a.name, set()).add(f"{node.module}.{a.name}")
                        self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        for local, targets in bound.items():
            if len(targets) > 1:  # one flat table of aliases: which module a use means is not knowable
                self.flag(tree, "namespace", f"the name {local} stands for {' and '.join(sorted(targets))}")
        for node in ast.walk(tree):
            name = _binds(node)
            if name == "self" and not isinstance(node, ast.arg):
                self.flag(node, "monkeypatch", "binds the name self outside a method's parameters")
            if name in SHADOWED:
                self.flag(node, "builtins", f"binds the name {name}, which the screen reads as the builtin {name}")
        self.decorators = {id(d) for n in ast.walk(tree)
                           if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) for d in n.decorator_list}
        self.called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, (ast.Name, ast.Attribute))}
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and _address_key(node.value):
                self.tainted.update(t.id for t in node.targets if isinstance(t, ast.Name))
        self._collect_own_objects(tree)
        for _ in range(4):  # `c = torch.cuda` then `e = c.Event`; loops over loops' names
            for node in ast.walk(tree):
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    target = self.dotted(node.value)
                    if target and node.targets[0].id not in self.aliases:
                        self.aliases[node.targets[0].id] = target
                # `for _m in (tl,):` binds _m to tl as `_m = tl` would (red team 2026-12-07: the loop name hid it)
                elif isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.target, ast.Name) \
                        and isinstance(node.iter, (ast.Tuple, ast.List, ast.Set)) and node.target.id not in self.aliases:
                    targets = {t for t in map(self.dotted, node.iter.elts) if t}
                    if len(targets) == 1:
                        self.aliases[node.target.id] = targets.pop()
                    elif targets:
                        self.flag(node, "namespace", f"the loop name {node.target.id} stands for "
                                  f"{' and '.join(sorted(targets))}")

    def _collect_own_objects(self, tree: ast.AST) -> None:
        own_defs = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
        plain_targets = {id(t) for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AnnAssign))
                         for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)}
        made: dict[str, bool] = {}

        def note(name: str, ok: bool) -> None:
            made[name] = made.get(name, True) and ok

        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                note(node.name, True)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    if isinstance(t, ast.Name):
                        note(t.id, self._made_here(node.value, own_defs))
            elif (name := _binds(node)) is not None and not isinstance(node, (ast.alias, ast.Global, ast.Nonlocal)) \
                    and id(node) not in plain_targets:
                note(name, False)  # a loop, with, parameter, walrus, except, unpacking target
        self.own_objects = {name for name, ok in made.items() if ok}

    def _made_here(self, value: ast.AST, own_defs: set[str]) -> bool:
        if isinstance(value, (ast.Constant, ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp,
                              ast.JoinedStr, ast.BinOp)):
            return True
        if isinstance(value, ast.Call):
            func = value.func
            if isinstance(func, ast.Name) and func.id in own_defs:
                return True
            dotted = self.dotted(func)
            return bool(dotted) and dotted.rsplit(".", 1)[-1][:1].isupper()  # a library class: a fresh object of it
        return False

    def collect_jit(self, tree: ast.Module) -> None:
        """The jit functions and the file's other top-level names: what a jit body may call or read."""
        wrapped = {n.args[0].id for n in ast.walk(tree) if isinstance(n, ast.Call) and n.args
                   and isinstance(n.args[0], ast.Name) and _jit_decorator(self.dotted(n.func))}  # triton.jit(f)
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            marks = [self.dotted(d.func if isinstance(d, ast.Call) else d) or "" for d in node.decorator_list]
            if isinstance(node, ast.ClassDef):  # @aggregate classes (Triton values): built and called in jit bodies
                if any(m.startswith("triton.") for m in marks):
                    self.jit_names.add(node.name)
            elif node.name in wrapped or any(_jit_decorator(m) for m in marks):
                self.jit_defs.add(id(node))
                self.jit_names.add(node.name)
        for node in tree.body:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None \
                    and self._triton_value(node.value):
                continue  # `_tma_load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared`
            for name in ([node.name] if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                         else [t.id for t in ast.walk(node) if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)]
                         if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.With)) else []):
                if name not in self.jit_names and name not in self.aliases:
                    self.module_names.add(name)

    def _triton_value(self, value: ast.AST) -> bool:
        """A top-level value made only of Triton's own objects and constants (a version's name for a builtin, a
        constexpr): no lambda, no private attribute, every name an import from triton (or getattr on one)."""
        for n in ast.walk(value):
            if isinstance(n, (ast.Lambda, ast.NamedExpr, ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp,
                              ast.SetComp, ast.GeneratorExp)) or (isinstance(n, ast.Attribute) and n.attr.startswith("_")):
                return False  # a container is state a jit body could change (tl.constexpr([]))
            if isinstance(n, ast.Name) and n.id != "getattr" and not (self.aliases.get(n.id) or "").startswith("triton"):
                return False
        return True

    def _plain_global(self, name: ast.Name | None) -> bool:
        """A name a jit body reads from the file's top level that is plain Python (not an import, not a jit
        function, not the body's own)."""
        return name is not None and bool(self.jit_scope) and name.id not in self.jit_scope[-1] \
            and name.id in self.module_names

    def _jit_body(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        args = node.args
        scope = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg) if a}
        scope |= {t.id for t in ast.walk(node) if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)}
        for outside in (*node.decorator_list, *args.defaults, *args.kw_defaults, node.returns):
            if outside is not None:  # @triton.heuristics({...}): run by the launcher, not the body
                self.visit(outside)
        self.jit_scope.append(scope)
        try:
            for part in (*node.body, *(a.annotation for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)
                                       if a.annotation is not None)):
                self.visit(part)
        finally:
            self.jit_scope.pop()

    # ---- visiting -----------------------------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            rule = _matches(a.name, IMPORT_RULES) or _matches(a.name, NAME_RULES) or _private(a.name)
            if rule:
                self.flag(node, rule, f"import {a.name}")
            elif a.name.split(".")[0] not in ALLOWED_ROOTS:
                self.flag(node, "module", f"import {a.name}")
            elif rule := _rule(a.name):
                self.flag(node, rule, f"import {a.name}")  # its specific rule first, else off the DSL's surface

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self.flag(node, "harness", "relative import")
            return
        module = node.module or ""
        rule = _matches(module, IMPORT_RULES) or _private(module)
        if rule:
            self.flag(node, rule, f"from {module} import ...")
            return
        if module.split(".")[0] not in ALLOWED_ROOTS:
            self.flag(node, "module", f"from {module} import ...")
            return
        seen = len(self.findings)
        self._imported_names(node, module)
        if len(self.findings) == seen and _off_surface(module):  # a specific rule said more where there was one
            self.flag(node, "module", f"from {module} import ...: the package's own machinery")

    def _imported_names(self, node: ast.ImportFrom, module: str) -> None:
        for a in node.names:
            if a.name == "*":
                if any(k.startswith(module + ".") and _star_binds(module, k[len(module) + 1:].split(".")[0])
                       for k in NAME_RULES) or module in REROOT:
                    self.flag(node, "namespace", f"from {module} import *: names the screen cannot follow")
                continue
            full = f"{module}.{a.name}"
            rule = _rule(full) or _matches(full, IMPORT_RULES) or ATTR_RULES.get(a.name)
            if rule:
                self.flag(node, rule, f"from {module} import {a.name}")

    def visit_MatchClass(self, node: ast.MatchClass) -> None:
        """`case object(sys=s)` reads attribute `sys` of the subject: judged as `x.sys` would be."""
        for attr in node.kwd_attrs:
            rule = ATTR_RULES.get(attr) or ("namespace" if attr == "__dict__" or _dunder(attr) else None)
            if rule:
                self.flag(node, rule, f"case ...({attr}=...)")
        self.generic_visit(node)

    def _defines(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if node.name in RAW_MEMORY_PROTOCOLS:
            self.flag(node, "ctypes", f"defines {node.name}: an array over any address")
        if node.name in DUNDER_DEFS:
            self.flag(node, "monkeypatch", f"defines {node.name}, which Python or a library calls behind the code")
        annotations = [a.annotation for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs,
                                              node.args.vararg, node.args.kwarg) if a is not None] + [node.returns]
        if any(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in annotations):
            self.flag(node, "dynamic", f"a string annotation in {node.name}: code that typing evaluates")
        if id(node) in self.jit_defs:
            self._jit_body(node)
        else:
            self.generic_visit(node)

    visit_FunctionDef = _defines
    visit_AsyncFunctionDef = _defines

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load) and self._plain_global(node) and id(node) not in self.rooted:
            self.flag(node, "interpreter", f"{node.id} (plain Python of the file) in a jit body")
        if node.id in RAW_MEMORY_PROTOCOLS:  # class A: __array_interface__ = {...}
            self.flag(node, "ctypes", f"{node.id}: an array over any address")
        elif node.id == BUILTIN_MARK:  # class A: __triton_builtin__ = True
            self.flag(node, "interpreter", f"{node.id}: a Triton builtin of the kernel's own")
        elif node.id == "__builtins__":
            self.flag(node, "builtins", "__builtins__")
        elif node.id in ("CodeType", "FunctionType", "LambdaType"):
            self.flag(node, "code", node.id)
        elif node.id in VALUE_BUILTINS and node.id not in self.aliases and id(node) not in self.called \
                and isinstance(node.ctx, ast.Load):
            self.flag(node, VALUE_BUILTINS[node.id], f"{node.id} passed as a value")
        else:
            self._check_dotted(node)

    def visit_keyword(self, node: ast.keyword) -> None:
        if node.arg in RAW_MEMORY_PROTOCOLS:  # SimpleNamespace(__array_interface__=...)
            self.flag(node.value, "ctypes", f"{node.arg}=...: an array over any address")
        elif node.arg == BUILTIN_MARK:
            self.flag(node.value, "interpreter", f"{node.arg}=...: a Triton builtin of the kernel's own")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if node.value == "__builtins__":  # globals()["__builtins__"]
            self.flag(node, "builtins", "'__builtins__'")
        elif node.value in RAW_MEMORY_PROTOCOLS:  # SimpleNamespace(**{"__array_interface__": ...})
            self.flag(node, "ctypes", f"{node.value!r}: an array over any address")
        elif node.value == BUILTIN_MARK:
            self.flag(node, "interpreter", f"{node.value!r}: a Triton builtin of the kernel's own")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in RAW_MEMORY_PROTOCOLS:
            self.flag(node, "ctypes", f".{node.attr}: an array over any address")
        if node.attr == BUILTIN_MARK:
            self.flag(node, "interpreter", f".{node.attr}: a Triton builtin of the kernel's own")
        if self.jit_scope and (node.attr == "handle" or node.attr.startswith("_")):
            self.flag(node, "interpreter", f".{node.attr} in a jit body")
        elif self._plain_global(_root(node)) and not isinstance(node.ctx, ast.Store):
            self.flag(node, "interpreter", f"{_root(node).id}.{node.attr} (plain Python of the file) in a jit body")
            self.rooted.add(id(_root(node)))
        rule = ATTR_RULES.get(node.attr)
        if rule and node.attr in MODULES_CALLED and (id(node) in self.called or self.dotted(node) == "torch.nn.modules"):
            rule = None  # self.modules(), nn.Module's method; torch.nn.modules, the package
        if rule and node.attr in HOLDERS and self._check_dotted(node):
            return  # torch.builtins: judged as the module it is
        if rule:
            self.flag(node, rule, self.dotted(node) if rule == "code" and self.dotted(node) else f".{node.attr}")
            return
        if node.attr == "__dict__":  # any object's, self's too: a method can be called with a module as self
            self.flag(node, "namespace", f"{self.dotted(node.value) or '...'}.__dict__")  # string-keyed, any object's
            return
        if self._check_dotted(node):
            return  # one finding per chain
        self.generic_visit(node)

    def _check_dotted(self, node: ast.AST) -> bool:
        name = self.dotted(node)
        if not name:
            return False
        rule = _rule(name)
        if rule:
            self.flag(node, rule, name)
            return True
        return False

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if self.jit_scope and isinstance(func, ast.Attribute) and func.attr in MUTATORS and not self.dotted(func):
            self.flag(node, "interpreter", f".{func.attr}() in a jit body (Python state the two builds change "
                                           "differently)")
        if self.jit_scope and (self.dotted(func) or getattr(func, "id", getattr(func, "attr", ""))).endswith(
                MESSAGE_CALLS):
            self.messages.update(id(a) for a in [*node.args, *(k.value for k in node.keywords)]
                                 if isinstance(a, ast.JoinedStr))
        if self.jit_scope and isinstance(func, ast.Name) and func.id not in self.aliases \
                and func.id not in self.jit_scope[-1] and func.id not in self.jit_names:
            if func.id in self.module_names:
                self.rooted.add(id(func))
                self.flag(node, "interpreter", f"{func.id}() (plain Python of the file) called from a jit body")
            elif func.id in _BUILTIN_NAMES and func.id not in JIT_BUILTINS:
                self.flag(node, "interpreter", f"{func.id}() in a jit body")
        if isinstance(func, ast.Name) and func.id not in self.aliases:
            rule = BUILTIN_CALL_RULES.get(func.id)
            if rule:
                self.flag(node, rule, f"{func.id}()")
            elif func.id in ("setattr", "delattr") and len(node.args) > 1 and _literal(node.args[1]) in TIMER_ATTRS \
                    and not self.dotted(node.args[0]):
                self.flag(node, "timer", f"{func.id}(..., {_literal(node.args[1])!r})")
            elif func.id in ("setattr", "delattr") and len(node.args) > 1 and _identity(_literal(node.args[1])):
                self.flag(node, "code", f"{func.id}(..., {_literal(node.args[1])!r})")
            elif func.id in ("setattr", "delattr") and len(node.args) > 1 and not _literal(node.args[1]) \
                    and not (_is_self(node.args[0]) and _layer_name(node.args[1])) and not self.dotted(node.args[0]):
                self.flag(node, "monkeypatch", f"{func.id} with a computed name")  # setattr(t, "perf_" + "counter")
            elif func.id in ("setattr", "delattr") and node.args and not _plain_base(node.args[0]):
                self.flag(node, "monkeypatch", f"{func.id} on an expression")
            elif func.id in ("setattr", "delattr") and node.args:
                self._assigned(node.args[0], node, via=func.id, attr=_literal(node.args[1]) if len(node.args) > 1 else None)
            elif func.id == "getattr" and len(node.args) >= 2 and ATTR_RULES.get(str(_literal(node.args[1]))):
                rule = ATTR_RULES[str(_literal(node.args[1]))]
                self.flag(node, rule, f"getattr(..., {_literal(node.args[1])!r})")
            elif func.id == "getattr" and len(node.args) >= 2 and _dunder(_literal(node.args[1])):
                self.flag(node, "namespace", f"getattr(..., {_literal(node.args[1])!r})")
            elif func.id == "getattr" and len(node.args) >= 2 and _literal(node.args[1]) and self.dotted(node):
                self._check_dotted(node)  # getattr(sys, "modules")
            elif func.id == "getattr" and len(node.args) >= 2 and not isinstance(node.args[1], ast.Constant) \
                    and self.dotted(node.args[0]) not in ("triton.language", "numpy") \
                    and not (_is_self(node.args[0]) and _layer_name(node.args[1])):
                # a dtype by name, nothing below; self's own layers (getattr(self, f"layer{i}"))
                # on any object: a computed name reaches dunders and modules (getattr(f, "__glob" + "als__"))
                self.flag(node, "introspection", f"getattr({self.dotted(node.args[0]) or '...'}, <computed name>)")
            elif func.id == "vars":
                base = self.dotted(node.args[0]) if node.args else None
                self.flag(node, "namespace", f"vars({base}) exposes the module's namespace" if base else
                          "vars() exposes an object's namespace")
        if isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and func.func.id == "type":
            self.flag(node, "introspection", "calls type(...)(...): a new object of another's class (a file's)")
        wrapper = self.dotted(func)
        if wrapper == "functools.wraps" and id(node) not in self.decorators:
            self.flag(node, "namespace", "functools.wraps outside a decorator: it copies one object's __dict__ "
                      "into another's")
        if wrapper in ("functools.update_wrapper", "functools.wraps") and (
                any(k.arg in ("assigned", "updated") for k in node.keywords)
                or len(node.args) > (2 if wrapper.endswith("update_wrapper") else 1)):
            self.flag(node, "namespace", f"{wrapper} with attribute names: getattr and setattr by a string")
        if isinstance(func, ast.Attribute) and func.attr == "replace" and any(
                (k.arg or "").startswith("co_") for k in node.keywords):
            self.flag(node, "code", ".replace(" + ", ".join(f"{k.arg}=..." for k in node.keywords
                                                            if (k.arg or "").startswith("co_")) + ")")
        if isinstance(func, ast.Attribute) and func.attr in ("__setattr__", "__delattr__") and node.args:
            self._assigned(node.args[0], node, via=func.attr, attr=_literal(node.args[1]) if len(node.args) > 1 else None)
        if isinstance(func, ast.Attribute) and func.attr in ("get", "setdefault", "pop", "__contains__") and node.args \
                and self.address_key(node.args[0]):
            self.flag(node, "cache", f".{func.attr}() with a key from {self.address_key(node.args[0])}")
        self.generic_visit(node)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        if self.jit_scope and id(node) not in self.messages:
            self.flag(node, "interpreter", "an f-string in a jit body (a tl.constexpr formats as its value in the "
                                           "build, as constexpr[...] in the interpreter)")
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if self.jit_scope and isinstance(node.op, ast.Mod) and (
                isinstance(node.left, ast.JoinedStr) or (isinstance(node.left, ast.Constant)
                                                         and isinstance(node.left.value, str))):
            self.flag(node, "interpreter", "string % formatting in a jit body")
        self.generic_visit(node)

    def visit_Global(self, node: ast.Global | ast.Nonlocal) -> None:
        if self.jit_scope:
            self.flag(node, "interpreter", f"{type(node).__name__.lower()} in a jit body")

    visit_Nonlocal = visit_Global

    def _jit_state(self, target: ast.AST, node: ast.AST) -> None:
        """A jit body may bind names; it may not change a container or an object (item or attribute stores, del),
        but an @aggregate's constexpr_function __init__ may set its own fields on self."""
        if not self.jit_scope:
            return
        for t in ast.walk(target):
            if isinstance(t, ast.Subscript) and isinstance(t.ctx, (ast.Store, ast.Del)):
                self.flag(node, "interpreter", "an item stored or deleted in a jit body (Python state)")
            elif isinstance(t, ast.Attribute) and isinstance(t.ctx, (ast.Store, ast.Del)) and not _is_self(t.value):
                self.flag(node, "interpreter", f"attribute .{t.attr} stored in a jit body (Python state)")

    def visit_Subscript(self, node: ast.Subscript) -> None:
        key = self.address_key(node.slice)
        if key:
            self.flag(node, "cache", f"indexed by {key}")
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        if self.jit_scope and any(isinstance(op, (ast.Is, ast.IsNot)) and not (
                isinstance(right, ast.Constant) and right.value is None) for op, right in zip(node.ops, node.comparators)):
            self.flag(node, "interpreter", "`is` against something other than None in a jit body")
        if any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops) and self.address_key(node.left):
            self.flag(node, "cache", f"membership test of {self.address_key(node.left)}")
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        for t in node.targets:
            self._target(t, node)
            self._jit_state(t, node)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._target(node.target, node)
        self._jit_state(node.target, node)
        if self.jit_scope and isinstance(node.value, (ast.List, ast.ListComp, ast.Set, ast.SetComp, ast.Dict,
                                                       ast.DictComp)):
            self.flag(node, "interpreter", "a container extended in place in a jit body (Python state)")
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if isinstance(node.annotation, ast.Constant) and isinstance(node.annotation.value, str):
            self.flag(node, "dynamic", "a string annotation: code that typing evaluates")
        self._target(node.target, node)
        self._jit_state(node.target, node)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for t in node.targets:
            self._target(t, node)
            self._jit_state(t, node)
        self.generic_visit(node)

    def _target(self, target: ast.AST, node: ast.AST) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                self._target(t, node)
        elif isinstance(target, ast.Attribute):
            if target.attr == "__class__":
                self.flag(node, "introspection", "assigns __class__ (a tensor passed off as another type)")
            elif target.attr == "__code__":
                self.flag(node, "code", "assigns .__code__")
            elif _identity(target.attr):  # a function's __name__ is the file name Triton's cache writes its build under
                self.flag(node, "code", f"assigns .{target.attr}")
            elif target.attr in ("__dict__", "__bases__", "__mro__"):
                self.flag(node, "monkeypatch", f"assigns .{target.attr}")
            elif not self.dotted(target.value) and target.attr in TIMER_ATTRS and not (
                    _is_self(target.value) and target.attr in SELF_NAMES):
                self.flag(node, "timer", f"assigns .{target.attr}")
            elif not _plain_base(target.value):  # type(x).f = ..., (time,)[0].f = ...: an object the screen cannot name
                self.flag(node, "monkeypatch", f"assigns .{target.attr} of an expression")
            else:
                self._assigned(target.value, node, via="assignment", attr=target.attr)
        elif isinstance(target, ast.Subscript):
            inner = target.value
            if isinstance(inner, ast.Attribute) and inner.attr == "__dict__":
                self.flag(node, "monkeypatch", "edits a __dict__")
            elif self.dotted(inner):  # a library's dict or list edited in place (triton.backends.backends["nvidia"])
                self.flag(node, "monkeypatch", f"edits {self.dotted(inner)}[...]")
            elif isinstance(inner, ast.Attribute) and _plain_base(inner):  # x.table[k] = v: x must be the file's
                self._assigned(inner.value, node, via="item assignment", attr=inner.attr)
            elif isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id in ("vars", "globals") \
                    and inner.args:
                self.flag(node, "monkeypatch", f"edits {inner.func.id}(...)")

    def address_key(self, node: ast.AST) -> str | None:
        found = _address_key(node)
        if found:
            return found
        names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} & self.tainted
        return f"{sorted(names)[0]}, built from data_ptr() or id()" if names else None

    def _assigned(self, obj: ast.AST, node: ast.AST, via: str, attr: str | None) -> None:
        """An attribute of `obj` is set or deleted: refused when obj is (reached from) an imported module."""
        base = self.dotted(obj)
        if not base:
            root = obj
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and not _is_self(root) and root.id != "cls" \
                    and root.id not in self.own_objects:
                self.flag(node, "monkeypatch", f"{via} to .{attr or '<computed>'} of {root.id}, a name the screen "
                          "cannot follow to an object the file made (a loop, parameter or call could bind a module)")
            return
        name = f"{base}.{attr}" if attr else f"{base}.<computed>"
        if name.startswith(TIMER_PREFIXES):
            self.flag(node, "timer", f"{via} to {name}")
        else:
            self.flag(node, "monkeypatch", f"{via} to {name}")


PRIVATE_CHECKED = ALLOWED_ROOTS - {"triton", "numpy", "einops", "cutlass", "cuda", "tilelang", "tvm", "rungs"}
"""Roots whose `_private` names are refused: the standard modules (typing._eval_type, dataclasses._create_fn,
uuid._get_command_stdout run strings and commands) and torch (torch._utils, torch._subclasses, torch._library)."""


RAW_MEMORY_PROTOCOLS = frozenset({"__array_interface__", "__array_struct__", "__cuda_array_interface__"})
"""numpy (and other array libraries) build an array over whatever address an object's protocol names: red team 7
(2026-12-05) ran a softmax in numpy over an output's memory from `np.asarray(SimpleNamespace(__array_interface__=
{"data": (y.data_ptr(), False), ...}))`, with no Tensor method the host-read refusal sees."""
BUILTIN_MARK = "__triton_builtin__"
"""The attribute that makes a callable a Triton builtin (triton.language.core.TRITON_BUILTIN): refused by its
literal name anywhere (a class body's `__triton_builtin__ = True`, a keyword, a string), as NAME_RULES refuses
Triton's `builtin` and `_tensor_member_fn`."""

JIT_BUILTINS = frozenset({"range", "len", "min", "max", "int", "float", "bool", "print", "tuple", "abs", "zip",
                          "enumerate"})
"""The Python builtins a @triton.jit body may call: those Triton's compiler implements or evaluates the same way the
interpreter does. Any other (hasattr, getattr, isinstance, type, id, str, repr...) can tell the two builds apart:
under the interpreter a value's `.handle` holds numpy data, in the compiled build an IR value."""
_BUILTIN_NAMES = frozenset(dir(__import__("builtins")))
MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "update", "add", "discard",
                      "setdefault", "popitem", "sort", "reverse", "format", "format_map"})
"""Methods that change a Python container (or format a string) in a jit body: Triton's compiler traces both sides of
a run-time `if` and a loop's body once or twice, the interpreter runs what the values say, so a list appended to in a
branch never taken has a length that differs between the builds (red team 2, 2026-12-05); and a tl.constexpr
formats as its value in the build and as `constexpr[0]` in the interpreter."""
MESSAGE_CALLS = ("static_print", "static_assert", "device_print", "device_assert", "print")
"""Calls whose direct arguments may be f-strings in a jit body: messages, not values the kernel computes with."""


@functools.lru_cache(maxsize=None)
def _star_binds(module: str, name: str) -> bool:
    """Whether `from module import *` binds `name` (its `__all__`, or its public names): a refused name under one
    of them cannot be followed. True where the module does not resolve here (refused, to be safe)."""
    objs = _walk(module)
    if not objs or not isinstance(objs[-1], types.ModuleType):
        return True
    exported = getattr(objs[-1], "__all__", None)
    return name in exported if isinstance(exported, (list, tuple)) else not name.startswith("_")


def _jit_decorator(name: str | None) -> bool:
    """triton.jit, triton.experimental.gluon.jit, triton.constexpr_function (however imported): bodies that Triton's
    compiler runs as Python at compile time and its interpreter at run time."""
    return bool(name) and name.startswith("triton.") and name.rsplit(".", 1)[-1] in ("jit", "constexpr_function")


def _root(node: ast.AST) -> ast.Name | None:
    """`a` of `a.b.c(...)[i].d`."""
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node if isinstance(node, ast.Name) else None


def _private(name: str) -> str | None:
    """'private' for a dotted name under a standard module or torch with a `_name` (not a dunder) past its root."""
    parts = name.split(".")
    if parts[0] in PRIVATE_CHECKED and not name.startswith("torch.nn.modules.") and any(
            p.startswith("_") and not (p.startswith("__") and p.endswith("__")) for p in parts[1:]):
        return "private"  # torch.nn.modules.conv._ConvNd, a layer's base class, is not a way out
    return None


def _layer_name(node: ast.AST) -> bool:
    """f"layer{i}": an f-string whose literal start is a plain name no refused attribute begins with."""
    if not (isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant)):
        return False
    prefix = str(node.values[0].value)
    return bool(prefix) and prefix[0].isalpha() and not any(
        name.startswith(prefix) for name in (*ATTR_RULES, *TIMER_ATTRS))


def _is_self(node: ast.AST) -> bool:
    """The name `self` (bound only as a method's first parameter: the screen refuses binding it elsewhere)."""
    return isinstance(node, ast.Name) and node.id == "self"


def _plain_base(node: ast.AST) -> bool:
    """A name or a chain of attributes of one (`self.conv.weight`): what the screen can resolve an assignment to."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _binds(node: ast.AST) -> str | None:
    """The name a node binds, where it binds one: an assignment or deletion target, a parameter, an import's local
    name, `except ... as`, a match capture, `global`/`nonlocal`, a function or class name."""
    if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
        return node.id
    if isinstance(node, ast.arg):
        return node.arg
    if isinstance(node, ast.alias):
        return node.asname or node.name.split(".")[0]
    if isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)):
        return node.name
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return next((n for n in node.names if n in SHADOWED), None)
    return None


def _literal(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _dunder(name: str | None) -> bool:
    return bool(name) and name.startswith("__") and name.endswith("__") and name not in SAFE_DUNDERS


def _identity(name: str | None) -> bool:
    """A dunder attribute a kernel may not assign: every one but __doc__ (a function's __name__, __qualname__ and
    __module__ are what Triton's cache names its files by and what the harness's reports and op trace read)."""
    return bool(name) and name.startswith("__") and name.endswith("__") and name != "__doc__"


def _address_key(node: ast.AST) -> str | None:
    """'data_ptr()' or 'id()' when the expression (a dict key) is built from a tensor's address or identity."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            f = sub.func
            if isinstance(f, ast.Name) and f.id == "id":
                return "id()"
            if isinstance(f, ast.Attribute) and f.attr in ADDRESS_CALLS:
                return f"{f.attr}()"
        if isinstance(sub, ast.Attribute) and sub.attr == "_cdata":
            return "_cdata"
    return None


def screen(tree: ast.Module) -> list[Finding]:
    """Every finding, in source order (one per line and rule)."""
    s = _Screen()
    s.collect_aliases(tree)
    s.collect_jit(tree)
    s.visit(tree)
    seen: set[tuple[int, str]] = set()
    out = []
    for f in sorted(s.findings, key=lambda f: f.line):
        if (f.line, f.rule) not in seen:
            seen.add((f.line, f.rule))
            out.append(f)
    return out
