"""Shared setUp/tearDown for the end-to-end tests: one private World per test,
mocks started on demand, every process killed at the end (pass or fail)."""
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness.world import World  # noqa: E402
from harness.mock_anthropic import AnthropicMock  # noqa: E402
from harness.mock_openai import OpenAIMock  # noqa: E402
from harness.agents import ClaudeAgent, CodexAgent, claude_bin, codex_bin  # noqa: E402
from harness.tray import Tray, Timeline, TrayError, tray_bin  # noqa: E402
from harness.tmux import ScreenTimeout  # noqa: E402

# Poll interval of `list --json`, and the slack it adds to "within N s" checks.
POLL = 0.15
# One pid-watcher tick is 10 s (behaviour.md); the tests allow 15 s.
PID_TICK_ALLOWANCE = 15.0


class E2ETest(unittest.TestCase):
    needs_tray = False

    def setUp(self):
        self.t_start = time.monotonic()
        name = self.id().split(".")[-1].replace("test_", "")
        self.world = World(name)
        self.addCleanup(self._cleanup)
        if self.needs_tray:
            self.tray = Tray(self.world)
            try:
                self.tray.check_binary()
            except TrayError as e:
                self.fail(str(e))

    def _cleanup(self):
        errors = self.world.cleanup()
        if errors:
            sys.stderr.write(f"[cleanup {self.id()}] {errors}\n")
        if self.world.keep:
            sys.stderr.write(f"[kept] {self.world.root}\n")

    # -- agents ------------------------------------------------------------
    def claude(self):
        if not claude_bin():
            self.fail("claude binary not installed: run tests/e2e/agents/install.sh")
        mock = AnthropicMock(self.world.path("logs", "anthropic-requests.jsonl")).start()
        self.world.on_cleanup(mock.stop)
        return ClaudeAgent(self.world, mock).configure()

    def codex(self, daemon=True):
        if not codex_bin():
            self.fail("codex binary not installed: run tests/e2e/agents/install.sh")
        mock = OpenAIMock(self.world.path("logs", "openai-requests.jsonl")).start()
        self.world.on_cleanup(mock.stop)
        return CodexAgent(self.world, mock, daemon=daemon).configure()

    def timeline(self):
        return Timeline(self.tray, interval=POLL).start()
