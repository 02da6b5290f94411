"""Two GPUs at once (issue 17): `harness run --gpus 0,1` on a 2-GPU machine, beside the same runs on one GPU.

    python3 benchmarks/gpus_check.py                     # everything (softmax and gemm; about 15-25 min on 2 H200s)
    python3 benchmarks/gpus_check.py rate softmax        # one part per call where a call is limited to 10 minutes:
    python3 benchmarks/gpus_check.py rate gemm           #   rate TASK runs --gpus 0 then --gpus 0,1 for TASK
    python3 benchmarks/gpus_check.py rate gemm@0         #   (gemm@0, gemm@0,1: one of the two, if both take >10 min)
    python3 benchmarks/gpus_check.py agree               #   the same kernels timed on GPU 0 and on GPU 1
    python3 benchmarks/gpus_check.py place               #   --gpus 1 runs on GPU 1 only (nvidia-smi's view)
    python3 benchmarks/gpus_check.py nodes               #   a sandbox pinned to GPU 1 can open only GPU 1
    python3 benchmarks/gpus_check.py table               #   the table of every part run so far

Set-up as for the other GPU checks (benchmarks/gpu_session.sh: the wheels on PYTHONPATH, bwrap executable).

- rate: for each task, a replay transcript of rounds of its four demo kernels (benchmarks/candidates_rate.py builds
  it: each candidate's source carries its round and place, so every one climbs), run with `--candidates 4 --strategy
  beam:2` on `--gpus 0` and on `--gpus 0,1`; candidates climbed per hour of the run's wall time. The 2-GPU gemm run is
  the issue's `harness run tasks/gemm.yaml --candidates 4 --gpus 0,1`: its row says how many candidates each GPU
  climbed (every result.json's verdict.gpu) and the GPU seconds spent.
- agree: `harness run` of one round holding the task's fastest demo twice (two sources, one kernel) on `--gpus 0,1`,
  then again with the GPUs listed the other way round, so each GPU times it twice; the medians per GPU must agree within
  2%. (Two candidates at once on two GPUs: the comparison is made as a run makes it.)

- place: `harness run tasks/softmax.yaml --gpus 1` of one candidate while nvidia-smi is asked every 0.3 s which GPUs
  hold compute processes: every process of the climb (worker, baselines, bench reference, ncu) should be on GPU 1
  (nvidia-smi numbers GPUs by PCI bus, as CUDA does for identical GPUs). Samples that saw a process on each GPU; up
  to 3 on GPU 0 are allowed (rungs/sandbox/gpus.names asks a short child process for every GPU's name as the run
  starts).

- nodes: a sandboxed process pinned as a climb on GPU 1 is (rungs/sandbox/gpus.pinned_env, sandbox_nodes) lists the
  /dev/nvidia* nodes it sees, the CUDA devices torch finds there and their UUIDs, and tries to open GPU 0's node:
  it should see one device, GPU 1's UUID, and no GPU 0 node.

Logs, run reports and a JSON of every row go to $OUT (default gpus-out/); the parts' rows are kept in
/tmp/gpus-check/rows.json, so back-to-back calls print one table. The table is printed last.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from candidates_rate import climbed, transcript, untargeted  # noqa: E402 - the transcripts are built there

ROOT = Path(__file__).resolve().parent.parent
OUT = Path(os.environ.get("OUT") or "gpus-out")
STATE = Path("/tmp/gpus-check/rows.json")
FASTEST = {"softmax": "softmax_3_rowwise.py", "gemm": "gemm_4_grouped.py"}
ROUNDS = 2


def harness_run(task: Path, replay: Path, gpus: str, iterations: int, tag: str, tmp: Path,
                candidates: int = 4) -> tuple[Path | None, float, int]:
    runs = tmp / f"runs-{tag}"
    cmd = [sys.executable, "-m", "harness.cli", "run", str(task), "-q", "--candidates", str(candidates),
           "--strategy", "beam:2",
           "--model", f"replay:{replay}", "--max-iterations", str(iterations), "--max-minutes", "60",
           "--runs-dir", str(runs), "--dumps-dir", str(tmp / f"dumps-{tag}"), "--gpus", gpus]
    t0 = time.monotonic()
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.monotonic() - t0
    (OUT / f"{tag}.log").write_text(" ".join(cmd) + "\n" + p.stdout + p.stderr)
    found = sorted(runs.iterdir()) if runs.is_dir() else []
    if found:
        for name in ("report.md", "run.json"):
            if (found[0] / name).is_file():
                shutil.copy(found[0] / name, OUT / f"{tag}-{name}")
    return (found[0] if found else None), wall, p.returncode


def records(run: Path) -> list[dict]:
    """Each climbed candidate's verdict (result.json), with its iteration."""
    events = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines() if x.strip()]
    return [{**e["verdict"], "iteration": e["iteration"]} for e in events
            if e["type"] == "iteration" and e.get("duplicate_of") is None]


