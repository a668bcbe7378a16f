"""Records what the real Claude Code hands a status-line command on stdin, into
tests/fixtures/claude/real-<version>/status-line-*.json.

    python3 tests/e2e/agents/record_status_line.py [--model MODEL] [--oauth]   # after install.sh

A private world; `statusLine` in its settings.json is a tiny shell script that copies each stdin
it gets to a numbered file; the mock sends the `anthropic-ratelimit-unified-*` headers a plan
login gets. One plain turn (the mock reports 100 input and 10 output tokens), then the last
input seen is kept. `--model` starts Claude on that model (`claude-sonnet-4-5[1m]`: a 1M-context
variant); `--oauth` logs in with a (fake) `CLAUDE_CODE_OAUTH_TOKEN` instead of an API key.
Paths are rewritten to /home/dev/...; nothing else is changed.
"""
import argparse
import glob
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))

from harness.world import World  # noqa: E402
from harness.mock_anthropic import AnthropicMock  # noqa: E402
from harness.agents import ClaudeAgent, claude_bin  # noqa: E402
from record_fixtures import scrub  # noqa: E402


def rate_limit_headers(now):
    """The unified rate-limit headers of a plan login (names from the claude binary)."""
    return {
        "anthropic-ratelimit-unified-status": "allowed",
        "anthropic-ratelimit-unified-5h-status": "allowed",
        "anthropic-ratelimit-unified-5h-utilization": "0.42",
        "anthropic-ratelimit-unified-5h-reset": str(now + 95 * 60),
        "anthropic-ratelimit-unified-7d-status": "allowed",
        "anthropic-ratelimit-unified-7d-utilization": "0.12",
        "anthropic-ratelimit-unified-7d-reset": str(now + 3 * 86400),
        "anthropic-ratelimit-unified-representative-claim": "five_hour",
        "anthropic-ratelimit-unified-reset": str(now + 95 * 60),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model")
    ap.add_argument("--oauth", action="store_true")
    ap.add_argument("--name", default="status-line")
    args = ap.parse_args()
    w = World("rec-status")
    try:
        mock = AnthropicMock(w.path("logs", "anthropic.jsonl")).start()
        w.on_cleanup(mock.stop)
        mock.stream_headers = rate_limit_headers(int(time.time()))
        a = ClaudeAgent(w, mock)
        if args.oauth:
            env = a.tmux.env
            env.pop("ANTHROPIC_API_KEY", None)
            env["CLAUDE_CODE_OAUTH_TOKEN"] = "sk-ant-oat01-mock-e2e-0123456789"
        a.configure()
        dump = w.path("statusline")
        os.makedirs(dump, exist_ok=True)
        script = os.path.join(w.bin, "dump-status-line")
        with open(script, "w") as f:
            f.write(f'#!/bin/sh\nn=$(date +%s%N)\ncat > "{dump}/$n.json"\necho "MY-STATUS-LINE"\n')
        os.chmod(script, 0o755)
        settings = os.path.join(w.claude_config_dir, "settings.json")
        with open(settings, "w") as f:
            json.dump({"statusLine": {"type": "command", "command": script}}, f, indent=2)
        extra = ["--model", args.model] if args.model else []
        a.start(*extra)
        # A status line takes the place of the "? for shortcuts" hint.
        a.wait_for(r"MY-STATUS-LINE", 30, what="claude's prompt with the status line")
        version = os.popen(f"{claude_bin()} --version").read().split()[0]
        a.prompt("hello")
        a.wait_turn_done("ok")
        time.sleep(3)  # the status line is redrawn after the turn (debounced)
        files = sorted(glob.glob(os.path.join(dump, "*.json")))
        print(f"{len(files)} status-line inputs; screen:\n{a.screen()}")
        if not files:
            sys.exit("no status-line input recorded")
        out = os.path.join(REPO, "tests", "fixtures", "claude", f"real-{version}")
        os.makedirs(out, exist_ok=True)
        first = json.load(open(files[0]))
        last = json.load(open(files[-1]))
        docs = [(f"{args.name}-after-turn.json", last)]
        if args.name == "status-line":  # before any turn: no usage yet
            docs.insert(0, (f"{args.name}-first.json", first))
        for name, doc in docs:
            path = os.path.join(out, name)
            with open(path, "w") as f:
                f.write(scrub(w, json.dumps(doc, indent=2)) + "\n")
            print(f"wrote {os.path.relpath(path, REPO)}")
        reqs = [f"{r['method']} {r['path']}" for r in mock.requests]
        print(f"mock requests: {reqs}")
    finally:
        w.cleanup()


if __name__ == "__main__":
    main()
