"""Mock of the Gemini REST API (v1beta) for the real `gemini` CLI.

POST /v1beta/models/<m>:streamGenerateContent?alt=sse answers by the script in the last user
text (see mockbase.SCRIPT_HELP): "TOOL <cmd>" gets a `run_shell_command` function call, a
functionResponse after it gets the text "done", anything else "ok"; "SLEEP n" holds the reply.
POST …:generateContent (the start-up summary of the previous session, on another model) gets a
short text; …:countTokens a count. Everything else is logged and answered 404.
"""
import json

from .mockbase import MockServer, scripted_reply, serve_from_command_line


def _last_content(body):
    contents = body.get("contents") or []
    return contents[-1] if contents and isinstance(contents[-1], dict) else {}


def _last_user_text(body):
    for c in reversed(body.get("contents") or []):
        if not isinstance(c, dict) or c.get("role") != "user":
            continue
        texts = [p.get("text", "") for p in c.get("parts") or [] if isinstance(p, dict) and "text" in p]
        if texts:
            return "\n".join(texts)
    return ""


def _chunk(parts, finish=None):
    cand = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        cand["finishReason"] = finish
    return {"candidates": [cand],
            "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110},
            "modelVersion": "gemini-2.5-flash"}


class GeminiMock(MockServer):
    name = "gemini-mock"
    after_tool_delay = 2.0

    def plan(self, body):
        last = _last_content(body)
        if any(isinstance(p, dict) and "functionResponse" in p for p in last.get("parts") or []):
            # Held a moment, as a model thinks: the turn is visibly working again after the tool.
            return ("text", "done"), self.after_tool_delay
        return scripted_reply(_last_user_text(body))

    def handle(self, h, method, path, body):
        p = path.split("?")[0]
        if method == "POST" and p.endswith(":streamGenerateContent") and isinstance(body, dict):
            return self.stream(h, body)
        if method == "POST" and p.endswith(":generateContent"):
            return self.send_json(h, 200, _chunk([{"text": "ok"}], "STOP"))
        if method == "POST" and p.endswith(":countTokens"):
            return self.send_json(h, 200, {"totalTokens": 10})
        return self.not_found(h)

    def stream(self, h, body):
        (kind, arg), delay = self.plan(body)
        n = self.next_id()
        if delay:
            self.hold(delay)
        self.start_sse(h)

        def data(obj):
            h.wfile.write(f"data: {json.dumps(obj)}\r\n\r\n".encode())
            h.wfile.flush()

        if kind == "tool":
            data(_chunk([{"text": "Running it."}]))
            call = {"name": "run_shell_command", "id": f"call_mock_{n}",
                    "args": {"command": arg, "description": f"mock wants to run {arg}"}}
            data(_chunk([{"functionCall": call}], "STOP"))
        else:
            data(_chunk([{"text": arg}], "STOP"))


if __name__ == "__main__":  # manual use: python3 -m harness.mock_gemini [log.jsonl]
    serve_from_command_line(GeminiMock, lambda m: f"GOOGLE_GEMINI_BASE_URL={m.base_url}")
