"""Numbers and text in messages (issue 12): digits that show the difference, percentages that are 100% only when
all are, no word cut in half."""
from __future__ import annotations

import pytest
import torch

from rungs.core import fmt
from rungs.ladder.correctness import error_picture
from rungs.ladder.metrics import violations


def test_a_broken_limit_never_reads_as_equal():
    assert violations({"cosine": 0.99992}, {"cosine": 0.999999}) == ["cosine 0.9999 < 0.999999"]
    assert violations({"cosine": 0.9999989}, {"cosine": 0.999999}) == ["cosine 0.9999989 < 0.999999"]
    assert violations({"rel_l2": 1.00004e-5}, {"rel_l2": 1e-5}) == ["rel_l2 1.00004e-05 > 1e-05"]
    assert violations({"psnr_db": 89.99}, {"psnr_db": 90.0}) == ["psnr_db 89.99 < 90"]
    assert violations({"max_abs_scaled": 0.26}, {"max_abs_scaled": 1e-4}) == ["max_abs_scaled 0.26 > 0.0001"]


@pytest.mark.parametrize("got, expected, shown", [
    (0.348286, 0.5, ("0.348286", "0.5")),
    (0.34828601, 0.34828649, ("0.348286", "0.3482865")),
    (1.0, 1.0, ("1", "1")),
])
def test_pair_shows_the_difference(got, expected, shown):
    assert fmt.pair(got, expected) == shown


def test_percent_is_exact_at_the_ends():
    assert fmt.percent(28, 28) == "100%"
    assert fmt.percent(999, 1000) == "99.9%"
    assert fmt.percent(99999, 100000) == "99.999%"
    assert fmt.percent(1, 100000) == "0.001%"
    assert fmt.percent(0, 5) == "0%"


def test_error_picture_counts_in_plain_percent():
    text = error_picture(torch.ones(4, 7), torch.zeros(4, 7), 1e-3)
    assert text.startswith("28 of 28 elements off (100%)"), text


def test_clip_cuts_between_words_only():
    text = "case c003 (M=4 N=7): cosine 0.9 < 0.999999; worst element [0, 3]: got 0.348286, expected 0.5"
    for limit in range(10, len(text)):
        cut = fmt.clip(text, limit)
        kept = cut.removesuffix(" …")
        assert text.startswith(kept) and (len(kept) == len(text) or text[len(kept)] in " ,;:-("), (limit, cut)
        assert len(kept) <= limit or " " not in kept
    assert fmt.clip(text, 1000) == text
    assert fmt.clip("expected 0.348286", 12) == "expected …"


def test_outputs_are_called_by_their_names(softmax_task):
    """A task's `outputs:` names its outputs in messages (was `c003[0]`, `output 1`)."""
    from rungs.ladder.cases import Case
    from rungs.ladder.correctness import check_outputs

    task = softmax_task.model_copy(update={"outputs": ["out", "lse"]})
    case = Case(id="c003", shape={"M": 4, "N": 7}, dtype="float32", seed=1, dist="normal", first_of_shape=True,
                inputs=(torch.zeros(4, 7),), reference=[torch.zeros(4, 7), torch.zeros(4)])
    tensor = {"kind": "tensor", "dtype": "float32", "device": "cpu", "contiguous": True, "stride": [1]}
    result = {"id": "c003", "outputs": [{**tensor, "shape": [4, 7]}, {**tensor, "shape": [4, 1]}], "inputs_changed": [],
              "launches": 1}
    assert check_outputs([case], [result], "cpu", task) == [
        "case c003 (M=4 N=7 float32 seed=1 normal): output lse has shape [4, 1], expected [4]"]
    assert task.output_name(0, 2) == "output out" and softmax_task.output_name(1, 2) == "output 1"
