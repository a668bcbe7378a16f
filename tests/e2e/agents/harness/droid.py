"""The real Factory Droid (npm `droid`, its native binary @factory/cli-<os>-<arch>), run as
`droid exec` in tmux against the AnthropicMock through a custom model.

Why `droid exec` and not the interactive UI: offline, the UI stops at its login screen ("Please
login with your Factory account to continue.", seen with 0.215.0); `droid exec` needs no login
with a custom model, and runs the same hooks (no `UserPromptSubmit` though). Its quirks:
- The custom model lives in `~/.factory/settings.json` (`customModels`, id `custom:Mock-0`);
  `config.json`'s `custom_models` is copied there once and not read again.
- Its shell tool is `Execute` (with a summary and a risk level); a file write is "medium" risk,
  refused unless `--auto medium`.
- The binary is the pane's process (no node in between): `pid` is the session's process.
"""
import glob
import json
import os

from .agents import Agent, NM
from .mock_anthropic import AnthropicMock
from .world import HERE

MODEL_ID = "custom:Mock-0"


def droid_bin():
    if os.environ.get("DROID_BIN"):
        return os.environ["DROID_BIN"]
    for c in sorted(glob.glob(os.path.join(HERE, "droid", "node_modules", "@factory", "cli-linux-*", "bin", "droid"))):
        if os.access(c, os.X_OK):
            return c
    return None


class DroidMock(AnthropicMock):
    """The Anthropic mock, asking for commands with Droid's `Execute` tool."""
    name = "droid-anthropic-mock"
    shell_tool = "Execute"

    def shell_input(self, command):
        return {"summary": "Run the mock command", "command": command,
                "riskLevelReason": "It writes a scratch file in the project.", "riskLevel": "medium"}


class DroidAgent(Agent):
    name = "droid"

    def configure(self):
        """~/.factory/settings.json: the mock as a custom model (the user's other keys kept)."""
        d = os.path.join(self.world.home, ".factory")
        os.makedirs(d, exist_ok=True)
        p = os.path.join(d, "settings.json")
        doc = json.load(open(p)) if os.path.exists(p) else {}
        doc["customModels"] = [{
            "model": self.mock.model, "id": MODEL_ID, "index": 0, "baseUrl": self.mock.base_url,
            "apiKey": "sk-mock-e2e-droid", "displayName": "Mock", "maxOutputTokens": 1024,
            "noImageSupport": False, "provider": "anthropic"}]
        with open(p, "w") as f:
            json.dump(doc, f, indent=2)
        return self

    def start(self, prompt, auto=None):
        """`droid exec` with one prompt; returns its pid. It ends by itself when the turn is over."""
        b = droid_bin()
        if not b:
            raise RuntimeError("droid not installed: run tests/e2e/agents/install.sh")
        self._asked = len(self.mock.requests)
        argv = [b, "exec", "--model", MODEL_ID]
        if auto:
            argv += ["--auto", auto]
        return self._start(argv + [prompt])

    def wait_ready(self):
        """`droid exec` takes its prompt on the command line: ready once it asked the mock."""
        self.wait_working()
