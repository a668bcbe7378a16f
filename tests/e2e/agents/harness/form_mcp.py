"""A stdio MCP server with one tool, `ask_form`, which asks the client to fill a form
(`elicitation/create`: a text field `name` and a choice `size`) and returns what came back, as
text. Every message in and out is logged as JSON lines to $FORM_MCP_LOG, so a test reads what
the form was answered with. Stdlib only; run by the agent as `python3 form_mcp.py`."""
import json
import os
import sys

LOG = os.environ.get("FORM_MCP_LOG")
SCHEMA = {"type": "object", "properties": {
    "name": {"type": "string", "title": "Name", "description": "what to call it"},
    "size": {"type": "string", "title": "Size", "enum": ["small", "large"]}},
    "required": ["name"]}
MESSAGE = "Name the new cache"


def log(kind, obj):
    if LOG:
        with open(LOG, "a") as f:
            f.write(json.dumps({"k": kind, "m": obj}) + "\n")


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()
    log("out", obj)


def read():
    line = sys.stdin.readline()
    if not line:
        sys.exit(0)
    m = json.loads(line)
    log("in", m)
    return m


def form_results(path):
    """What the client answered each form with (`{"action", "content"}`), in order."""
    out = []
    if not os.path.exists(path):
        return out
    for line in open(path):
        m = json.loads(line)
        if m["k"] == "in" and str(m["m"].get("id", "")).startswith("elicit-") and "method" not in m["m"]:
            out.append(m["m"].get("result", m["m"].get("error")))
    return out


def main():
    n = 0
    while True:
        m = read()
        method = m.get("method")
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": m["id"], "result": {
                "protocolVersion": m["params"].get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}}, "serverInfo": {"name": "form", "version": "1"}}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": m["id"], "result": {"tools": [{
                "name": "ask_form", "description": "asks the user to fill a form",
                "inputSchema": {"type": "object", "properties": {}}}]}})
        elif method == "tools/call":
            n += 1
            ask = f"elicit-{n}"
            send({"jsonrpc": "2.0", "id": ask, "method": "elicitation/create",
                  "params": {"message": MESSAGE, "requestedSchema": SCHEMA}})
            while True:
                r = read()
                if r.get("id") == ask and "method" not in r:
                    break
            text = "form result: " + json.dumps(r.get("result", r.get("error")))
            send({"jsonrpc": "2.0", "id": m["id"], "result": {"content": [{"type": "text", "text": text}]}})
        elif "id" in m and method:
            send({"jsonrpc": "2.0", "id": m["id"], "result": {}})


if __name__ == "__main__":
    main()
