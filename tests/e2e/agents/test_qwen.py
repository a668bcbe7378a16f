"""Qwen Code, proven with its real binary (`@qwen-code/qwen-code` 0.24.4) in tmux against the
Anthropic mock (`--auth-type anthropic`): with the hooks `agent-tray install --qwen` writes, and
with none (its live-session file `~/.qwen/sessions/<pid>.json` alone)."""
import json
import os
import time

from e2e_base import ScenarioTest
from harness.mock_anthropic import AnthropicMock
from harness.qwen import QwenAgent, qwen_js

# Longer than the 5 s every other hook may take: a permission hook held to that would be killed
# before this, and its request could no longer be answered.
PAST_A_SHORT_TIMEOUT = 6.5


class QwenSessions(ScenarioTest):
    def setup_qwen(self, hooks=True, answering=True):
        if not qwen_js():
            self.fail("qwen not installed: run tests/e2e/agents/install.sh")
        mock = AnthropicMock(self.world.path("logs", "anthropic-requests.jsonl")).start()
        self.world.on_cleanup(mock.stop)
        self.agent = QwenAgent(self.world, mock).configure()
        if hooks:
            self.tray.install("--qwen")
            self.assert_qwen_hooks_installed()
        if answering:
            self.tray.run("answering", "qwen", "on")
        self.tray.start_daemon()
        self.tl = self.timeline()
        return self.agent

    def assert_qwen_hooks_installed(self):
        p = os.path.join(self.world.home, ".qwen", "settings.json")
        doc = json.load(open(p))
        self.assertFalse(doc["ui"]["enableUserFeedback"], f"`install --qwen` lost the user's settings in {p}")
        timeouts = {}
        for event, groups in doc.get("hooks", {}).items():
            for g in groups:
                for h in g.get("hooks", []):
                    if self.tray.bin in h.get("command", ""):
                        timeouts[event] = h.get("timeout")
        for event in ("SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "Stop", "SessionEnd"):
            self.assertIn(event, timeouts, f"`install --qwen` did not register {self.tray.bin} for {event} in {p}")
        # Qwen reads a timeout of 1000 or more as milliseconds (and older versions read every one so).
        self.assertEqual(timeouts.pop("PermissionRequest"), 600_000, "the permission hook may wait 600 s")
        self.assertEqual(set(timeouts.values()), {5_000}, f"every other hook 5 s: {timeouts}")

    def pending(self):
        return json.loads(self.tray.run("pending", "--json").stdout)

    def wait_request(self, since_id=None, timeout=20):
        """Qwen's open request as `pending` lists it (another than `since_id`), once the session
        shows it waits for permission, with no dialog of Qwen's own on screen."""
        t = self.since()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            mine = [r for r in self.pending() if r.get("agent") == "qwen" and r["id"] != since_id]
            if mine:
                break
            time.sleep(0.05)
        else:
            self.fail(f"no new qwen request in `pending` within {timeout}s; screen:\n{self.agent.screen()}")
        self.assertEqual(len(mine), 1, f"one request open at a time: {mine}")
        self.assertEqual(mine[0]["tool"], "run_shell_command", mine[0])
        self.wait_state("waiting_for_permission", 5, since=t, what="waiting for permission while the request is open")
        self.assertNotRegex(self.agent.screen(), self.agent.PERMISSION,
                            "Qwen opens its own dialog only once our hook has answered (or given up)")
        return mine[0]

    def made(self, name):
        return os.path.exists(os.path.join(self.agent.cwd, name))

    def wait_made(self, name, timeout=10):
        deadline = time.monotonic() + timeout
        while not self.made(name):
            if time.monotonic() > deadline:
                self.fail(f"{name} not made within {timeout}s; screen:\n{self.agent.screen()}")
            time.sleep(0.05)

    def test_a_turn_then_two_requests_in_one_turn_allowed_and_denied_from_the_cli_then_kill_9(self):
        """Hooks installed, answering on: starting → working → idle with the context Qwen's Stop
        reports. Then one turn asks twice: the first request, answered by `agent-tray allow` after
        longer than a short hook timeout, runs its command (the file is made, the session works
        again); the second is a request of its own (the first's id no longer answers anything),
        answered by `agent-tray deny` (its file is not made, the model is told why). kill -9 of
        Qwen's node → ended. One row throughout, though its hooks and its file both tell of it."""
        a = self.setup_qwen()
        t0 = self.since()
        a.start()
        a.wait_ready()
        _, s = self.wait_state("starting", 15, since=t0, what="listed once Qwen started (SessionStart)")
        self.assert_pid_is_agent()
        record = json.load(open(a.session_file()))
        self.assertEqual(s["session_id"], record["sessionId"], "the hooks and the session file name one session")

        t = self.since()
        a.prompt("SLEEP 2 hello")
        self.wait_state("working", 5, since=t, what="working after the prompt (UserPromptSubmit)")
        a.wait_turn_done("ok")
        _, s = self.wait_state("idle", 10, since=t, what="idle after the turn (Stop)")
        self.assertEqual((s.get("context_tokens"), s.get("context_window")), (100, 200_000),
                         f"the context Qwen's Stop reports (input_tokens, context_limit): {s}")

        a.prompt("TOOL touch made-by-tool THEN SLEEP 2 TOOL touch denied-file")
        first = self.wait_request()
        self.assertIn("touch made-by-tool", first["command"])
        self.assertFalse(first["accepts"]["allow_for_session"], first)
        time.sleep(PAST_A_SHORT_TIMEOUT)
        self.assertEqual([r["id"] for r in self.pending()], [first["id"]], "still waiting: Qwen did not kill our hook")
        t = self.since()
        self.tray.run("allow", first["id"])
        self.wait_state("working", 5, since=t, what="working once allowed (the tool runs)")
        self.wait_made("made-by-tool")  # the allowed tool ran

        second = self.wait_request(since_id=first["id"])
        self.assertIn("touch denied-file", second["command"])
        late = self.tray.run("allow", first["id"], check=False)
        self.assertNotEqual(late.returncode, 0, "the first request is answered: its id allows nothing now")
        self.assertEqual([r["id"] for r in self.pending()], [second["id"]], "the second is still open")
        t = self.since()
        self.tray.run("deny", second["id"], "--message", "not here")
        a.wait_turn_done("done")
        self.wait_state("idle", 15, since=t, what="idle after the turn")
        self.assertFalse(self.made("denied-file"), "a denied tool never runs")
        self.assertIn("not here", json.dumps(a.mock.requests), "the model was told the message")
        self.assertEqual(self.pending(), [])

        self.assert_ended_after_kill()
        self.assert_single_session()

    def test_engine_killed_mid_wait_qwen_asks_in_its_own_terminal(self):
        """Answering on, our hook holding a request (Qwen shows no dialog meanwhile): the engine
        is killed. The hook gives up at once, Qwen opens its own dialog, nothing was allowed, and
        the terminal's answer runs the tool."""
        a = self.setup_qwen()
        a.start()
        a.wait_ready()
        a.prompt("TOOL touch made-by-tool")
        self.wait_request()
        t_kill = time.monotonic()
        self.tray.stop_daemon(kill=True)
        shown = a.wait_permission(timeout=15)
        print(f"\n  engine killed -> Qwen's own dialog: {shown - t_kill:.2f}s")
        self.assertLess(shown - t_kill, 10.0, "the dialog came long before the hook's 600 s timeout")
        self.assertFalse(self.made("made-by-tool"), "no implicit allow when the engine dies")
        a.approve()
        self.wait_made("made-by-tool")  # the terminal answered as if we were never there

    def test_listed_from_its_session_file_alone_and_ended_when_it_quits(self):
        """No hooks: the session is listed from `~/.qwen/sessions/<pid>.json` (its id, its
        node's pid, its folder), and its removal at /quit ends it."""
        a = self.setup_qwen(hooks=False, answering=False)
        t0 = self.since()
        a.start()
        a.wait_ready()
        _, s = self.wait_state(("idle", "starting", "working"), 15, since=t0, what="listed from its session file")
        record = json.load(open(a.session_file()))
        self.assertEqual(s["session_id"], record["sessionId"])
        self.assert_pid_is_agent()
        t = self.since()
        a.exit()
        self.wait_state("ended", 10, since=t, what="ended once /quit removed its session file")
        self.assert_single_session()
