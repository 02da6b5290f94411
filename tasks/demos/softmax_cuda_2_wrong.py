"""Row softmax in CUDA C++, second try: one 256-thread block per row, warp-shuffle reductions.

Compiles, but wrong whenever a row is longer than 32 columns: the maximum is combined across the block's 8 warps,
the sum is not. Each warp then divides by its own partial sum, which is too small, so outputs come out too large.
Rows of up to 32 columns (M=4 N=7, N=1) live in warp 0 and come out right, which is how the bug hides.
"""
import torch

from rungs.backends.cuda_api import compile_cuda, launch

SOURCE = r"""
#define THREADS 256
#define NEG_INF __int_as_float(0xff800000)  // NVRTC has no math.h: -inf by its bits

__device__ float warp_reduce(float v, bool is_max) {
    for (int o = 16; o > 0; o >>= 1) {
        float other = __shfl_xor_sync(0xffffffffu, v, o);
        v = is_max ? fmaxf(v, other) : v + other;
    }
    return v;
}

extern "C" __global__ void softmax_rows(float* __restrict__ y, const float* __restrict__ x, int n_cols) {
    __shared__ float scratch[THREADS / 32];
    const float* row = x + (size_t)blockIdx.x * n_cols;
    float* out = y + (size_t)blockIdx.x * n_cols;
    float m = NEG_INF;
    for (int j = threadIdx.x; j < n_cols; j += THREADS) m = fmaxf(m, row[j]);
    m = warp_reduce(m, true);
    if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = m;
    __syncthreads();
    m = scratch[0];
    for (int w = 1; w < THREADS / 32; ++w) m = fmaxf(m, scratch[w]);
    float s = 0.f;
    for (int j = threadIdx.x; j < n_cols; j += THREADS) s += expf(row[j] - m);
    s = warp_reduce(s, false);  // this warp's share only
    for (int j = threadIdx.x; j < n_cols; j += THREADS) out[j] = expf(row[j] - m) / s;
}
"""

_kernel = compile_cuda(SOURCE, "softmax_rows")


def kernel(x: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty_like(x)
    launch(_kernel, grid=(M,), block=(256,), args=(y, x, N))
    return y
