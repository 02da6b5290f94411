"""Torch compute on the hot path, refused in the candidate's process: the entry runs under a TorchDispatchMode that
refuses aten ops other than allocation, views, copies and fills, and a TorchFunctionMode that refuses reading tensor
values on the host (numpy, Python lists, raw storage, text), unless the task allows torch compute; the refusal names
the op. Only the candidate's own ops count (launch_gate.judged), not those its DSL's launcher makes (inside Triton's
launchers only the interpreter's reads of storage: launch_gate.own_read).
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

from rungs.worker.job import Job
from rungs.worker.launch_gate import judged, own_read


class TorchComputeRefused(RuntimeError):
    """The entry computed with torch ops on the hot path, which the task does not allow."""


ALLOWED_OPS = frozenset("""
empty empty_like empty_strided new_empty new_empty_strided zeros zeros_like new_zeros ones ones_like new_ones
full full_like new_full fill_ zero_ arange linspace scalar_tensor lift_fresh lift_fresh_copy
view _unsafe_view reshape _reshape_alias as_strided as_strided_ transpose transpose_ t t_ permute expand expand_as
unsqueeze unsqueeze_ squeeze squeeze_ select slice narrow alias detach detach_ unbind split split_with_sizes chunk
tensor_split view_as unflatten flatten movedim diagonal unfold
clone contiguous copy_ _to_copy to _copy_from _copy_from_and_resize resize_ set_ cat stack constant_pad_nd
_local_scalar_dense sym_size sym_stride sym_numel sym_storage_offset is_same_size record_stream _pin_memory
_has_compatible_shallow_copy_type
""".split())
"""aten ops an honest launcher makes: allocations and constant fills, views, layout copies, scalar reads."""


def trace_mode(allowed: frozenset[str], refused: list[str]) -> Any:
    from torch.utils._python_dispatch import TorchDispatchMode

    class HotPathTrace(TorchDispatchMode):
        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            return False  # True wraps __torch_dispatch__ through torch._dynamo: a 1.4 s import, per worker

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            if not judged():
                return func(*args, **(kwargs or {}))
            namespace, _, name = func._schema.name.partition("::")
            if namespace != "aten" or name not in allowed:
                refused.append(f"{namespace}.{name}")
                raise TorchComputeRefused(_refusal(refused))
            out = func(*args, **(kwargs or {}))
            if name in _COPIES and _to_host(args, kwargs, out):
                refused.append(f"a device-to-host copy (aten.{name})")
                raise TorchComputeRefused(_host_refusal(refused[-1]))
            return out

    return HotPathTrace()


_COPIES = frozenset({"_to_copy", "copy_", "_copy_from", "_copy_from_and_resize", "to", "_pin_memory"})


def _to_host(args: Any, kwargs: Any, out: Any) -> bool:
    """A copy from device memory into host memory: the input's values where Python and numpy can compute on them."""
    import torch

    def tensors(x: Any) -> list[Any]:
        if isinstance(x, torch.Tensor):
            return [x]
        if isinstance(x, (list, tuple)):
            return [t for v in x for t in tensors(v)]
        return []

    src = [t for t in tensors(list(args)) + tensors(list((kwargs or {}).values())) if t.device.type != "cpu"]
    dst = [t for t in tensors(out) + tensors(list(args[:1])) if t.device.type == "cpu"]
    return bool(src) and bool(dst)


HOST_READS = frozenset({"numpy", "tolist", "__array__", "__array_wrap__", "__dlpack__", "untyped_storage", "storage",
                        "_typed_storage", "cpu", "__reduce_ex__", "__getstate__", "__repr__", "__str__",
                        "__format__", "apply_", "map_", "map2_", "to_dlpack"})
"""Tensor methods that hand a tensor's values to the host (numpy, Python lists, raw storage bytes, text): the routes
host compute takes, which the aten trace does not see."""
SCALAR_READS = frozenset({"item", "__float__", "__int__", "__index__", "__bool__", "__complex__"})
MAX_SCALAR_READS = 64
"""An honest launcher reads a few scalars (a flag, a count); more than this in one call is a computation on the
host, element by element."""


def _host_refusal(what: str) -> str:
    return (f"the entry read tensor values on the host ({what}): host compute (numpy, Python) on the hot path is "
            "refused; the task must be computed by its DSL kernels")


def host_mode(refused: list[str]) -> Any:
    from torch.overrides import TorchFunctionMode

    reads = [0]

    class HostReads(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            name = getattr(func, "__name__", "")
            if name in HOST_READS or name in SCALAR_READS:
                if judged() and not own_read(name):
                    if name in HOST_READS:
                        refused.append(f"Tensor.{name}")
                        raise TorchComputeRefused(_host_refusal(f"Tensor.{name}"))
                    reads[0] += 1
                    if reads[0] > MAX_SCALAR_READS:
                        refused.append(f"Tensor.{name}")
                        raise TorchComputeRefused(_host_refusal(f"more than {MAX_SCALAR_READS} scalar reads "
                                                                f"(Tensor.{name}) in one call"))
            return func(*args, **(kwargs or {}))

    return HostReads()


def _refusal(refused: list[str]) -> str:
    return (f"torch computed {refused[0]} on the hot path: the task must be computed by its DSL kernels "
            "(allocations, views and copies are all torch may do here)")


def refused_error(refused: list[str]) -> TorchComputeRefused:
    """The error for what the trace or the host-read mode refused, once the call is over: the candidate caught the
    refusal and carried on."""
    first = refused[0]
    return TorchComputeRefused(_host_refusal(first) if first.startswith(("Tensor.", "a device-to-host"))
                               else _refusal(refused))


@contextmanager
def light_watch(job: Job) -> Iterator[None]:
    """The torch-op trace and the host-read refusal, without the tamper snapshot (milliseconds of host time that,
    inside a timed call, would make a checked call slower than the others); the snapshot is compared after the
    timed loop (after_bench)."""
    if job.allow_torch_compute:
        yield
        return
    refused: list[str] = []
    host, mode = host_mode(refused), trace_mode(ALLOWED_OPS, refused)
    with host, mode:
        yield
    if refused:  # the candidate caught a refusal and carried on
        raise refused_error(refused)
