"""Records fresh fixtures from the installed real agents into tests/fixtures/<agent>/real-<version>/.

    python3 tests/e2e/agents/record_fixtures.py [claude] [codex]     # after install.sh

Each run: a private world, the recording hook registered for every event (and trusted for Codex),
one scripted session against the mock (a plain turn, a command that needs approval, the answer,
the exit). Paths are rewritten to /home/dev/...; nothing else is changed. Codex runs in its default
mode (the managed app-server), and what the server says on its control socket is recorded too.
"""
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))

from harness.world import World  # noqa: E402
from harness.mock_anthropic import AnthropicMock  # noqa: E402
from harness.mock_openai import OpenAIMock  # noqa: E402
from harness.agents import ClaudeAgent, CodexAgent  # noqa: E402
from harness.recorder import Recorder, install_claude_recording_hooks, install_codex_recording_hooks  # noqa: E402
from harness.app_server import AppServerClient  # noqa: E402


def scrub(world, text):
    for real, fake in ((world.proj, "/home/dev/proj"), (world.codex_home, "/home/dev/.codex"),
                       (world.claude_config_dir, "/home/dev/.claude"), (world.home, "/home/dev"),
                       (world.root, "/home/dev/world")):
        text = text.replace(real, fake)
    # Claude's project folder name is the cwd with '/' and '.' as '-'.
    text = re.sub(r"-var-tmp-agent-tray-e2e-[A-Za-z0-9_-]+?-proj", "-home-dev-proj", text)
    return text


def write_jsonl(world, path, rows):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        for row in rows:
            f.write(scrub(world, json.dumps(row)) + "\n")
    print(f"wrote {os.path.relpath(path, REPO)} ({len(rows)} lines)")


def hook_rows(rec, notify_key=None):
    rows, notes = [], []
    for r in rec.records():
        anc = r["ancestry"]
        parent = anc[0][1] if anc else None
        grand = anc[1][1] if len(anc) > 1 else None
        if r["label"] == "NOTIFY":
            notes.append({"notify_parent_comm": parent, "argv": ["arg1"] + r["argv"][1:]})
        else:
            rows.append({"hook_parent_comm": parent, "hook_grandparent_comm": grand, "payload": r["payload"]})
    return rows, notes


def record_claude():
    w = World("rec-claude")
    try:
        mock = AnthropicMock(w.path("logs", "anthropic.jsonl")).start()
        w.on_cleanup(mock.stop)
        a = ClaudeAgent(w, mock).configure()
        rec = Recorder(w)
        install_claude_recording_hooks(w, rec)
        a.start()
        a.wait_ready()
        from harness.agents import claude_bin
        version = os.popen(f"{claude_bin()} --version").read().split()[0]
        out = os.path.join(REPO, "tests", "fixtures", "claude", f"real-{version}")
        idle = a.wait_sessions_status("idle")
        a.prompt("SLEEP 1 TOOL touch made-by-tool")
        a.wait_permission()
        waiting = a.wait_sessions_status("waiting")
        time.sleep(7)  # the permission_prompt Notification comes ~6 s after the dialog
        a.approve()
        a.wait_turn_done("done")
        after = a.wait_sessions_status("idle")
        a.exit()
        time.sleep(1)
        rows, _ = hook_rows(rec)
        write_jsonl(w, os.path.join(out, "hooks.jsonl"), rows)
        for name, doc in (("sessions-idle.json", idle), ("sessions-waiting.json", waiting), ("sessions-after-turn.json", after)):
            with open(os.path.join(out, name), "w") as f:
                f.write(scrub(w, json.dumps(doc, indent=2)) + "\n")
            print(f"wrote {os.path.relpath(os.path.join(out, name), REPO)}")
    finally:
        w.cleanup()


