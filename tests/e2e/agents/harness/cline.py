"""Cline CLI 3.0.65 driven in a private tmux server against a ChatMock (OpenAI chat completions)
on 127.0.0.1, with no login: `cline auth -p openai-compatible -b <mock>/v1` writes the provider
to $HOME/.cline/data/settings/providers.json.

The tmux pane runs the platform package's Bun binary directly (the npm launcher is a Node script
that only spawns it), so the pane's process is Cline itself. The interactive CLI runs its
sessions, and our hooks, in a background hub (`cline --cline-hub-daemon`) that it starts on first
use, detached; until one runs, a CLI runs its session in its own process (and starts the hub
for the next ones). The hub carries the world's marker in its environment, so the world's
cleanup ends it by its pid like every other process of the test.
"""
import json
import os
import subprocess

from .agents import Agent
from .world import HERE

CLINE = os.path.join(HERE, "cline", "node_modules")
# Start-up notices that open a dialog over the prompt (and take the first keys) until shown.
NOTICES = ["cline-cli-cline-pass-intro", "cline-cli-desktop-launch", "cline-cli-zen"]


def cline_bin():
    b = os.environ.get("CLINE_BIN") or os.path.join(CLINE, "@cline", "cli-linux-x64", "bin", "cline")
    return b if os.access(b, os.X_OK) else None


class ClineAgent(Agent):
    """`cline -i` (the interactive CLI, auto-approve on by default) on the mock."""
    name = "cline"

    READY = r"Ask anything|What can I do for you"
    PROMPT_PAUSE = 0.5
    WORKING_TIMEOUT = 40
    EXIT_COMMAND = "/exit"

    @property
    def cline_dir(self):
        return os.path.join(self.world.home, ".cline")

    @property
    def hooks_dir(self):
        return os.path.join(self.cline_dir, "hooks")

    def env(self):
        e = dict(self.world.env)
        e.update({"CLINE_NO_AUTO_UPDATE": "1"})
        return e

    def configure(self):
        b = cline_bin()
        if not b:
            raise RuntimeError("cline binary not found: run tests/e2e/agents/install.sh")
        subprocess.run([b, "auth", "-p", "openai-compatible", "-k", "sk-mock", "-m", "mock-model",
                        "-b", f"{self.mock.base_url}/v1"], env=self.env(), cwd=self.cwd, check=True,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=60)
        settings = os.path.join(self.cline_dir, "data", "settings")
        os.makedirs(settings, exist_ok=True)
        with open(os.path.join(settings, "cli-notices.json"), "w") as f:
            json.dump({"shown": {n: True for n in NOTICES}}, f)
        return self

    def start(self, *extra):
        b = cline_bin()
        if not b:
            raise RuntimeError("cline binary not found: run tests/e2e/agents/install.sh")
        return self._start([b, *(extra or ("-i",))])

    def wait_ready(self, timeout=40):
        return self.wait_for(self.READY, timeout, what="cline prompt ready")


    def hub_pid(self):
        """The pid in the hub's discovery record, once a hub runs for this HOME (else None)."""
        p = os.path.join(self.cline_dir, "data", "locks", "hub", "production.json")
        try:
            with open(p) as f:
                return json.load(f).get("pid")
        except (OSError, ValueError):
            return None


class AnotherClineAgent(ClineAgent):
    """A second `cline` beside the first, in a tmux server of its own."""
    name = "cline-2"
