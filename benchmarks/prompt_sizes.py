"""Prompt sizes on recorded runs: what each iteration's prompt was when it was recorded, and what the current
prompt code makes of the same history.

    python benchmarks/prompt_sizes.py runs/<id> [runs/<id> ...] [--show N]

For each run, one row per recorded prompt: iteration, system and user characters as recorded, and as
rendered now. `--show N` prints the new prompt of iteration N (system, then user) after the table.
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
from rungs.core.spec import Budgets, load_task  # noqa: E402
from harness.store import RunStore  # noqa: E402
from harness.tools import SUBMIT, TOOLS  # noqa: E402


def rebuilt(store: RunStore) -> list[tuple[int, int, int, int, int, str, str]]:
    """(iteration, old system, old user, new system, new user, new system text, new user text) per recorded prompt."""
    info = store.info()
    here = ROOT / "tasks" / Path(info.task_path).name  # this checkout's task (a recorded run may come from elsewhere)
    task = load_task(here if here.is_file() else info.task_path)
    budgets = Budgets(**info.budgets) if info.budgets else task.budgets
    history = store.iterations()
    tools: list[ToolSpec] = [SUBMIT] + [spec for spec, _ in TOOLS.values()]
    system = render_system(task, tools)
    rows = []
    for event in store.journal.read():
        if not isinstance(event, PromptSent):
            continue
        n = event.iteration
        old_sys = sum(len(m.content) for m in event.messages if m.role == "system")
        old_user = sum(len(m.content) for m in event.messages if m.role == "user")
        user = iteration_prompt(task, store, [h for h in history if h.iteration < n], n, budgets)
        rows.append((n, old_sys, old_user, len(system), len(user), system, user))
    return rows


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
        for n, os_, ou, ns, nu, _, _ in rows:
            print(f"{n:>4} {os_:>10} {ou:>9} {ns:>10} {nu:>9}")
        if args.show is not None:
            for n, *_, system, user in rows:
                if n == args.show:
                    print(f"\n----- system -----\n{system}\n----- user -----\n{user}")


if __name__ == "__main__":
    main()
