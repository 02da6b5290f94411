"""Timing sections: the markers leave the timed build alone, the CPU ladder runs a marked kernel as an unmarked one
and says the step needs a GPU, and Proton's trace is read into per-region shares (rungs/ladder/sections.py)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rungs.backends import triton_sections
from rungs.ladder.dumps import tool
from rungs.ladder.climb import Climb
from rungs.core.spec import load_task
from rungs.ladder.rung import rung
from rungs.ladder.sections import NOT_MARKED, table
from rungs.backends.sections_summary import summarize

from conftest import KERNELS, TASKS

ROOT = Path(__file__).resolve().parent.parent
MARKED = TASKS / "demos" / "flash_attn_5_sections.py"
PLAIN = TASKS / "demos" / "flash_attn_4_fa2.py"


def _without_debug(ptx: str) -> list[str]:
    """PTX without its line table and DWARF sections: the marked file's lines are numbered differently."""
    code = ptx.split("\t.section\t.debug", 1)[0]
    return [ln for ln in code.splitlines() if not ln.lstrip().startswith((".loc", ".file"))]


def test_the_marked_flash_attention_builds_to_the_same_sass(tmp_path: Path) -> None:
    assert triton_sections.regions(MARKED.read_text()) == ["qk", "softmax", "pv"]
    subprocess.run([sys.executable, str(ROOT / "tests" / "sections_build.py"), str(tmp_path), str(MARKED), str(PLAIN)],
                   check=True, cwd=ROOT, capture_output=True, timeout=300)
    marked, plain = sorted((tmp_path / "0").glob("*.cubin")), sorted((tmp_path / "1").glob("*.cubin"))
    assert [p.name for p in marked] == [p.name for p in plain] and marked
    cuobjdump = tool("cuobjdump")
    assert cuobjdump is not None
    for a, b in zip(marked, plain):
        sass_a, sass_b = (subprocess.run([cuobjdump, "--dump-sass", str(p)], capture_output=True, text=True,
                                         check=True).stdout for p in (a, b))
        assert "HGMMA" in sass_a  # a real Hopper build, not an empty one
        assert sass_a == sass_b
        assert _without_debug(a.with_suffix(".ptx").read_text()) == _without_debug(b.with_suffix(".ptx").read_text())


def test_regions_are_found_only_with_protons_kernel_language() -> None:
    host_only = "import triton.profiler as proton\nwith proton.scope('warmup'):\n    pass\n"
    assert triton_sections.regions(host_only) == []
    assert triton_sections.regions(PLAIN.read_text()) == []
    assert triton_sections.regions((KERNELS / "softmax_sections.py").read_text()) == ["load", "exp"]


