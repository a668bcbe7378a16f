"""Mock of the OpenAI Responses API for the real `codex` binary.

POST /v1/responses (streaming SSE); GET /v1/models answers an empty list;
everything else is logged and answered 404. See mockbase.SCRIPT_HELP.
"""
import json

from .mockbase import MockServer, content_text, scripted_reply, serve_from_command_line, tool_names

# "ASK <question>" for Codex's `request_user_input` (offered in Plan mode): one question with two
# options; "ASK MANY" asks two in one call. Codex adds "None of the above" (free text) itself.
ASK_MANY = [
    {"id": "database", "header": "Database", "question": "Which database should the cache use?",
     "options": [{"label": "Postgres", "description": "the server you already run"},
                 {"label": "SQLite", "description": "a file beside the app"}]},
    {"id": "eviction", "header": "Eviction", "question": "How should old entries go?",
     "options": [{"label": "LRU", "description": "least recently used first"},
                 {"label": "TTL", "description": "after a fixed time"}]},
]


def ask_arguments(arg):
    """The `request_user_input` arguments for "ASK <arg>"."""
    if arg == "MANY":
        return {"questions": ASK_MANY}
    return {"questions": [{"id": "colour", "header": "Colour", "question": arg,
                           "options": [{"label": "Red", "description": "warm"},
                                       {"label": "Blue", "description": "cool"}]}]}


def _input_items(body):
    inp = body.get("input")
    if isinstance(inp, str):
        return [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": inp}]}]
    return inp if isinstance(inp, list) else []


class OpenAIMock(MockServer):
    name = "openai-mock"

    def plan(self, body):
        tools = tool_names(body)
        items = _input_items(body)
        # A tool result after the last user message: the turn is finishing.
        for it in reversed(items):
            if it.get("type") in ("function_call_output", "custom_tool_call_output"):
                return ("text", "done"), 0
            if it.get("type") == "message" and it.get("role") == "user":
                break
        if "exec_command" not in tools and "shell" not in tools:
            return ("text", "ok"), 0  # side request (title generation, ...)
        last_user = ""
        for it in reversed(items):
            if it.get("type") == "message" and it.get("role") == "user":
                t = content_text(it.get("content"))
                if t.lstrip().startswith("<"):  # <environment_context>, <turn_aborted>, ...
                    continue
                last_user = t
                break
        return scripted_reply(last_user, kinds=("tool", "ask"))

    def handle(self, h, method, path, body):
        p = path.split("?")[0]
        if method == "POST" and p.endswith("/responses") and isinstance(body, dict):
            return self.responses(h, body)
        if method == "GET" and p.endswith("/models"):
            return self.send_json(h, 200, {"object": "list", "data": [], "models": []})
        return self.not_found(h)

    def responses(self, h, body):
        (kind, arg), delay = self.plan(body)
        n = self.next_id()
        if delay:
            self.hold(delay)
        rid = f"resp_mock_{n}"
        self.start_sse(h)
        ev = lambda e, d: self.send_event(h, e, d)
        ev("response.created", {"type": "response.created", "response": {"id": rid, "object": "response", "status": "in_progress", "output": []}})
        if kind in ("tool", "ask"):
            if kind == "tool":
                name, args = "exec_command", {"cmd": arg, "sandbox_permissions": "require_escalated",
                                              "justification": f"mock wants to run {arg} outside the sandbox"}
            else:
                name, args = "request_user_input", ask_arguments(arg)
            item = {"type": "function_call", "id": f"fc_mock_{n}", "call_id": f"call_mock_{n}",
                    "name": name, "arguments": json.dumps(args), "status": "completed"}
            ev("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                                               "item": dict(item, arguments="", status="in_progress")})
            ev("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item})
        else:
            mid = f"msg_mock_{n}"
            ev("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": {
                "type": "message", "id": mid, "role": "assistant", "status": "in_progress", "content": []}})
            ev("response.output_text.delta", {"type": "response.output_text.delta", "item_id": mid,
                                               "output_index": 0, "content_index": 0, "delta": arg})
            ev("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": {
                "type": "message", "id": mid, "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": arg, "annotations": []}]}})
        ev("response.completed", {"type": "response.completed", "response": {
            "id": rid, "object": "response", "status": "completed", "output": [],
            "usage": {"input_tokens": self.input_tokens, "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens": 10, "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": self.input_tokens + 10}}})


if __name__ == "__main__":  # manual use: python3 -m harness.mock_openai [log.jsonl]
    serve_from_command_line(OpenAIMock, lambda m: f"base_url = {m.base_url}/v1")
