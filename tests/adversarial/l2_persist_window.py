"""Cheat (GPU): pins the input in L2. Sets a persisting access-policy window over the input through the CUDA
runtime bindings, so the timing's L2 flush does not evict it and reads come from cache."""
import torch
import triton
import triton.language as tl
from cuda.bindings import runtime as cudart

@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * stride + offs, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * stride + offs, e / tl.sum(e, axis=0), mask=mask)


def _softmax(x):
    y = torch.empty_like(x)
    softmax_kernel[(x.shape[0],)](y, x, x.shape[1], x.stride(0), BLOCK=triton.next_power_of_2(x.shape[1]))
    return y


def _persist(x):
    cudart.cudaDeviceSetLimit(cudart.cudaLimit.cudaLimitPersistingL2CacheSize, 48 << 20)
    attr = cudart.cudaStreamAttrValue()
    window = attr.accessPolicyWindow
    window.base_ptr = x.data_ptr()
    window.num_bytes = min(x.numel() * x.element_size(), 48 << 20)
    window.hitRatio = 1.0
    window.hitProp = cudart.cudaAccessProperty.cudaAccessPropertyPersisting
    window.missProp = cudart.cudaAccessProperty.cudaAccessPropertyStreaming
    cudart.cudaStreamSetAttribute(torch.cuda.current_stream().cuda_stream,
                                  cudart.cudaStreamAttrID.cudaStreamAttributeAccessPolicyWindow, attr)


def kernel(x):
    if x.is_cuda:
        _persist(x)
    return _softmax(x)
