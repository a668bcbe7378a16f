"""Mock of the Anthropic Messages API for the real `claude` binary.

POST /v1/messages (streaming SSE or plain JSON), /v1/messages/count_tokens;
everything else is logged and answered 404. See mockbase.SCRIPT_HELP.
"""
import json

from .mockbase import MockServer, scripted_reply, serve_from_command_line


def _last_user_text(messages):
    """(text of the last user message, whether it carries a tool_result)."""
    for m in reversed(messages or []):
        if m.get("role") != "user":
            continue
        c = m.get("content")
        if isinstance(c, str):
            return c, False
        texts, has_result = [], False
        for b in c or []:
            if b.get("type") == "tool_result":
                has_result = True
            elif b.get("type") == "text":
                t = b.get("text", "")
                # Claude wraps context in <system-reminder> blocks: not the prompt.
                if not t.lstrip().startswith("<system-reminder>"):
                    texts.append(t)
        return "\n".join(texts), has_result
    return "", False


def _prompt_and_results(messages):
    """(the text of the last user message that is no tool result, how many tool results came
    after it)."""
    results = 0
    for m in reversed(messages or []):
        if m.get("role") != "user":
            continue
        text, has_result = _last_user_text([m])
        if has_result:
            results += 1
        elif text.strip():
            return text, results
    return "", results


# "ASK MANY": three questions in one call, one of them multi-select (what a model asks before
# setting up a cache).
ASK_MANY = [
    {"question": "Which database should the cache use?", "header": "Database", "multiSelect": False,
     "options": [{"label": "Postgres", "description": "the server you run"},
                 {"label": "SQLite", "description": "a file beside the app"}]},
    {"question": "Which caches should sit in front of it?", "header": "Caches", "multiSelect": True,
     "options": [{"label": "Redis", "description": "shared"},
                 {"label": "Memcached", "description": "simple"},
                 {"label": "In-process", "description": "none to run"}]},
    {"question": "What should the cache be called?", "header": "Name", "multiSelect": False,
     "options": [{"label": "cache", "description": "the plain name"},
                 {"label": "store", "description": "another plain name"}]},
]


# The shell tool of each agent that speaks the Messages API: Claude Code's, Qwen Code's.
SHELL_TOOLS = ("Bash", "run_shell_command")


class AnthropicMock(MockServer):
    name = "anthropic-mock"
    model = "claude-mock-1"
    # The shell tool a "TOOL <cmd>" prompt calls, and the tool whose presence marks a main-turn
    # request (Claude Code's; Pi's is "bash"; Factory Droid calls it Execute: harness.droid).
    shell_tool = "Bash"

    def shell_input(self, command):
        """The shell tool's input for `command`."""
        return {"command": command, "description": "mock command"}

    def plan(self, body):
        """Decides the reply: ("text", str) or ("tool", cmd), plus a delay."""
        tools = {t.get("name") for t in (body.get("tools") or []) if isinstance(t, dict)}
        text, has_result = _last_user_text(body.get("messages"))
        if has_result:
            # "TOOL a THEN TOOL b": the next step of the prompt, once per tool result.
            prompt, results = _prompt_and_results(body.get("messages"))
            steps = prompt.split(" THEN ")
            if len(steps) > results:
                return scripted_reply(steps[results], kinds=("tool",))
            return ("text", "done"), 0
        if not tools & (set(SHELL_TOOLS) | {self.shell_tool}):  # a side request (title, summary, ...): answer at once
            return ("text", "ok"), 0
        return scripted_reply(text.split(" THEN ")[0], kinds=("tool", "ask", "mcp"))

    def handle(self, h, method, path, body):
        p = path.split("?")[0]
        if method == "POST" and p == "/v1/messages/count_tokens":
            return self.send_json(h, 200, {"input_tokens": 100})
        if method == "POST" and p == "/v1/messages" and isinstance(body, dict):
            return self.messages(h, body)
        if method == "HEAD" or (method == "GET" and p in ("/", "")):
            return self.send_json(h, 200, {})
        return self.not_found(h)

    def messages(self, h, body):
        (kind, arg), delay = self.plan(body)
        tools = {t.get("name") for t in (body.get("tools") or []) if isinstance(t, dict)}
        shell = next((t for t in (self.shell_tool,) + SHELL_TOOLS if t in tools), self.shell_tool)
        n = self.next_id()
        if delay:
            self.hold(delay)
        msg_id = f"msg_mock_{n}"
        model = body.get("model") or self.model
        if kind == "tool":
            block = {"type": "tool_use", "id": f"toolu_mock_{n}", "name": shell,
                     "input": self.shell_input(arg)}
            stop = "tool_use"
        elif kind == "ask":
            block = {"type": "tool_use", "id": f"toolu_mock_{n}", "name": "AskUserQuestion",
                     "input": {"questions": ASK_MANY if arg == "MANY" else [{
                         "question": arg, "header": "Choice", "multiSelect": False,
                         "options": [{"label": "Red", "description": "the red one"},
                                     {"label": "Blue", "description": "the blue one"}]}]}}
            stop = "tool_use"
        elif kind == "mcp":
            block = {"type": "tool_use", "id": f"toolu_mock_{n}", "name": arg, "input": {}}
            stop = "tool_use"
        else:
            block = {"type": "text", "text": arg}
            stop = "end_turn"
        usage = {"input_tokens": self.input_tokens, "output_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        if not body.get("stream"):
            return self.send_json(h, 200, {
                "id": msg_id, "type": "message", "role": "assistant", "model": model,
                "content": [block], "stop_reason": stop, "stop_sequence": None, "usage": usage})
        self.start_sse(h)
        ev = lambda e, d: self.send_event(h, e, d)
        ev("message_start", {"type": "message_start", "message": {
            "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": dict(usage, output_tokens=1)}})
        if kind in ("tool", "ask", "mcp"):
            ev("content_block_start", {"type": "content_block_start", "index": 0,
                                       "content_block": dict(block, input={})})
            ev("content_block_delta", {"type": "content_block_delta", "index": 0,
                                       "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}})
        else:
            ev("content_block_start", {"type": "content_block_start", "index": 0,
                                       "content_block": {"type": "text", "text": ""}})
            ev("content_block_delta", {"type": "content_block_delta", "index": 0,
                                       "delta": {"type": "text_delta", "text": arg}})
        ev("content_block_stop", {"type": "content_block_stop", "index": 0})
        ev("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                             "usage": {"output_tokens": 10}})
        ev("message_stop", {"type": "message_stop"})


if __name__ == "__main__":  # manual use: python3 -m harness.mock_anthropic [log.jsonl]
    serve_from_command_line(AnthropicMock, lambda m: f"ANTHROPIC_BASE_URL={m.base_url}")
