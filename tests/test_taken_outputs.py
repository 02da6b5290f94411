"""Names of saved outputs come from the worker's phase file, which the candidate can write: the parent loads only an
output's name, from its own job folder, as a plain file (not /proc/kmsg, not another run's tensors)."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import torch

from rungs.ladder import integrity
from rungs.sandbox.pool import taken_output


def test_only_an_outputs_name_in_the_job_folder_is_taken(tmp_path: Path) -> None:
    job = tmp_path / "job"
    job.mkdir()
    torch.save([torch.ones(2)], job / "out-c000.pt")
    elsewhere = tmp_path / "other-run.pt"
    torch.save([torch.zeros(2)], elsewhere)
    (job / "out-link.pt").symlink_to(elsewhere)
    assert taken_output(job, "out-c000.pt") == job / "out-c000.pt"
    for name in (str(elsewhere), "../other-run.pt", "out-link.pt", "/proc/kmsg", "out-c000.pt/..", None, 3,
                 "out-../../x.pt"):
        assert taken_output(job, name) is None, name


def test_a_forged_recheck_or_first_call_name_is_not_loaded(tmp_path: Path) -> None:
    job = tmp_path / "job"
    job.mkdir()
    host = tmp_path / "host.pt"
    torch.save([torch.ones(3)], host)  # the same values as the reference: loading it would pass the recheck
    case = SimpleNamespace(id="c000", reference=[torch.ones(3)], dtype="float32", label=lambda: "n=3")
    said = integrity.after_bench(case, job, {"recheck": {"file": str(host)}}, {})
    assert said is not None and "was not saved" in said
    from rungs.ladder.benchmark import _first_output
    from rungs.ladder.bench_reference import verify_picks

    assert _first_output({"checked": {"first": "../host.pt"}}) is None
    assert _first_output({"checked": {"first": str(host)}}) is None
    forged = [{"call": 3, "slots": [0], "files": ["../host.pt"]}, {"call": 5, "slots": [0], "files": [str(host)]}]
    broken, judged = verify_picks({}, forged, job, lambda x: x, [], "cpu", {}, 0, None, None, [], [])
    assert broken == ["the bench phase's list of checked calls is malformed"] and judged == []


def test_handing_a_folder_to_the_sandbox_never_follows_a_link(tmp_path: Path) -> None:
    """run_command gives its folder's entries to the sandbox uid; a link a candidate left there must not hand root's
    file behind it over."""
    import os

    import pytest

    from rungs.sandbox import bwrap
    from rungs.sandbox.pool import _own

    if os.geteuid() != 0 or bwrap.unsandboxed():
        pytest.skip("only root hands folders over")
    secret = tmp_path / "secret"
    secret.write_text("root's")
    folder = tmp_path / "job"
    folder.mkdir()
    (folder / "link").symlink_to(secret)
    (folder / "plain").write_text("")
    for entry in [folder, *folder.rglob("*")]:
        _own(entry)
    assert secret.stat().st_uid == 0 and os.lstat(folder / "link").st_uid == 0
    assert (folder / "plain").stat().st_uid == bwrap.SANDBOX_UID and folder.stat().st_uid == bwrap.SANDBOX_UID
