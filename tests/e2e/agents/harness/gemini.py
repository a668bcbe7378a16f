"""The real Gemini CLI (`@google/gemini-cli`, a node bundle), driven in tmux against GeminiMock.

Same shape as ClaudeAgent/CodexAgent (see agents.py). Gemini's own quirks, recorded with 0.61.0:
- `gemini.js` relaunches itself: the pane runs an outer node wrapper (it ignores SIGINT/TERM/HUP
  and relays the exit code) and the inner node that runs the session and spawns the hooks.
  `pid` is the inner one: the process a session belongs to, and the one kill9() kills.
- Text typed and Enter sent together read as a paste and the Enter is lost: a pause between.
- The confirmation ("Allow execution of …?") takes Enter for "1. Allow once".
"""
import json
import os
import time

from .agents import Agent
from .world import HERE, proc_strings

GEMINI_JS = os.path.join(HERE, "gemini", "node_modules", "@google", "gemini-cli", "bundle", "gemini.js")


def gemini_js():
    p = os.environ.get("GEMINI_JS") or GEMINI_JS
    return p if os.path.isfile(p) else None


def _children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


class GeminiAgent(Agent):
    name = "gemini"

    READY = r"Type your message"
    PERMISSION = r"Allow execution"  # Enter picks "1. Allow once"
    PROMPT_PAUSE = 1.0
    EXIT_COMMAND = "/quit"

    def env(self):
        e = dict(self.world.env)
        e.update({
            "GEMINI_API_KEY": "dummy-e2e-key",
            "GOOGLE_GEMINI_BASE_URL": self.mock.base_url,
            "GEMINI_TELEMETRY_ENABLED": "false",
            "NO_BROWSER": "true",
        })
        return e

    def configure(self):
        """~/.gemini/settings.json: API-key auth on the mock, no first-run dialogs, no updates."""
        d = os.path.join(self.world.home, ".gemini")
        os.makedirs(d, exist_ok=True)
        p = os.path.join(d, "settings.json")
        doc = json.load(open(p)) if os.path.exists(p) else {}
        doc.update({
            "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "ide": {"enabled": False, "hasSeenNudge": True},
            "ui": {"theme": "Default", "hideTips": True},
            "model": {"name": "gemini-2.5-flash"},
        })
        with open(p, "w") as f:
            json.dump(doc, f, indent=2)
        return self

    def start(self, *extra):
        js = gemini_js()
        if not js:
            raise RuntimeError("gemini not installed: run tests/e2e/agents/install.sh")
        self._start(["node", js, *extra])
        self.wrapper = self.pid
        # The inner node (the session's process) appears a moment after the wrapper.
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            for c in _children(self.wrapper):
                if any(b"gemini.js" in a for a in proc_strings(c, "cmdline")):
                    self.pid = c
                    return c
            time.sleep(0.05)
        raise RuntimeError(f"gemini's inner process never appeared; screen:\n{self.screen()}")

    def wait_ready(self, timeout=60):
        return self.wait_for(self.READY, timeout, what="gemini input box")

    def wait_working(self, timeout=20):
        return self.wait_for(r"esc to cancel", timeout, what="gemini turn running")

    def wait_turn_done(self, reply="done", timeout=30):
        return self.wait_for(r"✦ " + reply, timeout, what=f"gemini reply {reply!r}")
