"""Prompt sizes on recorded runs: what each iteration's prompt was when it was recorded, and what the current
prompt code makes of the same history.

    python benchmarks/prompt_sizes.py runs/<id> [runs/<id> ...] [--show N]

For each run, one row per recorded prompt: iteration, system and user characters as recorded, and as
rendered now (a task YAML or a KernelBench problem file); then the means per iteration, and how many iterations
sent a system prompt that differed from the one before (a person sees it again then; an API's prompt cache
misses). `--show N` prints the new prompt of iteration N (system, then user) after the table.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.agent import iteration_prompt  # noqa: E402
from harness.events import PromptSent  # noqa: E402
from harness.models.base import ToolSpec  # noqa: E402
from harness.prompts import render_system  # noqa: E402
from harness.spec import load_task  # noqa: E402 - a task YAML or a KernelBench problem file
from rungs.core.spec import Budgets  # noqa: E402
from harness.store import RunStore  # noqa: E402
from harness.tools import Toolbox, on_gpu  # noqa: E402


def rebuilt(store: RunStore) -> list[tuple[int, str, int, str, int, str]]:
    """(iteration, old system text, old user characters, new system text, new user characters, new user text) per
    recorded prompt."""
    info = store.info()
    here = ROOT / "tasks" / Path(info.task_path).name  # this checkout's task (a recorded run may come from elsewhere)
    task = load_task(here if here.is_file() else info.task_path)
    budgets = Budgets(**info.budgets) if info.budgets else task.budgets
    history = store.iterations()
    tools: list[ToolSpec] = Toolbox().specs(on_gpu(task.dsl))  # what a run offers here
    system = render_system(task, tools)
    rows = []
    for event in store.journal.read():
        if not isinstance(event, PromptSent):
            continue
        n = event.iteration
        old_sys = "".join(m.content for m in event.messages if m.role == "system")
        old_user = sum(len(m.content) for m in event.messages if m.role == "user")
        user = iteration_prompt(task, store, [h for h in history if h.iteration < n], n, budgets)
        rows.append((n, old_sys, old_user, system, len(user), user))
    return rows


def changed(texts: list[str]) -> int:
    """How many of the prompts sent a system prompt that differs from the one before (the first counts)."""
    return sum(1 for i, t in enumerate(texts) if i == 0 or t != texts[i - 1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--show", type=int, default=None, help="print the new prompt of this iteration")
    args = ap.parse_args()
    for run in args.runs:
        store = RunStore.open(run)
        rows = rebuilt(store)
        print(f"{run}: {store.info().task_path}")
        print(f"{'iter':>4} {'old system':>10} {'old user':>9} {'new system':>10} {'new user':>9}")
        for n, os_, ou, ns, nu, _ in rows:
            print(f"{n:>4} {len(os_):>10} {ou:>9} {len(ns):>10} {nu:>9}")
        if rows:
            k = len(rows)
            print(f"mean per iteration: old system {sum(len(r[1]) for r in rows) / k:.0f} + user "
                  f"{sum(r[2] for r in rows) / k:.0f}; new system {sum(len(r[3]) for r in rows) / k:.0f} + user "
                  f"{sum(r[4] for r in rows) / k:.0f}. System prompt new or changed in {changed([r[1] for r in rows])} "
                  f"of {k} (old), {changed([r[3] for r in rows])} of {k} (new)")
        if args.show is not None:
            for n, _, _, system, _, user in rows:
                if n == args.show:
                    print(f"\n----- system -----\n{system}\n----- user -----\n{user}")


if __name__ == "__main__":
    main()