def record_codex():
    w = World("rec-codex")
    try:
        mock = OpenAIMock(w.path("logs", "openai.jsonl")).start()
        w.on_cleanup(mock.stop)
        a = CodexAgent(w, mock, daemon=True).configure()
        rec = Recorder(w)
        install_codex_recording_hooks(w, rec)
        from harness.agents import codex_bin
        version = os.popen(f"{codex_bin()} --version").read().split()[-1]
        out = os.path.join(REPO, "tests", "fixtures", "codex", f"real-{version}")
        a.start()
        a.wait_ready()
        c = AppServerClient(w.codex_home)
        c.initialize()
        t0 = time.monotonic()
        msgs = []

        def pump(secs):
            end = time.monotonic() + secs
            while time.monotonic() < end:
                m = c.recv(0.1)
                if m is not None:
                    msgs.append({"t": round(time.monotonic() - t0, 2), "msg": m})

        pump(1)
        a.prompt("hello")
        a.wait_turn_done("ok")
        pump(1)
        tid = next(m["msg"]["params"]["threadId"] for m in msgs
                   if m["msg"].get("method") == "thread/status/changed"
                   and m["msg"]["params"]["status"].get("type") == "active")
        c.request("thread/resume", {"threadId": tid, "excludeTurns": True})
        pump(1)
        a.prompt("SLEEP 1 TOOL touch x_file")
        a.wait_permission()
        pump(1.5)
        a.escape()
        a.wait_interrupted()
        pump(1.5)
        a.prompt("hello again")
        a.wait_turn_done("ok")
        pump(2)
        a.exit()
        pump(1)
        c.close()
        for m in msgs:  # the resume reply repeats the whole thread: keep its shape, not its bulk
            r = m["msg"].get("result")
            if isinstance(r, dict) and isinstance(r.get("thread"), dict):
                r["thread"] = {k: v for k, v in r["thread"].items() if k in ("id", "cwd", "status", "ephemeral", "path")}
        write_jsonl(w, os.path.join(out, "app-server-messages.jsonl"), msgs)
        rows, notes = hook_rows(rec)
        write_jsonl(w, os.path.join(out, "hooks.jsonl"), rows)
        write_jsonl(w, os.path.join(out, "notify-argv.jsonl"), notes)
    finally:
        w.cleanup()


QWEN_EVENTS = ["SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "PermissionDenied",
               "PostToolUse", "PostToolUseFailure", "PostToolBatch", "Notification", "Stop", "StopFailure",
               "SubagentStart", "SubagentStop", "PreCompact", "SessionEnd"]


def record_qwen():
    """Qwen Code in tmux against the Anthropic mock, the recorder registered for every event that
    says something of a session (not MessageDisplay: one call per streamed batch). Also keeps its
    live-session file `~/.qwen/sessions/<pid>.json` and the screens seen."""
    from harness.qwen import QwenAgent, qwen_js
    w = World("rec-qwen")
    try:
        mock = AnthropicMock(w.path("logs", "anthropic.jsonl")).start()
        w.on_cleanup(mock.stop)
        a = QwenAgent(w, mock).configure()
        rec = Recorder(w)
        p = os.path.join(w.home, ".qwen", "settings.json")
        doc = json.load(open(p))
        hooks = doc.setdefault("hooks", {})
        for e in QWEN_EVENTS:
            entry = {"type": "command", "command": f"{rec.script} {e}"}
            hooks.setdefault(e, []).append({"hooks": [entry]})
        with open(p, "w") as f:
            json.dump(doc, f, indent=2)
        pkg = json.load(open(os.path.join(os.path.dirname(qwen_js()), "package.json")))
        out = os.path.join(REPO, "tests", "fixtures", "qwen", f"real-{pkg['version']}")
        os.makedirs(out, exist_ok=True)
        screens = []
        a.start()
        a.wait_ready()
        a.prompt("hello")
        a.wait_turn_done("ok")
        a.prompt("SLEEP 1 TOOL touch made-by-tool")
        a.wait_permission()
        screens.append(("permission dialog", a.screen()))
        a.approve()
        a.wait_turn_done("done")
        screens.append(("turn done", a.screen()))
        live = json.load(open(a.session_file()))
        a.exit()
        time.sleep(1)
        rows, _ = hook_rows(rec)
        write_jsonl(w, os.path.join(out, "hooks.jsonl"), rows)
        with open(os.path.join(out, "session-file.json"), "w") as f:
            f.write(scrub(w, json.dumps(live, indent=2)) + "\n")
        print(f"wrote {os.path.relpath(os.path.join(out, 'session-file.json'), REPO)}")
        if os.environ.get("AGENT_E2E_DEBUG"):
            for what, text in screens:
                sys.stderr.write(f"--- {what}\n{text}\n")
    finally:
        w.cleanup()


if __name__ == "__main__":
    which = sys.argv[1:] or ["claude", "codex"]
    if "qwen" in which:
        record_qwen()
    if "codex" in which:
        record_codex()
    if "claude" in which:
        record_claude()
