"""Cheat (GPU): pins its input in L2 through the CUDA driver (ctypes on libcuda, which every GPU machine has, unlike
cuda-python). Each call sets a persisting access-policy window over the input on the caller's stream, so reads of
it are kept in the L2 carve-out, where the timing's flush (plain reads) cannot evict them."""
import ctypes

import torch
import triton
import triton.language as tl

CU_LIMIT_PERSISTING_L2_CACHE_SIZE = 6
CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW = 1
CU_ACCESS_PROPERTY_STREAMING, CU_ACCESS_PROPERTY_PERSISTING = 1, 2


class Window(ctypes.Structure):
    _fields_ = [("base_ptr", ctypes.c_void_p), ("num_bytes", ctypes.c_size_t), ("hitRatio", ctypes.c_float),
                ("hitProp", ctypes.c_int), ("missProp", ctypes.c_int)]


class StreamAttrValue(ctypes.Union):  # CUlaunchAttributeValue: 64 bytes
    _fields_ = [("accessPolicyWindow", Window), ("pad", ctypes.c_char * 64)]


_cuda = {}


def _attribute(lib, attribute: int) -> int:
    device, value = ctypes.c_int(), ctypes.c_int()
    if lib.cuCtxGetDevice(ctypes.byref(device)) or lib.cuDeviceGetAttribute(ctypes.byref(value), attribute, device):
        raise RuntimeError("cuDeviceGetAttribute failed")
    return value.value


def persist(x: torch.Tensor) -> None:
    if "limit" not in _cuda:  # once: setting the carve-out waits for the device, which the timer would see
        lib = _cuda["lib"] = ctypes.CDLL("libcuda.so.1")
        _cuda["limit"] = min(_attribute(lib, 108), _attribute(lib, 109))  # max persisting L2, max window size
        rc = lib.cuCtxSetLimit(ctypes.c_int(CU_LIMIT_PERSISTING_L2_CACHE_SIZE), ctypes.c_size_t(_cuda["limit"]))
        if rc:
            raise RuntimeError(f"cuCtxSetLimit returned CUresult {rc}")
    lib, limit = _cuda["lib"], _cuda["limit"]
    value = StreamAttrValue()
    value.accessPolicyWindow = Window(x.data_ptr(), min(x.numel() * x.element_size(), limit), 1.0,
                                      CU_ACCESS_PROPERTY_PERSISTING, CU_ACCESS_PROPERTY_STREAMING)
    rc = lib.cuStreamSetAttribute(ctypes.c_void_p(torch.cuda.current_stream().cuda_stream),
                                  ctypes.c_int(CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW), ctypes.byref(value))
    if rc:
        raise RuntimeError(f"cuStreamSetAttribute returned CUresult {rc}")


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * stride + offs, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * stride + offs, e / tl.sum(e, axis=0), mask=mask)


def kernel(x):
    if x.is_cuda:
        persist(x)
    y = torch.empty_like(x)
    softmax_kernel[(x.shape[0],)](y, x, x.shape[1], x.stride(0), BLOCK=triton.next_power_of_2(x.shape[1]))
    return y