def rate(name: str, sets: tuple[str, ...] = ("0", "0,1")) -> list[dict]:
    tmp = Path(tempfile.mkdtemp(prefix=f"gpus-{name}-"))
    task = untargeted(ROOT / "tasks" / f"{name}.yaml", tmp)
    replay = transcript(ROOT / "tasks" / f"{name}.yaml", ROUNDS, tmp, f"gpus-{name}")
    rows = []
    for gpus in sets:
        tag = f"rate-{name}-gpus{gpus.replace(',', '')}"
        run, wall, rc = harness_run(task, replay, gpus, ROUNDS, tag, tmp)
        recs = records(run) if run else []
        count = climbed(run) if run else 0
        per_gpu = {}
        for r in recs:
            g = r.get("gpu") or {}
            per_gpu[str(g.get("index", "-"))] = per_gpu.get(str(g.get("index", "-")), 0) + 1
        rows.append({"part": "rate", "task": name, "gpus": gpus, "climbed": count, "wall_s": round(wall, 1),
                     "per_hour": round(3600 * count / wall) if wall else 0, "rc": rc, "per_gpu": per_gpu,
                     "gpu_seconds": round(sum((r.get("gpu") or {}).get("seconds", 0.0) for r in recs), 1),
                     "names": sorted({(r.get("gpu") or {}).get("name", "") for r in recs}),
                     "verdicts": [r["verdict"] for r in recs]})
    return rows


def agree(name: str) -> dict:
    """The fastest demo, climbed as two candidates of one round on --gpus 0,1 and then on 1,0: each GPU times it twice."""
    tmp = Path(tempfile.mkdtemp(prefix=f"agree-{name}-"))
    task = untargeted(ROOT / "tasks" / f"{name}.yaml", tmp)
    source = (ROOT / "tasks" / "demos" / FASTEST[name]).read_text()
    times: dict[int, list[float]] = {0: [], 1: []}
    for attempt, gpus in enumerate(("0,1", "1,0")):
        turns = []
        for i in range(2):
            path = tmp / f"a{attempt}c{i}.py"
            path.write_text(source + f"\n# copy {i} of attempt {attempt} (benchmarks/gpus_check.py)\n")
            turns.append({"text": f"copy {i}", "code_file": path.name})
        replay = tmp / f"agree{attempt}.jsonl"
        replay.write_text(json.dumps({"candidates": turns}) + "\n")
        run, _, _ = harness_run(task, replay, gpus, 1, f"agree-{name}-{attempt}", tmp, candidates=2)
        for r in records(run) if run else []:
            rt = next((x["metrics"].get("runtime_us") for x in r["rungs"] if x["name"] == "benchmark"), None)
            if r.get("gpu") and rt:
                times[r["gpu"]["index"]].append(rt)
    med = {i: statistics.median(v) if v else None for i, v in times.items()}
    diff = (med[1] / med[0] - 1) if med[0] and med[1] else None
    return {"part": "agree", "task": name, "kernel": FASTEST[name], "gpu0_us": med[0], "gpu1_us": med[1],
            "samples": {str(i): v for i, v in times.items()}, "diff": diff,
            "ok": diff is not None and abs(diff) <= 0.02}


