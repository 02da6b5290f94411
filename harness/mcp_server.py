"""`harness mcp`: the harness's tools served over MCP (stdio), so any coding agent can be the model of a run.

The design: the agent loop runs unchanged in a thread with `harness.models.mcp_bridge.McpModel` as its model;
each MCP tool call is one model turn of the loop, so journal, diffs, budgets, stops and resume are the loop's.
This module only adds what a server needs beyond that: the tool list (the Toolbox's specs plus `task_spec` and
`status`), refusals once the loop has ended, steering read from the journal while the run is live, and a
report after every iteration. stdout is the MCP channel: the SDK's stdio transport points fd 1 at stderr while
it serves, so nothing the loop or its workers print can reach the wire.
"""
from __future__ import annotations

import itertools
import json
import sys
import threading
import time
import traceback
from typing import Any, Callable

from harness.agent import Agent, AgentConfig, BudgetExceeded, UserStopped
from harness.events import IterationFinished, RunStopped, Steered
from harness.models.base import ToolCall, ToolSpec
from harness.models.mcp_bridge import McpModel
from harness.prompts import render_system
from harness.tools import ToolContext, Toolbox
from rungs.core.result import RungResult, Verdict

TASK_SPEC = ToolSpec(name="task_spec", description="The task and where the run stands: the same text the harness's "
                     "prompt carries (rules, task, shapes, roofline, iterations so far, the last verdict, hints). "
                     "Call it first.", parameters={"type": "object", "properties": {}})
STATUS = ToolSpec(name="status", description="The run as JSON: its folder, state (waiting for a submission or "
                  "stopped, and why), the iteration the next submission becomes, the best iteration, budgets left.",
                  parameters={"type": "object", "properties": {}})

INSTRUCTIONS = ("A kernel harness run. Call task_spec first. Each submit_kernel is one iteration: the file goes "
                "through the ladder of rungs and the result is the next prompt (verdict, history, hints). Budgets "
                "(iterations, wall time) are the harness's; past one, submissions are refused.")


class ServerObserver:
    """The run's progress: one line at a time on stderr (stdout is the MCP channel), and each rung of a submission
    as an MCP progress notification (clients show it, and some reset their tool-call timeout on it)."""

    def __init__(self) -> None:
        self.progress: Callable[[str], None] | None = None
        """Set by the server while a submission's ladder runs."""

    def iteration_started(self, n: int) -> None:
        print(f"iteration {n}: waiting for the MCP client's submission", file=sys.stderr, flush=True)

    def rung_started(self, name: str) -> None:
        print(f"  rung {name}", file=sys.stderr, flush=True)
        if self.progress is not None:
            self.progress(f"rung {name}")

    def rung_finished(self, result: RungResult) -> None:
        print(f"  rung {result.name}: {result.status}", file=sys.stderr, flush=True)

    def iteration_finished(self, n: int, verdict: Verdict, seconds: float) -> None:
        print(f"iteration {n}: {verdict.summary} ({seconds:.1f} s)", file=sys.stderr, flush=True)

    def note(self, text: str) -> None:
        print(text, file=sys.stderr, flush=True)


class SteeringToolbox(Toolbox):
    """The loop's tools, with the steering given since the last call (`harness steer`) on top of each result."""

    def __init__(self, steering: Callable[[], list[str]]) -> None:
        self.steering = steering

    def call(self, call: ToolCall, ctx: ToolContext) -> str:
        notes = self.steering()
        return "".join(f"{n}\n\n" for n in notes) + super().call(call, ctx)


