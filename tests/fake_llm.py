"""A loopback HTTP server that answers like the Anthropic Messages API or OpenAI Chat Completions, from a
script of replies, so the real SDKs can be tested over real HTTP with no key and no network.

    with FakeLLM([openai_reply(text="hi")]) as server:
        OpenAIModel("gpt-5", base_url=server.url + "/v1", api_key="test")

Each scripted reply is (status, body, headers); a body that is a dict is sent as JSON, a str as is. Every
request is kept (path, headers, JSON body) for assertions. When the script runs out, the last reply repeats.
"""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = tuple[int, Any, dict[str, str]]
FAST_RETRY = {"retry-after-ms": "10"}
"""Tells the SDK to retry after 10 ms instead of its default half second and more."""


class FakeLLM:
    def __init__(self, script: list[Reply]) -> None:
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server API
                raw = self.rfile.read(int(self.headers.get("content-length", 0)))
                with fake.lock:
                    fake.requests.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                                          "json": json.loads(raw or b"{}")})
                    status, body, headers = fake.script.pop(0) if len(fake.script) > 1 else fake.script[0]
                data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        # polled every 20 ms, not 0.5 s: shutdown() waits for the next poll, and 17 tests start one
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02},
                                       daemon=True)

    def __enter__(self) -> "FakeLLM":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def anthropic_reply(text: str = "", tool_calls: list[tuple[str, str, dict[str, Any]]] = (), *, input_tokens: int = 10,
                    output_tokens: int = 5, cache_read: int = 0, cache_write: int = 0,
                    model: str = "claude-sonnet-4-6", thinking: str = "") -> Reply:
    content: list[dict[str, Any]] = [{"type": "thinking", "thinking": thinking, "signature": "sig"}] if thinking else []
    content += [{"type": "text", "text": text}] if text else []
    content += [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in tool_calls]
    return 200, {"id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": content,
                 "stop_reason": "tool_use" if tool_calls else "end_turn", "stop_sequence": None,
                 "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens,
                           "cache_read_input_tokens": cache_read, "cache_creation_input_tokens": cache_write}}, {}


def openai_reply(text: str | None = "", tool_calls: list[tuple[str, str, dict[str, Any]]] = (), *,
                 prompt_tokens: int = 10, completion_tokens: int = 5, cached: int = 0, model: str = "gpt-5") -> Reply:
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if tool_calls:
        message["tool_calls"] = [{"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
                                 for i, n, a in tool_calls]
    return 200, {"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": model,
                 "choices": [{"index": 0, "message": message,
                              "finish_reason": "tool_calls" if tool_calls else "stop"}],
                 "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                           "total_tokens": prompt_tokens + completion_tokens,
                           "prompt_tokens_details": {"cached_tokens": cached}}}, {}


def error_reply(status: int, message: str = "boom", kind: str = "api_error") -> Reply:
    return status, {"type": "error", "error": {"type": kind, "message": message}}, FAST_RETRY


def serve_forever(script_file: str) -> None:  # pragma: no cover - for trying a CLI run by hand
    """`python tests/fake_llm.py script.json`: serve a JSON list of [status, body, headers] until Ctrl-C."""
    with FakeLLM([tuple(r) for r in json.loads(open(script_file).read())]) as server:
        print(server.url, flush=True)
        threading.Event().wait()


if __name__ == "__main__":  # pragma: no cover
    import sys

    serve_forever(sys.argv[1])
