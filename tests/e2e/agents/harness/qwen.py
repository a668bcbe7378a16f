"""The real Qwen Code (`@qwen-code/qwen-code`, a node package), driven in tmux against the
AnthropicMock (`--auth-type anthropic`).

Same shape as GeminiAgent (Qwen Code is a fork of Gemini CLI). Its quirks, recorded with 0.24.4:
- `cli-entry.js` starts a child node (`cli.js`), which relaunches itself once more (a second
  `cli.js` under the first): `pid` is the innermost, the process its hooks run under and its
  `~/.qwen/sessions/<pid>.json` names (known once the input box is up).
- Without `ui.enableUserFeedback: false` a feedback dialog opens after a turn, and without
  `ui.enableFollowupSuggestions: false` every turn is followed by a "[SUGGESTION MODE]" request.
- A `qwen` on PATH (a shim in the world's bin) is what `agent-tray answering qwen --send on` runs
  to mint its controller token.
"""
import json
import os
import time

from .agents import Agent
from .world import HERE, proc_strings

QWEN_JS = os.path.join(HERE, "qwen", "node_modules", "@qwen-code", "qwen-code", "cli-entry.js")


def qwen_js():
    p = os.environ.get("QWEN_JS") or QWEN_JS
    return p if os.path.isfile(p) else None


def _children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


class QwenAgent(Agent):
    name = "qwen"
    api_key = "sk-ant-api03-mock-e2e-qwen"

    READY = r"Type your message"
    PERMISSION = r"Allow execution of"  # Enter picks "Yes, allow once"
    APPROVE_SETTLE = 0.5
    PROMPT_PAUSE = 1.0
    EXIT_COMMAND = "/quit"

    def env(self):
        e = dict(self.world.env)
        e.update({
            "ANTHROPIC_BASE_URL": self.mock.base_url,
            "ANTHROPIC_API_KEY": self.api_key,
            "ANTHROPIC_MODEL": "claude-mock-1",
        })
        return e

    def configure(self):
        """~/.qwen/settings.json: no feedback dialog, no follow-up suggestions; a `qwen` shim on
        the world's PATH."""
        d = os.path.join(self.world.home, ".qwen")
        os.makedirs(d, exist_ok=True)
        p = os.path.join(d, "settings.json")
        doc = json.load(open(p)) if os.path.exists(p) else {}
        ui = doc.setdefault("ui", {})
        ui.update({"enableUserFeedback": False, "enableFollowupSuggestions": False,
                   "autoModeAcknowledged": True})
        with open(p, "w") as f:
            json.dump(doc, f, indent=2)
        js = qwen_js()
        if js:
            shim = os.path.join(self.world.bin, "qwen")
            with open(shim, "w") as f:
                f.write(f"#!/bin/sh\nexec node {js} \"$@\"\n")
            os.chmod(shim, 0o755)
        return self

    def start(self, *extra):
        js = qwen_js()
        if not js:
            raise RuntimeError("qwen not installed: run tests/e2e/agents/install.sh")
        self._start(["node", js, "--auth-type", "anthropic", *extra])
        self.wrapper = self.pid
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            for c in _children(self.wrapper):
                if any(b"cli.js" in a for a in proc_strings(c, "cmdline")):
                    self.pid = c
                    return c
            time.sleep(0.05)
        # A version that runs in one process: the pane's own.
        return self.pid

    def wait_ready(self, timeout=60):
        got = self.wait_for(self.READY, timeout, what="qwen input box")
        self.pid = self.session_pid()
        return got

    def session_pid(self):
        """The innermost `cli.js` under the wrapper: the node that runs the session."""
        pid, found = self.wrapper, self.pid
        while True:
            kids = [c for c in _children(pid) if any(b"cli.js" in a for a in proc_strings(c, "cmdline"))]
            if not kids:
                return found
            pid = found = kids[0]

    def session_file(self):
        return os.path.join(self.world.home, ".qwen", "sessions", f"{self.pid}.json")

    def wait_turn_done(self, reply="ok", timeout=30):
        return self.wait_for(r"◆︎? " + reply, timeout, what=f"qwen reply {reply!r}")
