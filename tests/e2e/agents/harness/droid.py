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
import time

from .agents import Agent, NM
from .mock_anthropic import AnthropicMock
from .world import HERE, end_pids, proc_comm

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

    def start_as_ui(self, prompt):
        """The UI's agent process (`droid exec --input-format stream-jsonrpc`) under
        droid_rpc.py, which takes the UI's place; `pid` is that droid (the session's process)."""
        b = droid_bin()
        if not b:
            raise RuntimeError("droid not installed: run tests/e2e/agents/install.sh")
        self._asked = len(self.mock.requests)
        driver = self._start(["python3", os.path.join(os.path.dirname(__file__), "droid_rpc.py"), b, MODEL_ID, prompt])
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            for c in _children(driver):
                if proc_comm(c) == "droid":
                    self.pid = c
                    self.world.on_cleanup(lambda: end_pids([c]))
                    return c
            time.sleep(0.05)
        raise RuntimeError(f"droid_rpc.py started no droid; screen:\n{self.screen()}")


def _children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []
