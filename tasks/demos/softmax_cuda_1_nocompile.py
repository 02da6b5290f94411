"""Row softmax in CUDA C++, first try: one 256-thread block per row, warp-shuffle reductions.

Does not compile: `__shfl_xor` (without `_sync`) was removed from CUDA in version 9; the warp-synchronous
shuffles take the mask of participating lanes as their first argument.
"""
import torch

from rungs.backends.cuda_api import compile_cuda, launch

SOURCE = r"""
#define THREADS 256
#define NEG_INF __int_as_float(0xff800000)  // NVRTC has no math.h: -inf by its bits

__device__ float block_reduce(float v, bool is_max, float* scratch) {
    for (int o = 16; o > 0; o >>= 1) {
        float other = __shfl_xor(v, o);
        v = is_max ? fmaxf(v, other) : v + other;
    }
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = scratch[0];
    for (int w = 1; w < THREADS / 32; ++w) v = is_max ? fmaxf(v, scratch[w]) : v + scratch[w];
    return v;
}

extern "C" __global__ void softmax_rows(float* __restrict__ y, const float* __restrict__ x, int n_cols) {
    __shared__ float scratch[THREADS / 32];
    const float* row = x + (size_t)blockIdx.x * n_cols;
    float* out = y + (size_t)blockIdx.x * n_cols;
    float m = NEG_INF;
    for (int j = threadIdx.x; j < n_cols; j += THREADS) m = fmaxf(m, row[j]);
    m = block_reduce(m, true, scratch);
    float s = 0.f;
    for (int j = threadIdx.x; j < n_cols; j += THREADS) s += expf(row[j] - m);
    s = block_reduce(s, false, scratch);
    for (int j = threadIdx.x; j < n_cols; j += THREADS) out[j] = expf(row[j] - m) / s;
}
"""

_kernel = compile_cuda(SOURCE, "softmax_rows")


def kernel(x: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty_like(x)
    launch(_kernel, grid=(M,), block=(256,), args=(y, x, N))
    return y
