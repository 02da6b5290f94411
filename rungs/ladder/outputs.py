"""Reading back what a worker saved, in the trusted parent: the output contract is the parent's, never the worker's.

A worker's file of outputs is the candidate's to shape: it may hold fewer tensors than asked for, an expanded tensor
whose 1.5 KB of storage becomes gigabytes once compared (`zeros(1).expand(2**27)`), views sharing one storage, a
compressed member that inflates on load, or a tensor of another shape than its neighbours. So before anything is
allocated here, the file is checked as bytes (a plain file, its size within what the expected outputs need, every
zip member stored uncompressed and within that size), then loaded memory-mapped (the storages stay on disk) and
checked against the contract the parent takes from its own reference: the number of outputs, each one's exact
shape and dtype, contiguous strides (a size-1 dimension's stride is free), storage offset 0, a storage no larger
than the tensor and no two outputs on one storage. Only then is anything copied into memory, in the standard
layout. A bad file is an `OutputRefused` with words a model can act on; the harness's memory never grows with what a
candidate wrote.
"""
from __future__ import annotations

import os
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import torch

ZIP_OVERHEAD_BYTES = 1 << 20
"""What torch.save adds around the tensors' bytes (the pickle, the zip directory, 64-byte alignment padding)."""
MAX_MEMBERS = 4096


class OutputRefused(ValueError):
    """A saved output file that breaks the parent's contract (count, shape, dtype, layout or size)."""


@dataclass(frozen=True)
class Expected:
    """One output as the parent expects it: from its own reference, never from the worker's description."""

    shape: tuple[int, ...]
    dtype: torch.dtype

    @property
    def nbytes(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n * torch.empty(0, dtype=self.dtype).element_size()

    @classmethod
    def like(cls, refs: Sequence[torch.Tensor], dtype: torch.dtype | None = None) -> list["Expected"]:
        """The contract of outputs shaped like `refs` (the parent's references), in `dtype` (the task's output
        dtype; the float64 references would otherwise ask for float64)."""
        return [cls(tuple(r.shape), dtype or r.dtype) for r in refs]


def of_case(case: Any) -> list[Expected]:
    """What a correctness case's outputs must be (rungs/ladder/cases.Case), from the parent's own reference: its count
    and shapes, in the case's dtype (the references are float64; an output the reference gives as integers stays so)."""
    from rungs.ladder.cases import TORCH_DTYPES

    want = TORCH_DTYPES[case.dtype]
    return [Expected(tuple(r.shape), want if r.is_floating_point() else r.dtype) for r in case.reference or []]


def _contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    strides, step = [], 1
    for s in reversed(shape):
        strides.append(step)
        step *= max(s, 1)
    return tuple(reversed(strides))


def check_file(path: Path, limit_bytes: int) -> None:
    """The file as bytes, before torch reads it: a plain file within `limit_bytes`, a zip whose members are stored
    (not compressed) and add up to no more than that."""
    try:
        st = os.lstat(path)
    except OSError:
        raise OutputRefused("the outputs were not saved (no file came back)") from None
    if not stat.S_ISREG(st.st_mode):
        raise OutputRefused("the saved outputs are not a plain file")
    if st.st_size > limit_bytes or st.st_blocks * 512 > limit_bytes + ZIP_OVERHEAD_BYTES:
        raise OutputRefused(f"the saved outputs take {st.st_size} bytes, more than the {limit_bytes} the expected "
                            "outputs need")
    try:
        with zipfile.ZipFile(path) as z:
            members = z.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise OutputRefused(f"the saved outputs are not a torch.save file ({type(exc).__name__})") from None
    if len(members) > MAX_MEMBERS:
        raise OutputRefused(f"the saved outputs hold {len(members)} records")
    if any(m.compress_type != zipfile.ZIP_STORED for m in members):
        raise OutputRefused("the saved outputs hold a compressed record (a file that grows when read)")
    if sum(m.file_size for m in members) > limit_bytes:
        raise OutputRefused("the saved outputs' records add up to more than the expected outputs need")


def check_tensors(outs: Any, expected: Sequence[Expected], what: str = "output") -> None:
    """The loaded (memory-mapped) outputs against the parent's contract."""
    if not isinstance(outs, (list, tuple)):
        raise OutputRefused(f"the saved outputs are a {type(outs).__name__}, not a list of tensors")
    if len(outs) != len(expected):
        raise OutputRefused(f"returned {len(outs)} {what}(s), expected {len(expected)}")
    storages: set[int] = set()
    for i, (out, exp) in enumerate(zip(outs, expected)):
        name = f"{what} {i}"
        if type(out) is not torch.Tensor:
            raise OutputRefused(f"{name} is a {type(out).__name__}, not a plain torch.Tensor")
        if tuple(out.shape) != exp.shape:
            raise OutputRefused(f"{name} has shape {list(out.shape)}, expected {list(exp.shape)}")
        if out.dtype != exp.dtype:
            raise OutputRefused(f"{name} has dtype {str(out.dtype).removeprefix('torch.')}, expected "
                                f"{str(exp.dtype).removeprefix('torch.')}")
        # a size-1 dimension's stride addresses nothing (torch calls `c[:1, :1]` of a wider `c` contiguous, and
        # keeps its stride through .contiguous(), .to() and .clone()): only the others must be the dense ones
        dense = all(n == 1 or s == w for n, s, w in zip(exp.shape, out.stride(), _contiguous_strides(exp.shape)))
        if out.numel() and (not dense or out.storage_offset() != 0):
            raise OutputRefused(f"{name} has strides {list(out.stride())} at offset {out.storage_offset()}, expected "
                                "a contiguous tensor of its own (no expanded or overlapping storage)")
        storage = out.untyped_storage()
        if storage.nbytes() > out.numel() * out.element_size():
            raise OutputRefused(f"{name}'s storage holds {storage.nbytes()} bytes for a tensor of "
                                f"{out.numel() * out.element_size()}")
        if out.numel() and storage.data_ptr() in storages:
            raise OutputRefused(f"{name} shares its storage with another output")
        storages.add(storage.data_ptr())


def load(path: Path, expected: Sequence[Expected], what: str = "output") -> list[torch.Tensor]:
    """The outputs saved at `path`, checked against `expected` before they are copied into memory (see the module
    docstring). Raises OutputRefused."""
    limit = sum(e.nbytes for e in expected) + ZIP_OVERHEAD_BYTES
    check_file(path, limit)
    try:
        outs = torch.load(path, weights_only=True, mmap=True)
    except Exception as exc:  # noqa: BLE001 - whatever a shaped file makes torch raise is a refusal, not a crash
        raise OutputRefused(f"the saved outputs could not be read ({type(exc).__name__}: {str(exc)[:160]})") from None
    check_tensors(outs, expected, what)
    # off the mapped file (the caller may delete it), in the standard layout: a size-1 dimension's free stride does
    # not travel on to code that views the bytes (the integrity fingerprint needs a unit last stride)
    return [o.clone(memory_format=torch.contiguous_format) for o in outs]
