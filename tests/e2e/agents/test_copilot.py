"""GitHub Copilot CLI 1.0.102 (issue 11): the harness alone (a recording hook sees the events the
fixtures show), then Agent Tray's hooks installed by `agent-tray install --copilot`, states via
`list --json`, kill -9 mid-turn, and events journaled while no app runs replayed."""
import json
import os
import time

from e2e_base import E2ETest, ScenarioTest, PID_TICK_ALLOWANCE
from harness.agents_more import CopilotAgent, copilot_bin
from harness.mock_chat import ChatMock
from harness.recorder import Recorder

# The camelCase events our hook file registers (and the recording hook's too).
COPILOT_EVENTS = ["sessionStart", "sessionEnd", "userPromptSubmitted", "preToolUse", "postToolUse",
                  "postToolUseFailure", "permissionRequest", "notification", "agentStop",
                  "subagentStart", "subagentStop", "preCompact", "errorOccurred"]


def subseq(needle, hay):
    it = iter(hay)
    return all(any(x == y for y in it) for x in needle)


class CopilotMixin:
    def copilot(self):
        if not copilot_bin():
            self.fail("copilot binary not installed: run tests/e2e/agents/install.sh")
        mock = ChatMock(self.world.path("logs", "chat-requests.jsonl")).start()
        self.world.on_cleanup(mock.stop)
        return CopilotAgent(self.world, mock).configure()


def install_copilot_recording_hooks(agent, recorder):
    d = os.path.join(agent.copilot_home, "hooks")
    os.makedirs(d, exist_ok=True)
    hooks = {e: [{"type": "command", "bash": f"{recorder.script} {e}", "timeoutSec": 10}] for e in COPILOT_EVENTS}
    with open(os.path.join(d, "record.json"), "w") as f:
        json.dump({"version": 1, "hooks": hooks}, f, indent=2)


class HarnessCopilot(E2ETest, CopilotMixin):
    def test_copilot_permission_flow_with_recording_hook(self):
        rec = Recorder(self.world)
        a = self.copilot()
        install_copilot_recording_hooks(a, rec)
        a.start()
        self.assertEqual(os.path.basename(os.readlink(f"/proc/{a.pid}/exe")), "copilot")
        a.wait_ready()
        a.prompt("TOOL touch made-by-tool")
        a.wait_permission()
        a.approve()
        a.wait_turn_done("done")
        self.assertTrue(os.path.exists(os.path.join(a.cwd, "made-by-tool")), "the approved command did not run")
        a.exit()
        deadline = time.monotonic() + 5
        labels = lambda: [r["label"] for r in rec.records()]
        while "sessionEnd" not in labels() and time.monotonic() < deadline:
            time.sleep(0.1)
        ev = labels()
        want = ["userPromptSubmitted", "preToolUse", "permissionRequest", "postToolUse", "agentStop", "sessionEnd"]
        self.assertTrue(subseq(want, ev), f"hook events {ev} lack {want} in order")
        self.assertIn("sessionStart", ev)
        recs = rec.records()
        # The hook is the CLI's own child (no shell between), and the CLI's comm is its main
        # thread's name, "MainThread", not "copilot": a walk by comm name never finds it.
        self.assertEqual(recs[0]["ancestry"][0], (a.pid, "MainThread"), recs[0]["ancestry"])
