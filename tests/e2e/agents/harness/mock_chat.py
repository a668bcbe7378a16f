"""Mock of the OpenAI Chat Completions API for the real `copilot`, `opencode` and `cline` binaries.

POST /v1/chat/completions (SSE when `stream` is true, else one JSON reply); GET /v1/models
answers an empty list; everything else is logged and answered 404. See mockbase.SCRIPT_HELP.

Copilot and OpenCode name their shell tool `bash` with arguments `{command, description}`;
Cline names it `run_commands` with `{commands: [...]}`. A tool call
is streamed the way the OpenAI SDK expects: a first `tool_calls` delta with the id and name,
then the argument string in chunks, then `finish_reason: "tool_calls"`, then `[DONE]`.
Requests that offer no `bash` tool (OpenCode's title request) get a plain text reply.
"""
import json
import time

from .mockbase import MockServer, content_text, scripted_reply, serve_from_command_line, tool_names


# "ASK MANY" for OpenCode's question tool: two questions in one call, the second multi-select.
ASK_MANY = [
    {"question": "Which database should the cache use?", "header": "Database", "multiple": False,
     "options": [{"label": "Postgres", "description": "the server you run"},
                 {"label": "SQLite", "description": "a file beside the app"}]},
    {"question": "Which caches should sit in front of it?", "header": "Caches", "multiple": True,
     "options": [{"label": "Redis", "description": "shared"},
                 {"label": "Memcached", "description": "simple"},
                 {"label": "In-process", "description": "none to run"}]},
]


class ChatMock(MockServer):
    name = "chat-mock"

    def plan(self, body):
        tools = tool_names(body)
        msgs = body.get("messages") or []
        # A tool result after the last user message: the turn is finishing.
        for m in reversed(msgs):
            if not isinstance(m, dict):
                continue
            if m.get("role") == "tool":
                return ("text", "done"), 0
            if m.get("role") == "user":
                break
        if "bash" not in tools and "run_commands" not in tools:
            return ("text", "Mock title"), 0  # side request (title generation, ...)
        last_user = ""
        for m in reversed(msgs):
            if isinstance(m, dict) and m.get("role") == "user":
                # Copilot puts a `<current_datetime>` block before the prompt, on lines of its
                # own: parse_script reads the first line that is a script.
                last_user = content_text(m.get("content"))
                break
        # OpenCode offers the model its `question` tool: "ASK …" asks with it.
        return scripted_reply(last_user, kinds=("tool", "ask") if "question" in tools else ("tool",))

    def handle(self, h, method, path, body):
        p = path.split("?")[0]
        if method == "POST" and p.endswith("/chat/completions") and isinstance(body, dict):
            return self.chat(h, body)
        if method == "GET" and p.endswith("/models"):
            return self.send_json(h, 200, {"object": "list", "data": []})
        return self.not_found(h)

    @staticmethod
    def _data(h, obj):
        h.wfile.write(f"data: {json.dumps(obj)}\n\n".encode())
        h.wfile.flush()

    def chat(self, h, body):
        (kind, arg), delay = self.plan(body)
        n = self.next_id()
        if delay:
            self.hold(delay)
        cid = f"chatcmpl-mock-{n}"
        model = body.get("model") or "mock-model"
        usage = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
        base = {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()), "model": model}
        if kind == "tool" and "run_commands" in tool_names(body):
            # Cline's shell tool takes a list of commands.
            tool, args = "run_commands", json.dumps({"commands": [arg]})
            call_id = f"call_mock_{n}"
        elif kind == "tool":
            tool, args = "bash", json.dumps({"command": arg, "description": f"mock: run {arg}"})
            call_id = f"call_mock_{n}"
        elif kind == "ask":
            tool, args = "question", json.dumps({"questions": ASK_MANY if arg == "MANY" else [{
                "question": arg, "header": "Choice", "multiple": False,
                "options": [{"label": "Red", "description": "the red one"},
                            {"label": "Blue", "description": "the blue one"}]}]})
            call_id, kind = f"call_mock_{n}", "tool"
        if not body.get("stream"):
            if kind == "tool":
                message = {"role": "assistant", "content": None, "tool_calls": [{
                    "id": call_id, "type": "function", "function": {"name": tool, "arguments": args}}]}
                finish = "tool_calls"
            else:
                message = {"role": "assistant", "content": arg}
                finish = "stop"
            return self.send_json(h, 200, {"id": cid, "object": "chat.completion", "created": base["created"],
                                           "model": model, "usage": usage,
                                           "choices": [{"index": 0, "message": message, "finish_reason": finish}]})
        self.start_sse(h)
        chunk = lambda delta, finish=None: dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": finish}])
        self._data(h, chunk({"role": "assistant", "content": ""}))
        if kind == "tool":
            self._data(h, chunk({"tool_calls": [{"index": 0, "id": call_id, "type": "function",
                                                 "function": {"name": tool, "arguments": ""}}]}))
            for i in range(0, len(args), 16):
                self._data(h, chunk({"tool_calls": [{"index": 0, "function": {"arguments": args[i:i + 16]}}]}))
            self._data(h, chunk({}, "tool_calls"))
        else:
            self._data(h, chunk({"content": arg}))
            self._data(h, chunk({}, "stop"))
        self._data(h, dict(base, choices=[], usage=usage))
        h.wfile.write(b"data: [DONE]\n\n")
        h.wfile.flush()


if __name__ == "__main__":  # manual use: python3 -m harness.mock_chat [log.jsonl]
    serve_from_command_line(ChatMock, lambda m: f"base_url = {m.base_url}/v1")