class McpRun:
    """One run served over MCP: the loop in its thread, fed by the client's tool calls through the bridge."""

    def __init__(self, make: Callable[..., Agent], bridge: McpModel) -> None:
        """`make(tools=, config=)`: the run's Agent (a new one, or resume_agent's), built with the server's toolbox
        and no limit on model turns (the client's turns are its own; the wall-time budget bounds them)."""
        self.bridge = bridge
        self.agent = make(tools=SteeringToolbox(lambda: self.take_steering(for_prompt=False)),
                          config=AgentConfig(max_tool_turns=None))
        self.failed = False
        """The loop died on an internal error (the server then exits 3)."""
        self.seen = len(self.agent.store.journal.read())  # steering before now reached the agent through resume_agent
        self.ids = itertools.count(1)
        self.lock = threading.Lock()
        self.observer = ServerObserver()
        self.thread = threading.Thread(target=self._loop, name="harness-loop", daemon=True)

    # ---- the loop's thread -------------------------------------------------------------------------------------
    def start(self) -> None:
        self.thread.start()

    def _loop(self) -> None:
        why = "the run stopped"
        try:
            stop = self.agent.run(observer=self.observer, between=self.between_iterations)
            why = stop.reason
        except Exception as exc:  # a bug in the harness: the run ends (resumable) and the client is told, not hung
            self.failed = True
            why = f"internal error: {type(exc).__name__}: {exc}"
            traceback.print_exc(file=sys.stderr)
            store = self.agent.store
            store.journal.append(RunStopped(reason=why, status="error"))
            store.set_status("error", why)
        finally:
            self.bridge.end(why)
        print(f"run stopped: {why}", file=sys.stderr, flush=True)

    def between_iterations(self, agent: Agent) -> None:
        """After each iteration: steering given meanwhile goes into the next prompt; the report is rebuilt."""
        from harness.report import write_report

        agent.hints.extend(self.take_steering(for_prompt=True))
        write_report(agent.store)

    def take_steering(self, for_prompt: bool) -> list[str]:
        """Hints and reverts journaled by `harness steer` since the last look. A revert moves the base kernel;
        hints come back as text, for the next prompt (for_prompt) or, labelled, for a tool result."""
        with self.lock:
            events = self.agent.store.journal.read()
            new, self.seen = events[self.seen:], len(events)
        notes = []
        for e in new:
            if not isinstance(e, Steered):
                continue
            if e.action == "hint" and e.text:
                notes.append(e.text if for_prompt else f"[hint from the user (harness steer)] {e.text}")
            elif e.action == "revert" and e.iteration is not None:
                self.agent.revert_to(e.iteration)
                if not for_prompt:
                    notes.append(f"[the user reverted (harness steer)] improve on iteration {e.iteration}'s kernel, "
                                 f"not the last one (`diff` shows how they differ)")
        return notes

    # ---- the MCP server's side -----------------------------------------------------------------------------------
    def specs(self) -> list[ToolSpec]:
        return [TASK_SPEC, STATUS] + self.agent.tool_specs()

    def handle(self, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        """One tool call: (text, is_error). Calls are serialized by the server."""
        self.bridge.ready(timeout=120)  # a call that comes before the loop's first prompt waits for it
        if name == "task_spec":
            return self.task_spec(), False
        if name == "status":
            return json.dumps(self.status(), indent=2), False
        call = ToolCall(id=f"mcp-{next(self.ids)}", name=name, arguments=arguments)
        if name == "submit_kernel":
            return self.submit(call)
        answer = self.bridge.call(call)
        if answer is None:  # the run has stopped: the read-only tools still answer, unjournaled
            answer = self.agent.tools.call(call, self.agent.tool_context())
        return answer, answer.startswith("error:")

    def submit(self, call: ToolCall) -> tuple[str, bool]:
        if self.bridge.ended is not None:
            return self.refusal(), True
        try:
            self.agent.check_spending(wall_time=True)  # the client may have thought past the wall-time budget
        except BudgetExceeded as exc:
            self.bridge.stop(exc)
            self.thread.join(timeout=60)  # the loop is parked at its model call: it ends at once
            return self.refusal(), True
        n = self.agent.iteration
        answer = self.bridge.call(call)
        if answer is not None:
            return answer, False
        finished = next((e for e in reversed(self.agent.store.iterations()) if e.iteration == n), None)
        head = verdict_text(finished) + "\n\n" if finished else ""
        return head + f"The run has stopped: {self.bridge.ended}. Further submissions are refused; " \
                      f"the other tools still answer.", finished is None

    def refusal(self) -> str:
        return (f"refused: the run has stopped ({self.bridge.ended}); this kernel was not checked. Ask the user to "
                f"go on with `harness mcp {self.agent.task.path} --run {self.agent.store.root}` and a larger budget "
                f"(--max-iterations, --max-minutes).")

    def task_spec(self) -> str:
        messages = self.bridge.messages
        if len(messages) >= 2:
            text = f"{messages[0].content}\n\n{messages[1].content}"
        else:  # the loop stopped before it prompted (a budget already spent on --run)
            text = f"{render_system(self.agent.task, self.agent.tool_specs())}\n\n{self.agent.prompt()}"
        if self.bridge.ended is not None:
            text += f"\n\n(The run has stopped: {self.bridge.ended}. Submissions are refused.)"
        return text

    def status(self) -> dict[str, Any]:
        agent, b = self.agent, self.agent.budgets
        done = [e.iteration for e in agent.store.iterations()]
        best = agent.store.best()
        minutes = (time.monotonic() - agent.started) / 60
        return {
            "run": str(agent.store.root),
            "state": "stopped" if self.bridge.ended is not None else "waiting for a submission",
            "stop_reason": self.bridge.ended,
            "next_iteration": None if self.bridge.ended is not None else agent.iteration,
            "finished_iterations": len(done),
            "best": None if best is None else {"iteration": best.iteration,
                                               "runtime_us": best.verdict.metric("runtime_us"),
                                               "roofline_fraction": best.verdict.metric("roofline_fraction")},
            "budgets_left": {"iterations": max(0, b.iterations - max(done, default=0)),
                             "minutes": round(max(0.0, b.minutes - minutes), 2),
                             "tokens": "not counted: the MCP client's own tokens are not visible to the harness",
                             "usd": "not counted, as tokens"},
            "steer": f"harness steer {agent.store.root} --hint TEXT",
        }

    def shutdown(self, why: str) -> None:
        """The client went away: the loop stops at its next model call (a submission in flight finishes first)."""
        if self.bridge.ended is None:
            self.bridge.stop(UserStopped(why))
        self.thread.join()


def verdict_text(e: IterationFinished) -> str:
    """An iteration's rung results, as the prompt shows them, for a submission after which the run stopped."""
    lines = [f"Iteration {e.iteration}: {e.verdict.summary}", "", "Rung results:"]
    lines += [f"- {r.name}: {r.status}" + (f": {r.message}" if r.message else "") for r in e.verdict.rungs]
    for r in e.verdict.rungs:
        if r.details and r.status == "fail":
            lines += ["", f"### {r.name} details", "```", r.details[:6000], "```"]
    return "\n".join(lines)


async def serve(served: McpRun) -> None:
    """Serve until the client closes stdin; then stop the loop and wait for it."""
    import anyio
    import anyio.from_thread
    import anyio.lowlevel
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    lock = anyio.Lock()  # one call at a time: each is a turn of one conversation

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name=s.name, description=s.description,
                                                       input_schema=s.parameters) for s in served.specs()])

    token = anyio.lowlevel.current_token()

    def progress_of(ctx: Any) -> Callable[[str], None] | None:
        progress_token = (ctx.meta or {}).get("progress_token")
        if progress_token is None:  # the client asked for no progress
            return None
        steps = itertools.count(1)

        def report(message: str) -> None:  # called from the loop's thread
            try:
                anyio.from_thread.run(ctx.session.send_progress_notification, progress_token, float(next(steps)),
                                      None, message, ctx.request_id, token=token)
            except Exception as exc:  # progress is a courtesy: a client gone or a closed stream must not stop the run
                print(f"(progress not sent: {type(exc).__name__}: {exc})", file=sys.stderr, flush=True)

        return report

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        async with lock:
            served.observer.progress = progress_of(ctx) if params.name == "submit_kernel" else None
            try:
                text, is_error = await anyio.to_thread.run_sync(served.handle, params.name,
                                                                dict(params.arguments or {}), abandon_on_cancel=True)
            finally:
                served.observer.progress = None
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=is_error)

    server = Server("kernel-harness", instructions=INSTRUCTIONS, on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        served.start()  # inside the transport: fd 1 already points at stderr for the loop and its workers
        try:
            await server.run(read, write, server.create_initialization_options())
        finally:
            await anyio.to_thread.run_sync(served.shutdown, "the MCP client disconnected; resumable with "
                                           f"`harness mcp TASK --run {served.agent.store.root}`")