def smi(query: str, what: str) -> list[list[str]]:
    p = subprocess.run(["nvidia-smi", f"--query-{query}={what}", "--format=csv,noheader"], capture_output=True, text=True)
    return [[x.strip() for x in line.split(",")] for line in p.stdout.splitlines() if line.strip()]


def place() -> dict:
    """One softmax candidate on --gpus 1, with nvidia-smi watching which GPUs hold compute processes."""
    import threading

    index_of = {bus: int(i) for i, bus in smi("gpu", "index,pci.bus_id")}
    seen: dict[int, int] = {i: 0 for i in index_of.values()}
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            for i in {index_of.get(row[0], -1) for row in smi("compute-apps", "gpu_bus_id,pid")}:
                seen[i] = seen.get(i, 0) + 1
            time.sleep(0.3)

    tmp = Path(tempfile.mkdtemp(prefix="place-"))
    task = untargeted(ROOT / "tasks" / "softmax.yaml", tmp)
    code = tmp / "only.py"
    code.write_text((ROOT / "tasks" / "demos" / FASTEST["softmax"]).read_text())
    replay = tmp / "place.jsonl"
    replay.write_text(json.dumps({"candidates": [{"text": "one", "code_file": code.name}]}) + "\n")
    t = threading.Thread(target=watch, daemon=True)
    t.start()
    run, wall, rc = harness_run(task, replay, "1", 1, "place-softmax", tmp, candidates=1)
    stop.set()
    t.join()
    recs = records(run) if run else []
    return {"part": "place", "gpus": "1", "samples": {str(k): v for k, v in seen.items()}, "rc": rc,
            "recorded": [(r.get("gpu") or {}).get("index") for r in recs],
            "ok": seen.get(1, 0) > 0 and seen.get(0, 0) <= 3 and rc == 0}


NODES_PROBE = """import glob, json, os, torch
seen = sorted(glob.glob("/dev/nvidia*"))
n = torch.cuda.device_count()
uuids = [str(torch.cuda.get_device_properties(i).uuid) for i in range(n)]
x = torch.ones(1 << 20, device="cuda") if n else None
print(json.dumps({"nodes": seen, "count": n, "uuids": uuids, "computed": float(x.sum()) if n else None,
                  "other": os.path.exists(os.environ["OTHER_NODE"])}))
"""


def nodes() -> dict:
    """What a sandbox pinned to GPU 1 sees of the GPUs."""
    from rungs.sandbox import gpus
    from rungs.sandbox.pool import run_command

    env = gpus.pinned_env(1)
    allowed = gpus.sandbox_nodes(env) or []
    own = next((n for n in allowed if re.fullmatch(r"/dev/nvidia\d+", n)), "")
    other = next((n for n in sorted(Path("/dev").glob("nvidia[0-9]*")) if str(n) != own), Path("/dev/none"))
    job = Path(tempfile.mkdtemp(prefix="nodes-"))
    out = job.parent / f"{job.name}.out"
    outcome = run_command([sys.executable, "-c", NODES_PROBE], job, 120, out,
                                  extra_env={**env, "OTHER_NODE": str(other)})
    try:
        seen = json.loads(out.read_text().strip().splitlines()[-1])
    except (OSError, IndexError, json.JSONDecodeError):
        seen = {"error": outcome.log_tail[-400:]}
    want = env.get("CUDA_VISIBLE_DEVICES", "").removeprefix("GPU-")
    ok = seen.get("count") == 1 and seen.get("uuids", [""])[0].removeprefix("GPU-") == want and \
        seen.get("other") is False and seen.get("computed") == float(1 << 20)
    return {"part": "nodes", "pin": env, "allowed": allowed, "seen": seen, "ok": ok}


