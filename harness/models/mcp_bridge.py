"""An MCP client as the model: the coding agent's tool calls come in through `harness mcp`, the loop answers them.

The agent loop (harness/agent.py) runs unchanged in its own thread and calls `respond()` as it would call an
API; each call blocks until the MCP server hands over the client's next tool call, and hands back what the
loop produced for the previous one: a tool's result (the last message is the tool's answer), or for
`submit_kernel` the next iteration's prompt (the verdict, the history, the hints). So the journal, the budgets,
the stops and steering are the loop's own, and the client sees exactly what a `--model` run's model sees.

Spec string: `mcp`, usable only from `harness mcp`; `harness resume` on an MCP run says so instead of hanging.
"""
from __future__ import annotations

import threading

from rungs.core.errors import BadInput
from harness.models.base import Message, ModelResponse, ToolCall, ToolSpec


def from_spec(rest: str = "") -> "McpModel":
    """What the registry builds for `--model mcp`: there is no MCP client outside `harness mcp`."""
    raise BadInput("model 'mcp': this run is driven by an MCP client; go on with `harness mcp TASK --run RUN` "
                   "(from the coding agent), or `harness resume RUN --model SPEC` with another model")


class McpModel:
    """The hand-over point between the MCP server's thread (`call`, `stop`) and the loop's (`respond`)."""

    name = "mcp"

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._next: ToolCall | BaseException | None = None
        """The client's next call for the loop (or an exception for the loop to raise: a stop)."""
        self._answer: str | None = None
        """The loop's answer to the call it took."""
        self._taken = False
        """The loop took a call and owes its answer (the next `respond` carries it)."""
        self.messages: list[Message] = []
        """What the loop last sent the model: the system prompt, the iteration prompt, tool results so far."""
        self.ended: str | None = None
        """Set when the loop has ended (why); calls are refused from then on."""

    # ---- the loop's side -----------------------------------------------------------------------------------
    def respond(self, messages: list[Message], tools: list[ToolSpec]) -> ModelResponse:
        with self._cv:
            self.messages = list(messages)
            if self._taken:  # a tool's answer, or (a new iteration) the prompt that carries the verdict
                self._answer, self._taken = messages[-1].content, False
            self._cv.notify_all()
            while self._next is None:
                self._cv.wait()
            call, self._next = self._next, None
            self._taken = not isinstance(call, BaseException)
        if isinstance(call, BaseException):
            raise call
        return ModelResponse(tool_calls=[call])

    def end(self, why: str) -> None:
        """The loop has returned (or died): wake a call waiting for it and refuse the next ones."""
        with self._cv:
            self.ended = why
            self._cv.notify_all()

    # ---- the MCP server's side -------------------------------------------------------------------------------
    def call(self, call: ToolCall) -> str | None:
        """Hand one call to the loop and wait for its answer; None when the loop ended instead of answering."""
        with self._cv:
            if self.ended is not None or isinstance(self._next, BaseException):  # ended, or about to
                return None
            self._next = call
            self._cv.notify_all()
            while self._answer is None and self.ended is None:
                self._cv.wait()
            answer, self._answer = self._answer, None
            return answer

    def ready(self, timeout: float) -> None:
        """Wait until the loop has sent its first prompt (it starts with the server) or has ended."""
        with self._cv:
            self._cv.wait_for(lambda: bool(self.messages) or self.ended is not None, timeout)

    def stop(self, exc: BaseException) -> None:
        """Make the loop raise `exc` at its next model call (a StopRun: the client went away, a budget is spent)."""
        with self._cv:
            self._next = exc
            self._cv.notify_all()
