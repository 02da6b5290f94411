"""The real anthropic and openai SDKs over real HTTP, against a loopback server answering in each wire format;
prices, the human model, and the dollar budget with real usage. Live API tests are opt-in (HARNESS_LIVE=1)."""
from __future__ import annotations

import io
import os

import pytest

from harness.agent import Agent
from rungs.core.errors import BadInput
from harness.events import ModelReplied, RunStopped
from harness.models import DEFAULT_MODELS, Message, ModelError, ToolCall, ToolSpec, TranscriptExhausted, Usage, load_model
from harness.models.anthropic_api import AnthropicModel
from harness.models.human import HumanModel
from harness.models.openai_api import OpenAICompatibleModel, OpenAIModel
from harness.prices import cost_usd
from harness.store import RunStore

from conftest import TASKS
from fake_llm import FakeLLM, anthropic_reply, error_reply, openai_reply

TOOLS = [ToolSpec(name="search_context", description="Search the context directories.",
                  parameters={"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]})]
CONVERSATION = [
    Message(role="system", content="You write kernels."),
    Message(role="user", content="Write a softmax."),
    Message(role="assistant", content="Let me look.", tool_calls=[ToolCall(id="call_1", name="search_context",
                                                                           arguments={"query": "tl.max"})]),
    Message(role="tool", content="triton/language/core.py:10-20 def max(...)", tool_call_id="call_1"),
]


def anthropic(server: FakeLLM, retries: int = 2) -> AnthropicModel:
    return AnthropicModel("claude-sonnet-4-6", api_key="test-key", base_url=server.url, max_retries=retries)


def openai(server: FakeLLM, retries: int = 2) -> OpenAIModel:
    return OpenAIModel("gpt-5", api_key="test-key", base_url=server.url + "/v1", max_retries=retries)


# ---- Anthropic -----------------------------------------------------------------------------------------------
def test_anthropic_tool_call_usage_and_wire_format():
    reply = anthropic_reply("Searching.", [("toolu_1", "search_context", {"query": "cp.async"})],
                            input_tokens=100, output_tokens=20, cache_read=1000, cache_write=200)
    with FakeLLM([reply]) as server:
        r = anthropic(server).respond(CONVERSATION, TOOLS)
    assert r.text == "Searching."
    assert r.tool_calls == [ToolCall(id="toolu_1", name="search_context", arguments={"query": "cp.async"})]
    assert r.usage.input_tokens == 1300 and r.usage.cached_tokens == 1000 and r.usage.cache_write_tokens == 200
    assert r.usage.output_tokens == 20
    assert r.usage.cost_usd == pytest.approx((100 * 3 + 20 * 15 + 1000 * 0.3 + 200 * 3.75) / 1e6)
    (req,) = server.requests
    assert req["path"] == "/v1/messages"
    assert "test-key" in (req["headers"].get("x-api-key", ""), req["headers"].get("authorization", "")[7:])
    body = req["json"]
    assert body["system"] == [{"type": "text", "text": "You write kernels.", "cache_control": {"type": "ephemeral"}}]
    assert [t["role"] for t in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][1]["content"][1] == {"type": "tool_use", "id": "call_1", "name": "search_context",
                                                 "input": {"query": "tl.max"}}
    result = body["messages"][2]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "call_1"
    assert result["cache_control"] == {"type": "ephemeral"}  # the newest block: the next turn reads it cached
    assert body["tools"][0]["input_schema"]["required"] == ["query"]


def test_anthropic_thinking_blocks_go_back_with_their_tool_call():
    first = anthropic_reply("", [("toolu_7", "search_context", {"query": "wgmma"})], thinking="I should look it up.")
    with FakeLLM([first, anthropic_reply("done")]) as server:
        model = anthropic(server)
        r = model.respond(CONVERSATION[:2], TOOLS)
        conversation = CONVERSATION[:2] + [Message(role="assistant", content=r.text, tool_calls=r.tool_calls),
                                           Message(role="tool", content="hits", tool_call_id="toolu_7")]
        model.respond(conversation, TOOLS)
    assistant = server.requests[1]["json"]["messages"][1]["content"]
    assert assistant[0] == {"type": "thinking", "thinking": "I should look it up.", "signature": "sig"}
    assert assistant[1]["type"] == "tool_use" and assistant[1]["id"] == "toolu_7"


def test_anthropic_final_answer():
    with FakeLLM([anthropic_reply("Here it is:\n```python\ndef kernel(x): ...\n```")]) as server:
        r = anthropic(server).respond(CONVERSATION[:2], [])
    assert "def kernel" in r.text and r.tool_calls == []
    assert "tools" not in server.requests[0]["json"]


def test_anthropic_retries_a_429_then_succeeds():
    with FakeLLM([error_reply(429, "rate limited", "rate_limit_error"), anthropic_reply("ok")]) as server:
        r = anthropic(server).respond(CONVERSATION[:2], TOOLS)
    assert r.text == "ok" and len(server.requests) == 2


def test_anthropic_500_after_retries_is_a_model_error():
    with FakeLLM([error_reply(500, "overloaded right now")]) as server:
        with pytest.raises(ModelError, match="HTTP 500: overloaded right now") as info:
            anthropic(server, retries=2).respond(CONVERSATION[:2], TOOLS)
    assert len(server.requests) == 3 and "\n" not in str(info.value)


@pytest.mark.parametrize("body", ["{this is not json", {"unexpected": "shape"}])
def test_anthropic_malformed_body_is_a_model_error(body):
    with FakeLLM([(200, body, {})]) as server:
        with pytest.raises(ModelError, match="malformed response"):
            anthropic(server).respond(CONVERSATION[:2], TOOLS)


# ---- OpenAI and compatible servers ---------------------------------------------------------------------------
def test_openai_tool_call_usage_and_wire_format():
    reply = openai_reply(None, [("call_9", "search_context", {"query": "tl.reduce"})],
                         prompt_tokens=2000, completion_tokens=100, cached=1500)
    with FakeLLM([reply]) as server:
        r = openai(server).respond(CONVERSATION, TOOLS)
    assert r.text == "" and r.tool_calls == [ToolCall(id="call_9", name="search_context",
                                                      arguments={"query": "tl.reduce"})]
    assert (r.usage.input_tokens, r.usage.output_tokens, r.usage.cached_tokens) == (2000, 100, 1500)
    assert r.usage.cost_usd == pytest.approx((500 * 1.25 + 100 * 10 + 1500 * 0.125) / 1e6)
    (req,) = server.requests
    assert req["path"] == "/v1/chat/completions" and req["headers"]["authorization"] == "Bearer test-key"
    wire = req["json"]["messages"]
    assert [m["role"] for m in wire] == ["system", "user", "assistant", "tool"]
    assert wire[2]["tool_calls"][0]["function"] == {"name": "search_context", "arguments": '{"query": "tl.max"}'}
    assert wire[3] == {"role": "tool", "tool_call_id": "call_1", "content": CONVERSATION[3].content}
    assert req["json"]["tools"][0] == {"type": "function", "function": TOOLS[0].model_dump()}


def test_openai_final_answer_and_429_retry():
    with FakeLLM([error_reply(429, "slow down"), openai_reply("done")]) as server:
        r = openai(server).respond(CONVERSATION[:2], TOOLS)
    assert r.text == "done" and len(server.requests) == 2


def test_openai_500_after_retries_is_a_model_error():
    with FakeLLM([error_reply(503, "no capacity")]) as server:
        with pytest.raises(ModelError, match="HTTP 503: no capacity"):
            openai(server, retries=1).respond(CONVERSATION[:2], TOOLS)
    assert len(server.requests) == 2


@pytest.mark.parametrize("body", ["<html>gateway</html>", {"choices": []}])
def test_openai_malformed_body_is_a_model_error(body):
    with FakeLLM([(200, body, {})]) as server:
        with pytest.raises(ModelError, match="malformed response"):
            openai(server).respond(CONVERSATION[:2], TOOLS)


def test_unreachable_server_is_a_model_error():
    with FakeLLM([openai_reply("never")]) as server:
        url = server.url
    model = OpenAICompatibleModel(f"{url}/v1:m", max_retries=0, timeout=2)
    with pytest.raises(ModelError, match="cannot reach"):
        model.respond(CONVERSATION[:2], TOOLS)


def test_openai_compatible_spec_keyless_and_model_names_with_colons(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_COMPATIBLE_API_KEY", raising=False)
    with FakeLLM([openai_reply("hi", model="llama3.1:8b")]) as server:
        model = load_model(f"openai-compatible:{server.url}/v1:llama3.1:8b")
        assert model.name == f"openai-compatible:{server.url}/v1:llama3.1:8b"
        assert model.respond(CONVERSATION[:2], []).text == "hi"
    assert server.requests[0]["json"]["model"] == "llama3.1:8b"
    assert server.requests[0]["headers"]["authorization"] == "Bearer EMPTY"
    with pytest.raises(BadInput, match="expected openai-compatible:<base-url>:<model>"):
        load_model("openai-compatible:my-model")


def test_server_without_tool_calling_falls_back_to_plain_text():
    refusal = (400, {"error": {"message": "tools are not supported by this model"}}, {})
    with FakeLLM([refusal, openai_reply("```python\ndef kernel(x): ...\n```"), openai_reply("again")]) as server:
        model = OpenAICompatibleModel(f"{server.url}/v1:small")
        assert "def kernel" in model.respond(CONVERSATION[:2], TOOLS).text
        model.respond(CONVERSATION[:2], TOOLS)
    assert "tools" in server.requests[0]["json"]
    assert "tools" not in server.requests[1]["json"] and "tools" not in server.requests[2]["json"]


def test_registry_defaults_and_keys(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    assert load_model("anthropic").name == DEFAULT_MODELS["anthropic"]
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(BadInput, match="OPENAI_API_KEY is not set"):
        load_model("openai:gpt-5")
    with pytest.raises(BadInput, match="known: anthropic, human, mcp, openai, openai-compatible, replay"):
        load_model("gemini:x")
    with pytest.raises(BadInput, match="harness mcp TASK --run RUN"):  # an MCP client exists only in `harness mcp`
        load_model("mcp")


# ---- prices ----------------------------------------------------------------------------------------------------
def test_prices_dated_names_override_and_unknown_models(tmp_path, monkeypatch, capsys):
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000)
    assert cost_usd("claude-sonnet-4-5-20250929", usage) == pytest.approx(18.0)
    assert cost_usd("gpt-5-2025-08-07", usage) == pytest.approx(11.25)
    table = tmp_path / "prices.yaml"
    table.write_text("models:\n  my-local-model: {input: 1.0, output: 2.0}\n  gpt-5: {input: 0, output: 0}\n")
    monkeypatch.setenv("HARNESS_PRICES", str(table))
    assert cost_usd("my-local-model", usage) == pytest.approx(3.0)
    assert cost_usd("gpt-5", usage) == 0.0
    assert cost_usd("claude-sonnet-4-5", usage) == pytest.approx(18.0)  # the shipped table still applies
    capsys.readouterr()
    assert cost_usd("mystery-model-x", usage) == 0.0 and cost_usd("mystery-model-x", usage) == 0.0
    assert capsys.readouterr().err.count("no price for model 'mystery-model-x'") == 1


# ---- human -----------------------------------------------------------------------------------------------------
def test_human_gives_a_file_path_or_pasted_code(tmp_path):
    kernel = tmp_path / "k.py"
    kernel.write_text("def kernel(x):\n    return x\n")
    shown = io.StringIO()
    human = HumanModel(stdin=io.StringIO(f"{kernel}\n"), stdout=shown)
    r = human.respond(CONVERSATION[:2], TOOLS)
    assert "```python\ndef kernel(x):\n    return x\n```" in r.text and "Write a softmax." in shown.getvalue()
    pasted = HumanModel(stdin=io.StringIO("import triton\ndef kernel(x):\n    pass\nEOF\n"), stdout=io.StringIO())
    assert "import triton\ndef kernel(x):\n    pass\n```" in pasted.respond(CONVERSATION[:2], []).text
    with pytest.raises(TranscriptExhausted):
        HumanModel(stdin=io.StringIO(""), stdout=io.StringIO()).respond(CONVERSATION[:2], [])


# ---- budgets with real usage ------------------------------------------------------------------------------------
def test_dollar_budget_stops_the_run_before_the_next_call(softmax_task, tmp_path):
    # one call of 1M prompt tokens on gpt-5 costs $1.25, over the $1 budget: the next call is never made
    reply = openai_reply(None, [("c1", "list_iterations", {})], prompt_tokens=1_000_000, completion_tokens=10)
    with FakeLLM([reply]) as server:
        budgets = softmax_task.budgets.model_copy(update={"usd": 1.0})
        store = RunStore.create(tmp_path / "runs", softmax_task, "openai:gpt-5", budgets.model_dump())
        agent = Agent(task=softmax_task, model=openai(server), store=store, budgets=budgets,
                      dumps_root=tmp_path / "dumps")
        stop = agent.run()
    assert stop.status == "budget" and "dollar budget" in stop.reason
    assert len(server.requests) == 1
    events = store.journal.read()
    (replied,) = [e for e in events if isinstance(e, ModelReplied)]
    assert replied.usage.input_tokens == 1_000_000 and replied.usage.cost_usd == pytest.approx(1.2501)
    assert isinstance(events[-1], RunStopped)


def test_model_error_ends_the_run_with_status_error(softmax_task, tmp_path):
    with FakeLLM([error_reply(500, "down")]) as server:
        store = RunStore.create(tmp_path / "runs", softmax_task, "anthropic:x", softmax_task.budgets.model_dump())
        agent = Agent(task=softmax_task, model=anthropic(server, retries=1), store=store,
                      budgets=softmax_task.budgets, dumps_root=tmp_path / "dumps")
        stop = agent.run()
    assert stop.status == "error" and "HTTP 500: down" in stop.reason and agent.iteration == 0


# ---- live (opt-in) ----------------------------------------------------------------------------------------------
live = pytest.mark.skipif(os.environ.get("HARNESS_LIVE") != "1", reason="live API test: set HARNESS_LIVE=1")


@pytest.mark.live
@live
@pytest.mark.parametrize("spec,key", [("anthropic", "ANTHROPIC_API_KEY"), ("openai", "OPENAI_API_KEY")])
def test_live_api_answers_with_a_tool_call(spec, key):
    if not os.environ.get(key):
        pytest.skip(f"{key} is not set")
    model = load_model(os.environ.get(f"HARNESS_LIVE_{spec.upper()}_MODEL", spec))
    messages = [Message(role="system", content="You answer by calling tools."),
                Message(role="user", content="Search the context for 'cp.async.bulk.tensor' with the tool.")]
    r = model.respond(messages, TOOLS)
    assert r.tool_calls and r.tool_calls[0].name == "search_context"
    assert r.usage.input_tokens > 0 and r.usage.output_tokens > 0 and r.usage.cost_usd > 0


# ---- a whole `harness run` against a loopback OpenAI-compatible server ---------------------------------------------
def test_cli_run_against_an_openai_compatible_server(tmp_path):
    import json
    from pathlib import Path

    from test_cli import harness

    code = (TASKS / "demos" / "softmax_3_rowwise.py").read_text()
    script = [openai_reply("Checking Triton's reductions first.", [("c1", "search_context", {"query": "tl.max"})],
                           prompt_tokens=1200, completion_tokens=40, cached=0, model="any"),
              openai_reply(None, [("c2", "submit_kernel", {"code": code, "notes": "one program per row"})],
                           prompt_tokens=2400, completion_tokens=900, cached=1024, model="any")]
    from lean import lean_task

    task, _ = lean_task(tmp_path / "lean", [])  # one small shape: the loop and the provider are under test
    task.write_text(task.read_text() + "context: [triton]\n")  # what search_context searches, as in softmax.yaml
    with FakeLLM(script) as server:
        p = harness("run", str(task), "--model", f"openai-compatible:{server.url}/v1:any",
                    "--max-iterations", "1", "--runs-dir", str(tmp_path / "runs"), "--dumps-dir", str(tmp_path / "d"),
                    env={"HARNESS_HOME": str(tmp_path / "home"), "OPENAI_API_KEY": "sk-secret-value"})
    assert p.returncode == 0, p.stderr
    assert "no price for model 'any'" in p.stderr
    run = Path(p.stdout.split("run folder: ")[1].strip())
    assert json.loads((run / "run.json").read_text())["status"] == "budget"
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    (tool,) = [e for e in events if e["type"] == "tool_call"]
    assert tool["name"] == "search_context" and tool["result"].startswith("1. triton/")
    replies = [e for e in events if e["type"] == "model_reply"]
    assert [r["usage"]["input_tokens"] for r in replies] == [1200, 2400] and replies[1]["usage"]["cached_tokens"] == 1024
    (it,) = [e for e in events if e["type"] == "iteration"]
    assert it["verdict"]["verdict"] == "pass" and it["notes"] == "one program per row"
    assert (run / "best" / "kernel.py").read_text() == code
    # the second request carried the tool result back, after the assistant's tool call
    second = server.requests[1]["json"]
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "tool"]
    assert second["messages"][3]["tool_call_id"] == "c1" and "triton/" in second["messages"][3]["content"]
    assert {t["function"]["name"] for t in second["tools"]} >= {"submit_kernel", "search_context", "read_context"}
    assert "sk-secret-value" not in (run / "events.jsonl").read_text() + (run / "run.json").read_text()


def test_cli_run_ends_with_status_error_when_the_model_keeps_failing(tmp_path):
    import json
    from pathlib import Path

    from test_cli import harness

    with FakeLLM([error_reply(529, "overloaded", "overloaded_error")]) as server:
        p = harness("run", str(TASKS / "softmax.yaml"), "--model", "anthropic:claude-sonnet-4-6",
                    "--runs-dir", str(tmp_path / "runs"), "--dumps-dir", str(tmp_path / "d"),
                    env={"ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": server.url,
                         "HARNESS_MODEL_RETRIES": "1", "HARNESS_HOME": str(tmp_path / "home")})
    assert p.returncode == 3, p.stderr
    assert len(server.requests) == 2  # the first try and one retry
    assert "HTTP 529: overloaded" in p.stdout
    run = Path(p.stdout.split("run folder: ")[1].strip())
    info = json.loads((run / "run.json").read_text())
    assert info["status"] == "error" and "HTTP 529" in info["stop_reason"]