def load() -> list[dict]:
    try:
        return json.loads(STATE.read_text())
    except (OSError, json.JSONDecodeError):
        return []


def save(rows: list[dict]) -> None:
    STATE.parent.mkdir(parents=True, exist_ok=True)
    STATE.write_text(json.dumps(rows, indent=1))
    (OUT / "gpus_check.json").write_text(json.dumps(rows, indent=1))


def table(rows: list[dict]) -> None:
    print(f"\n{'task':<8} {'gpus':>4} {'climbed':>7} {'wall_s':>7} {'per_hour':>8} {'GPU s':>6} {'per GPU':<14} rc")
    for r in (r for r in rows if r["part"] == "rate"):
        per = " ".join(f"{k}:{v}" for k, v in sorted(r["per_gpu"].items()))
        print(f"{r['task']:<8} {r['gpus']:>4} {r['climbed']:>7} {r['wall_s']:>7.1f} {r['per_hour']:>8} "
              f"{r['gpu_seconds']:>6.0f} {per:<14} {r['rc']}")
    agreed = [r for r in rows if r["part"] == "agree"]
    if agreed:
        print(f"\n{'task':<8} {'kernel':<22} {'GPU 0 us':>9} {'GPU 1 us':>9} {'diff':>7}  within 2%")
        for r in agreed:
            d = f"{r['diff']:+.2%}" if r["diff"] is not None else "-"
            g0 = f"{r['gpu0_us']:.1f}" if r["gpu0_us"] else "-"
            g1 = f"{r['gpu1_us']:.1f}" if r["gpu1_us"] else "-"
            print(f"{r['task']:<8} {r['kernel']:<22} {g0:>9} {g1:>9} {d:>7}  {'yes' if r['ok'] else 'NO'}")
    for r in (r for r in rows if r["part"] == "place"):
        print(f"\n--gpus 1: nvidia-smi samples with a compute process, per GPU: {r['samples']}; verdict.gpu.index "
              f"{r['recorded']}; rc {r['rc']}; only GPU 1 used: {'yes' if r['ok'] else 'NO'}")
    for r in (r for r in rows if r["part"] == "nodes"):
        print(f"\nsandbox pinned to GPU 1 ({r['pin']}): nodes {r['seen'].get('nodes')}, CUDA devices "
              f"{r['seen'].get('count')} {r['seen'].get('uuids')}, GPU 0's node in sight: {r['seen'].get('other')}; "
              f"only GPU 1: {'yes' if r['ok'] else 'NO'}{'' if 'error' not in r['seen'] else ' ' + r['seen']['error']}")


def main(argv: list[str]) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    part = argv[0] if argv else "all"
    names = argv[1:] or ["softmax", "gemm"]
    rows = [] if part == "all" else load()
    if part in ("rate", "all"):
        for arg in names:  # gemm, or gemm@0 / gemm@0,1 for one of its two runs (a call limited to 10 minutes)
            name, _, only = arg.partition("@")
            sets = (only,) if only else ("0", "0,1")
            rows = [r for r in rows if not (r["part"] == "rate" and r["task"] == name and r["gpus"] in sets)] \
                + rate(name, sets)
            save(rows)
    if part in ("agree", "all"):
        for name in dict.fromkeys(n.partition("@")[0] for n in names):
            rows = [r for r in rows if not (r["part"] == "agree" and r["task"] == name)] + [agree(name)]
            save(rows)
    if part in ("place", "all"):
        rows = [r for r in rows if r["part"] != "place"] + [place()]
        save(rows)
    if part in ("nodes", "all"):
        rows = [r for r in rows if r["part"] != "nodes"] + [nodes()]
        save(rows)
    if part not in ("rate", "agree", "place", "nodes", "all", "table"):
        sys.exit(f"usage: {sys.argv[0]} [all|rate|agree|place|nodes|table] [softmax] [gemm]")
    table(rows)


if __name__ == "__main__":
    main(sys.argv[1:])
