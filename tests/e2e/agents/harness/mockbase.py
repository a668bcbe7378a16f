"""Common base of the loopback mock model servers (stdlib only).

Every request is logged (method, path, a few headers, the parsed JSON body) to
an in-memory list and, optionally, to a JSONL file, so that tests and humans can
see what the real agents asked for. Unknown requests are logged and answered
with 404 + a small JSON error (the agents treat that as "feature not there").
"""
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# Text of the last user turn, as the scripting rules see it.
SCRIPT_HELP = """
Scripting (the mocks are driven by the text of the user's prompt, so side
requests such as title generation never trigger tools):
  TOOL <shell command>   ask for that command with the agent's shell tool
                         (Claude: Bash tool_use; Codex: exec_command with
                         sandbox_permissions=require_escalated)
  SLEEP <seconds> [...]  hold the reply that long before streaming it
                         (a turn that stays "working"; cut short when the
                         server stops); the rest of the line is read on,
                         e.g. "SLEEP 2 TOOL touch x"
  ASK <question>         ask the user that question with the agent's question
                         tool (Claude: AskUserQuestion; OpenCode: question;
                         Codex, in Plan mode: request_user_input), two
                         options, Red and Blue; "ASK MANY" asks several in
                         one call (each mock's ASK_MANY)
  MCP <tool>             Claude only: call that MCP tool (its full name,
                         mcp__<server>__<tool>) with no arguments
  TOOL a THEN TOOL b     Anthropic mock: one turn asking for a, then (after
                         its result) for b
  anything else          reply with the text "ok"
After a tool result comes back the mock replies "done".
"""


class MockServer:
    """A ThreadingHTTPServer on 127.0.0.1:<free port> run in a daemon thread."""

    name = "mock"
    # The input tokens each answer reports (output is always 10): a test may raise it between
    # turns to see the agent's context figure move.
    input_tokens = 100
    # Headers every streamed answer carries (a test sets the plan's rate-limit headers here).
    stream_headers = {}

    def __init__(self, log_path=None):
        self.log_path = log_path
        self.requests = []  # dicts: t, method, path, headers, body
        self._lock = threading.Lock()
        self.stopping = threading.Event()
        self.counter = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt, *args):  # silence stderr
                pass

            def _read_body(self):
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n) if n else b""
                if self.headers.get("Content-Encoding", "") == "zstd":
                    return raw, {"_undecoded": "zstd", "_len": len(raw)}
                if self.headers.get("Content-Encoding", "") in ("gzip",):
                    import gzip
                    raw = gzip.decompress(raw)
                try:
                    return raw, json.loads(raw) if raw else None
                except Exception:
                    return raw, {"_unparsed": raw[:2000].decode("utf-8", "replace")}

            def _dispatch(self, method):
                raw, body = self._read_body() if method in ("POST", "PUT", "PATCH") else (b"", None)
                outer._log(method, self.path, self.headers, body)
                try:
                    outer.handle(self, method, self.path, body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_GET(self):
                self._dispatch("GET")

            def do_POST(self):
                self._dispatch("POST")

            def do_HEAD(self):
                self._dispatch("HEAD")

            def do_PUT(self):
                self._dispatch("PUT")

            def do_DELETE(self):
                self._dispatch("DELETE")

            def do_PATCH(self):
                self._dispatch("PATCH")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, name=f"{self.name}-{self.port}", daemon=True)

    # -- lifecycle -------------------------------------------------------
    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self.port}"

    # -- logging ---------------------------------------------------------
    def _log(self, method, path, headers, body):
        keep = {k: v for k, v in headers.items() if k.lower() in ("user-agent", "content-type", "accept", "anthropic-beta", "anthropic-version", "x-app", "originator", "session_id", "openai-beta")}
        rec = {"t": time.time(), "method": method, "path": path, "headers": keep, "body": body}
        with self._lock:
            self.requests.append(rec)
            if self.log_path:
                with open(self.log_path, "a") as f:
                    f.write(json.dumps(rec, default=str) + "\n")

    def paths(self):
        with self._lock:
            return [f"{r['method']} {r['path']}" for r in self.requests]

    def next_id(self):
        with self._lock:
            self.counter += 1
            return self.counter

    # -- helpers for handlers -------------------------------------------
    @staticmethod
    def send_json(h, code, obj):
        data = json.dumps(obj).encode()
        h.send_response(code)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(data)

    def start_sse(self, h):
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Cache-Control", "no-cache")
        h.send_header("Connection", "close")
        for name, value in self.stream_headers.items():
            h.send_header(name, str(value))
        h.end_headers()
        h.close_connection = True

    @staticmethod
    def send_event(h, event, data):
        h.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
        h.wfile.flush()

    def hold(self, seconds):
        """Wait `seconds`, cut short when the server stops."""
        self.stopping.wait(seconds)

    def not_found(self, h):
        self.send_json(h, 404, {"error": {"type": "not_found_error", "message": f"mock: no route for {h.command} {h.path}"}})

    def handle(self, h, method, path, body):  # overridden
        self.not_found(h)


def content_text(content):
    """The text of an OpenAI-style message or item content: a string, or parts with `text`."""
    if isinstance(content, str):
        return content
    return "\n".join(p.get("text", "") for p in content or [] if isinstance(p, dict))


def tool_names(body):
    """The names of the tools a request offers (`{name}` or `{function: {name}}` entries)."""
    out = set()
    for t in body.get("tools") or []:
        if isinstance(t, dict):
            out.add(t.get("name") or (t.get("function") or {}).get("name"))
    return out


def scripted_reply(text, kinds=("tool",)):
    """((kind, arg), delay) for the prompt `text`: a scripted kind in `kinds` as parse_script read
    it, else the text "ok" (after any SLEEP)."""
    kind, arg, delay = parse_script(text)
    if kind in kinds:
        return (kind, arg), delay
    return ("text", "ok"), delay


def serve_from_command_line(mock_cls, announce):
    """`python3 -m harness.mock_<x> [log.jsonl]`: serves until Ctrl-C, after printing
    announce(mock) (the variable that points an agent at it) and the scripting help."""
    import sys
    m = mock_cls(sys.argv[1] if len(sys.argv) > 1 else None).start()
    print(announce(m), flush=True)
    print(SCRIPT_HELP, file=sys.stderr)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        m.stop()


def parse_script(text):
    """Returns (kind, arg, delay) for a prompt: kind "tool" (arg = shell command) or "text".

    "SLEEP <n> [rest]" holds the reply n seconds, then [rest] is read as a script;
    "TOOL <cmd>" asks for the command; "ASK <question>" (Claude only) asks the user that
    question with the agent's question tool (AskUserQuestion). Only the first line that starts with one of
    these counts (Codex's title request quotes the prompt after other text).
    """
    delay = 0.0
    for line in (text or "").strip().splitlines():
        line = line.strip()
        if not line.startswith(("TOOL ", "SLEEP ", "ASK ", "MCP ")):
            continue
        while line.startswith("SLEEP "):
            parts = line.split(None, 2)
            try:
                delay += float(parts[1])
            except (IndexError, ValueError):
                break
            line = parts[2].strip() if len(parts) > 2 else ""
        if line.startswith("TOOL "):
            return "tool", line[5:].strip(), delay
        if line.startswith("ASK "):
            return "ask", line[4:].strip(), delay
        if line.startswith("MCP "):
            return "mcp", line[4:].strip(), delay
        return "text", None, delay
    return "text", None, delay
