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


def main() -> None:
    for stem, (_, a, b) in PROBLEMS.items():
        head = KERNEL.replace('"""C = A @ B:', f'"""C = {a} @ {b} (written by make_matmul.py from the square matmul):', 1)
        (HERE / f"{stem}.py").write_text(head + MODEL.format(a=a, b=b))
        print(f"wrote {stem}.py")
    for stem in TENSOR_PROBLEMS:
        head = KERNEL.replace('"""C = A @ B:', '"""C = A @ B over A\'s last dimension (written by make_matmul.py from the '
                              'square matmul):', 1)
        (HERE / f"{stem}.py").write_text(head + TENSOR_MODEL)
        print(f"wrote {stem}.py")


if __name__ == "__main__":
    main()
