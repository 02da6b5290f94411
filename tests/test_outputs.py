"""The parent's reading of a worker's saved outputs (rungs/ladder/outputs.py): the contract comes from the parent, and a
shaped file is refused before anything is allocated for it."""
from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
import torch

from rungs.ladder import outputs
from rungs.ladder.outputs import Expected, OutputRefused

WANT = [Expected((64, 32), torch.float32)]


def saved(tmp_path: Path, value, name: str = "out.pt") -> Path:
    path = tmp_path / name
    torch.save(value, path)
    return path


def test_honest_outputs_load(tmp_path):
    x = torch.randn(64, 32)
    [got] = outputs.load(saved(tmp_path, [x]), WANT)
    assert torch.equal(got, x)


@pytest.mark.parametrize("value, phrase", [
    ([], "returned 0 output(s), expected 1"),
    ([torch.randn(64, 32), torch.randn(64, 32)], "returned 2 output(s), expected 1"),
    ([None], "output 0 is a NoneType, not a plain torch.Tensor"),
    ([torch.randn(32, 64)], "output 0 has shape [32, 64], expected [64, 32]"),
    ([torch.randn(64, 32, dtype=torch.float64)], "output 0 has dtype float64, expected float32"),
    ([torch.randn(32, 64).t()], "expected a contiguous tensor of its own"),
    ([torch.zeros(1).expand(64, 32)], "expected a contiguous tensor of its own"),
    ([torch.randn(64 * 32 + 1)[1:].view(64, 32)], "expected a contiguous tensor of its own"),
    ({"out": torch.randn(64, 32)}, "not a list of tensors"),
])
def test_contract_is_the_parents(tmp_path, value, phrase):
    with pytest.raises(OutputRefused, match=phrase.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(")
                       .replace(")", r"\)")):
        outputs.load(saved(tmp_path, value), WANT)


def test_a_size_one_dimensions_stride_is_free(tmp_path):
    """`c[:1, :1].contiguous()` of a wider `c` keeps the stride 8 (torch calls it contiguous): a CuTe gemm that pads
    its output returns that for a 1 x 1 product, and .to("cpu").clone() in the worker keeps it. It addresses nothing,
    so it passes; a stride that does address (a transposed view, an expanded dimension) still does not."""
    c = torch.randn(1, 8)[:1, :1].contiguous()
    assert c.stride() == (8, 1)
    [got] = outputs.load(saved(tmp_path, [c.clone()]), [Expected((1, 1), torch.float32)])
    assert torch.equal(got, c)
    with pytest.raises(OutputRefused, match="expected a contiguous tensor of its own"):
        outputs.load(saved(tmp_path, [torch.zeros(1, 1).expand(1, 8)]), [Expected((1, 8), torch.float32)])
    # a column-major 1 x 1 (strides (1, 8)) loads too, and comes back in the standard layout: the integrity
    # fingerprint views its bytes, which needs a unit last stride
    col = torch.randn(8, 8).t()[:1, :1].contiguous()
    assert col.stride() == (1, 8)
    [got] = outputs.load(saved(tmp_path, [col.clone()], "col.pt"), [Expected((1, 1), torch.float32)])
    assert got.stride() == (1, 1) and torch.equal(got, col)


def test_a_storage_larger_than_its_tensor_is_refused(tmp_path):
    big = torch.randn(64 * 32 * 4)
    with pytest.raises(OutputRefused, match="storage holds"):
        outputs.load(saved(tmp_path, [big[: 64 * 32].view(64, 32)]), WANT)


def test_outputs_sharing_a_storage_are_refused(tmp_path):
    base = torch.randn(64, 32)
    with pytest.raises(OutputRefused, match="shares its storage"):
        outputs.load(saved(tmp_path, [base, base]), WANT * 2)


def test_an_expanded_giant_is_refused_before_allocation(tmp_path):
    """The 1.5 KB file that asked the harness for 3.7 GB: refused from the memory-mapped load's strides, with no
    copy made (a 2**27-element float64 upcast would need 1 GiB)."""
    path = saved(tmp_path, [torch.zeros(1).expand(2**27)])
    assert path.stat().st_size < 4096
    with pytest.raises(OutputRefused, match="expected a contiguous tensor of its own"):
        outputs.load(path, [Expected((2**27,), torch.float32)])


def test_a_file_larger_than_the_outputs_need_is_refused_unread(tmp_path):
    path = saved(tmp_path, [torch.randn(1 << 20)])
    with pytest.raises(OutputRefused, match="more than the"):
        outputs.load(path, WANT)


def test_a_compressed_record_is_refused(tmp_path):
    """A zip member that inflates on read (torch writes stored members only; a shaped file need not)."""
    plain = saved(tmp_path, [torch.zeros(64, 32)], "plain.pt")
    shaped = tmp_path / "shaped.pt"
    with zipfile.ZipFile(plain) as src, zipfile.ZipFile(shaped, "w", compression=zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info.filename))
    with pytest.raises(OutputRefused, match="compressed record"):
        outputs.load(shaped, WANT)


@pytest.mark.parametrize("content, phrase", [(b"", "not a torch.save file"), (b"not a zip" * 10, "not a torch.save file")])
def test_a_file_that_is_not_torch_save_is_refused(tmp_path, content, phrase):
    path = tmp_path / "out.pt"
    path.write_bytes(content)
    with pytest.raises(OutputRefused, match=phrase):
        outputs.load(path, WANT)


def test_a_missing_file_or_a_link_is_refused(tmp_path):
    with pytest.raises(OutputRefused, match="no file came back"):
        outputs.load(tmp_path / "absent.pt", WANT)
    (tmp_path / "link.pt").symlink_to(saved(tmp_path, [torch.randn(64, 32)]))
    with pytest.raises(OutputRefused, match="not a plain file"):
        outputs.load(tmp_path / "link.pt", WANT)
