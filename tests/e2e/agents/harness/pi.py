"""The real Pi coding agent (`@mariozechner/pi-coding-agent`, a node package), driven in tmux
against the AnthropicMock through a provider of Pi's own (`~/.pi/agent/models.json`).

Its quirks, recorded with 0.73.1:
- It runs in one node process, which titles itself `pi` (`comm` and the command line): the pane's
  process is the session's.
- At start it tries to download fd and ripgrep; offline that fails, says so, and Pi runs on.
- Its shell tool is `bash` (the mock's `shell_tool`), and it runs tools without asking.
- It lists the extensions it loaded under `[Extensions]` on its start screen.
"""
import json
import os

from .agents import Agent
from .mock_anthropic import AnthropicMock
from .world import HERE

PI_JS = os.path.join(HERE, "pi", "node_modules", "@mariozechner", "pi-coding-agent", "dist", "cli.js")


def pi_js():
    p = os.environ.get("PI_JS") or PI_JS
    return p if os.path.isfile(p) else None


class PiMock(AnthropicMock):
    """The Anthropic mock with Pi's tool name: "TOOL <cmd>" gets a `bash` tool call."""
    shell_tool = "bash"
    model = "claude-mock"


class PiAgent(Agent):
    name = "pi"
    MODEL = "claude-mock"

    # The footer shows the model once the prompt box is up.
    READY = r"claude-mock"
    PROMPT_PAUSE = 0.5

    @property
    def agent_dir(self):
        return os.path.join(self.world.home, ".pi", "agent")

    def configure(self):
        """~/.pi/agent/models.json: one provider, `mock`, on the mock's port; a `pi` shim on
        the world's PATH (what `doctor` looks for)."""
        os.makedirs(self.agent_dir, exist_ok=True)
        doc = {"providers": {"mock": {"baseUrl": self.mock.base_url, "api": "anthropic-messages",
                                      "apiKey": "x", "models": [{"id": self.MODEL}]}}}
        with open(os.path.join(self.agent_dir, "models.json"), "w") as f:
            json.dump(doc, f, indent=2)
        js = pi_js()
        if js:
            shim = os.path.join(self.world.bin, "pi")
            with open(shim, "w") as f:
                f.write(f"#!/bin/sh\nexec node {js} \"$@\"\n")
            os.chmod(shim, 0o755)
        return self

    def start(self, *extra):
        js = pi_js()
        if not js:
            raise RuntimeError("pi not installed: run tests/e2e/agents/install.sh")
        return self._start(["node", js, "--provider", "mock", "--model", self.MODEL, *extra])

    def wait_ready(self, timeout=60):
        return self.wait_for(self.READY, timeout, what="pi prompt box")

    def exit(self, timeout=20):
        """Ctrl+D on the empty prompt box quits Pi."""
        self.tmux.send_keys("C-d")
        if not self.wait_gone(timeout):
            raise RuntimeError(f"pi still running {timeout}s after Ctrl+D; screen:\n{self.screen()}")