def test_the_interpreter_runs_a_marked_kernel_as_the_worker_sets_it_up() -> None:
    script = ("import torch\n"
              "from rungs.backends.triton_worker import WORKER\n"
              "from rungs.worker.candidate import load_candidate\n"
              "WORKER.before_run(False)\n"
              f"fn = load_candidate({str(KERNELS / 'softmax_sections.py')!r}, 'kernel')\n"
              "x = torch.randn(5, 37)\n"
              "torch.testing.assert_close(fn(x), torch.softmax(x, dim=1))\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "TRITON_INTERPRET": "1"})
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.parametrize("kernel, message", [(KERNELS / "softmax_sections.py", "no GPU"),
                                             (TASKS / "demos" / "softmax_3_rowwise.py", NOT_MARKED)])
def test_on_a_cpu_the_step_skips_in_one_line(kernel: Path, message: str, tmp_path: Path) -> None:
    result = rung("sections")(Climb(task=load_task(TASKS / "softmax.yaml"), kernel=kernel, work_dir=tmp_path,
                                    device="cpu"))
    assert (result.status, result.message) == ("skip", message)


def _proton_event(region: str, sm: int, cta: int, warp: int, ts_us: float, dur_us: float) -> dict:
    """One record as Proton's StreamChromeTraceWriter writes it: cycles over an assumed 1000 MHz."""
    return {"name": region, "cat": "attn_fwd_kernel", "ph": "X", "pid": f"attn_fwd_kernel Core{sm} CTA{cta}",
            "tid": f"warp {warp} (line 0)", "ts": ts_us, "dur": dur_us,
            "args": {"Init Time (ns)": 1000 * cta, "Post Final Time (ns)": 1000 * cta + 900, "Frequency (MHz)": 1000.0}}


def test_a_proton_trace_becomes_shares_and_spread(tmp_path: Path) -> None:
    events = [{"name": "path", "cat": "call_path", "ph": "X", "pid": "Kernel Call Path", "tid": "path 0", "ts": 0,
               "dur": 99.0}]
    for cta, slow in ((0, 1.0), (1, 3.0)):  # program 1's qk takes three times as long
        for warp in (0, 1):
            events += [_proton_event("qk", cta, cta, warp, 0.0, 0.1 * slow),
                       _proton_event("softmax", cta, cta, warp, 0.1 * slow, 0.2)]
    path = tmp_path / "t.chrome_trace"
    path.write_text(json.dumps({"displayTimeUnit": "ns", "traceEvents": events}))
    summary = summarize(triton_sections.read_trace(path))
    qk, softmax = (next(r for r in summary["regions"] if r["region"] == n) for n in ("qk", "softmax"))
    assert summary["programs"] == 2 and summary["program_cycles"] == 300 + 500
    assert (qk["total_cycles"], qk["mean_cycles"], qk["spread"]) == (400, 200.0, 1.5)
    assert (softmax["total_cycles"], softmax["share"], softmax["spread"]) == (400, 0.5, 1.0)
    assert summary["covered"] == pytest.approx(1.0) and summary["kernel_ns"] == 1900
    assert "| qk | 50.0% | 200 | 400 | 1.50 |" in table(summary)


def test_collect_summarizes_every_program_and_cuts_the_trace_to_the_first(tmp_path: Path) -> None:
    from rungs.backends.sections_summary import TRACE_PROGRAMS

    programs = TRACE_PROGRAMS + 36
    events = [_proton_event("qk", cta % 132, cta, 0, 0.0, 0.1) for cta in range(programs)]
    (tmp_path / "trace.chrome_trace").write_text(json.dumps({"displayTimeUnit": "ns", "traceEvents": events}))
    result = triton_sections.collect(tmp_path / "trace")
    assert result["summary"]["programs"] == programs and result["summary"]["regions"][0]["total_cycles"] == 100 * programs
    kept = json.loads((tmp_path / result["trace"]).read_text())["traceEvents"]
    assert len(kept) == TRACE_PROGRAMS and kept[-1]["pid"].endswith(f"CTA{TRACE_PROGRAMS - 1}")


def test_the_prompt_shows_the_table_or_how_to_mark_only_on_a_timed_pass() -> None:
    from harness.feedback import sections_lines
    from rungs.core.result import RungResult, Verdict

    bench = RungResult(name="benchmark", status="ok", message="12.0 us")
    unmarked = RungResult(name="sections", status="skip", message=NOT_MARKED, details="with pl.scope(...)")
    measured = RungResult(name="sections", status="ok", message="qk 50%", details="| qk | 50.0% |")
    assert "mark regions: with pl.scope" in sections_lines(Verdict(verdict="pass", rungs=[bench, unmarked]), None)[0]
    assert "| qk | 50.0% |" in sections_lines(Verdict(verdict="pass", rungs=[bench, measured]), None)[0]
    cpu = RungResult(name="benchmark", status="skip", message="no CUDA device")
    assert sections_lines(Verdict(verdict="pass", rungs=[cpu, unmarked]), None) == []


def test_the_programs_time_is_set_against_the_kernels():
    """The H200's flash attention (2026-12-02): 597.2 M cycles over 4096 programs of 8 warps, one a time per SM."""
    from rungs.backends.sections_summary import accounted_us

    summary = {"program_cycles": 597_198_129, "warps_per_program": 8.0}
    assert accounted_us(summary, 132, 1980.0, 12.48) == pytest.approx(2285.0, abs=1.0)  # ncu said 2166.7 us
    assert accounted_us(summary, 132, 1980.0, 50.0) == pytest.approx(2285.0 / 4, abs=1.0)  # four side by side
    assert accounted_us(summary, 132, 0.0, 50.0) is None


def test_the_time_between_regions_is_counted_as_unmarked():
    """The H200's flash attention left a quarter of its time between pv and the next qk (the wait for pv's async
    wgmma and the loop's bookkeeping): the table says so instead of leaving the shares short of 100%."""
    from rungs.backends.sections_summary import summarize

    events = []
    for it in range(4):  # one warp: qk 100 cycles, softmax 100, pv 50, then 50 unmarked before the next qk
        base = 300 * it
        events += [{"region": "qk", "program": "0", "track": "0/w0", "start": base, "cycles": 100},
                   {"region": "softmax", "program": "0", "track": "0/w0", "start": base + 100, "cycles": 100},
                   {"region": "pv", "program": "0", "track": "0/w0", "start": base + 200, "cycles": 50}]
    summary = summarize(events)
    assert summary["program_cycles"] == 1150 and summary["gaps"] == [
        {"between": "pv -> qk", "total_cycles": 150, "share": round(150 / 1150, 4)}]
    assert summary["covered"] + summary["gaps"][0]["share"] == pytest.approx(1.0, abs=1e-3)
    assert "| (unmarked) pv -> qk | 13.0% |" in table(summary)
    from rungs.ladder.sections import headline
    assert "unmarked pv -> qk 13%" in headline(summary)


def test_what_the_instrumented_build_returns_is_typed_and_its_trace_name_plain(tmp_path: Path):
    """The sections target runs the candidate: its result file is candidate data. A trace name that leaves the job
    folder is dropped, a malformed summary raises (the step says it cannot read it), and a link is not a result."""
    from rungs.sandbox.pool import _plain_file
    from rungs.ladder.sections import checked

    good = {"summary": {"regions": [{"region": "qk", "total_cycles": 10, "mean_cycles": 5.0, "share": 0.5,
                                     "programs": 2, "spread": 1.0}], "programs": 2, "program_cycles": 20},
            "trace": "trace.chrome_trace", "sms": 132, "clock_mhz": 1980}
    assert checked(good)["trace"] == "trace.chrome_trace" and checked(good)["summary"]["gaps"] == []
    for name in ("../../../root/.ssh/id_rsa", "/etc/passwd", "..", ".hidden", 7):
        assert checked({**good, "trace": name})["trace"] is None
    with pytest.raises((TypeError, ValueError, KeyError)):
        checked({"summary": {"regions": [{"region": "qk", "total_cycles": "lots"}]}})
    assert checked({"error": "x" * 10_000})["error"] == "x" * 400
    secret = tmp_path / "host-secret.json"
    secret.write_text(json.dumps({"error": "the host's secret"}))
    (tmp_path / "sections.json").symlink_to(secret)
    assert not _plain_file(tmp_path / "sections.json", 1 << 20)
