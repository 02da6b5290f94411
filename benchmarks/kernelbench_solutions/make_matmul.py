"""Writes the 2-D matmul solutions of this folder (level1/<problem stem>.py) from the square matmul's kernel, which
takes any strides: a transposed operand is passed as the view the reference multiplies (A.T), never copied. Run it
again after changing the template. 4_Matrix_vector_multiplication_ and 6_Matmul_with_large_K_dimension_ are written
by hand (split K): one float32 accumulator walking K = 524288 or more misses the float64 reference.

    python3 benchmarks/kernelbench_solutions/make_matmul.py
"""
from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent / "level1"
KERNEL = (HERE / "1_Square_matrix_multiplication_.py").read_text().split("class ModelNew")[0]

# stem: (forward's parameters, the two operands as the reference multiplies them)
PROBLEMS = {
    "2_Standard_matrix_multiplication_": ("A, B", "A", "B"),
    "7_Matmul_with_small_K_dimension_": ("A, B", "A", "B"),
    "8_Matmul_with_irregular_shapes_": ("A, B", "A", "B"),
    "9_Tall_skinny_matrix_multiplication_": ("A, B", "A", "B"),
    "13_Matmul_for_symmetric_matrices": ("A, B", "A", "B"),
    "16_Matmul_with_transposed_A": ("A, B", "A.T", "B"),
    "17_Matmul_with_transposed_B": ("A, B", "A", "B.T"),
    "18_Matmul_with_transposed_both": ("A, B", "A.T", "B.T"),
}

MODEL = '''class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        a, b = {a}, {b}  # views: the kernel reads any strides
        M, K = a.shape
        N = b.shape[1]
        C = torch.empty((M, N), dtype=A.dtype, device=A.device)
        grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
        matmul_kernel[grid](C, a, b, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                            BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
        return C
'''


# A tensor times a matrix over its last dimension: the leading dimensions are rows of one 2-D matmul (a view when A
# is contiguous, as get_inputs makes it), and the result takes them back.
TENSOR_PROBLEMS = ("10_3D_tensor_matrix_multiplication", "11_4D_tensor_matrix_multiplication")

TENSOR_MODEL = '''class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        a = A.reshape(-1, A.shape[-1])  # the leading dimensions as rows: a view of a contiguous A
        M, K = a.shape
        N = B.shape[1]
        C = torch.empty((M, N), dtype=A.dtype, device=A.device)
        grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
        matmul_kernel[grid](C, a, B, M, N, K, a.stride(0), a.stride(1), B.stride(0), B.stride(1),
                            BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
        return C.view(*A.shape[:-1], N)
'''


# triu(A @ B) and tril(A @ B): the square matmul with the triangle kept at the store; a tile wholly outside it stores
# zeros without walking K (about half the tiles).
TRIANGULAR = {"14_Matmul_for_upper_triangular_matrices": True, "15_Matmul_for_lower_triangular_matrices": False}

TRIANGULAR_SOURCE = '''"""C = {name}(A @ B) (written by make_matmul.py): a tiled matmul, one program per (BLOCK_M, BLOCK_N) tile of C,
walking K in BLOCK_K steps with masks for sizes no block divides, the {side} triangle kept at the store; a tile wholly
outside it stores zeros without walking K. fp32 in, fp32 accumulate (IEEE, not TF32: the reference is float64)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def triangular_matmul_kernel(c_ptr, a_ptr, b_ptr, M, N, K, sam, sak, sbk, sbn, UPPER: tl.constexpr,
                             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    m0 = tl.program_id(0) * BLOCK_M
    n0 = tl.program_id(1) * BLOCK_N
    rm = m0 + tl.arange(0, BLOCK_M)
    rn = n0 + tl.arange(0, BLOCK_N)
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    if UPPER:
        empty = m0 > n0 + BLOCK_N - 1  # every row below every column: all of it under the diagonal
    else:
        empty = n0 > m0 + BLOCK_M - 1
    if not empty:
        for k in range(0, K, BLOCK_K):
            rk = k + tl.arange(0, BLOCK_K)
            a = tl.load(a_ptr + rm[:, None] * sam + rk[None, :] * sak, mask=(rm[:, None] < M) & (rk[None, :] < K),
                        other=0.0)
            b = tl.load(b_ptr + rk[:, None] * sbk + rn[None, :] * sbn, mask=(rk[:, None] < K) & (rn[None, :] < N),
                        other=0.0)
            acc += tl.dot(a, b, input_precision="ieee")
    if UPPER:
        keep = rn[None, :] >= rm[:, None]
    else:
        keep = rn[None, :] <= rm[:, None]
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.where(keep, acc, 0.0), mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        M, K = A.shape
        N = B.shape[1]
        C = torch.empty((M, N), dtype=A.dtype, device=A.device)
        grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
        triangular_matmul_kernel[grid](C, A, B, M, N, K, A.stride(0), A.stride(1), B.stride(0), B.stride(1),
                                       UPPER={upper}, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
        return C
'''


def main() -> None:
    for stem, (_, a, b) in PROBLEMS.items():
        head = KERNEL.replace('"""C = A @ B:', f'"""C = {a} @ {b} (written by make_matmul.py from the square matmul):', 1)
        (HERE / f"{stem}.py").write_text(head + MODEL.format(a=a, b=b))
        print(f"wrote {stem}.py")
    for stem, upper in TRIANGULAR.items():
        (HERE / f"{stem}.py").write_text(TRIANGULAR_SOURCE.format(name="triu" if upper else "tril",
                                                                  side="upper" if upper else "lower", upper=upper))
        print(f"wrote {stem}.py")
    for stem in TENSOR_PROBLEMS:
        head = KERNEL.replace('"""C = A @ B:', '"""C = A @ B over A\'s last dimension (written by make_matmul.py from the '
                              'square matmul):', 1)
        (HERE / f"{stem}.py").write_text(head + TENSOR_MODEL)
        print(f"wrote {stem}.py")


if __name__ == "__main__":
    main()
