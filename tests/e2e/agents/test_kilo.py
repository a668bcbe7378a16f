"""Kilo Code CLI 7.7.7 (a fork of OpenCode): our plugin installed by `agent-tray install --kilo`
into `$XDG_CONFIG_HOME/kilo/plugins` forwards Kilo's bus events to `agent-tray hook --agent kilo`.
One Kilo process, offline against the chat mock, walks the whole path: listed once it works, a
bash call's dialog is `waiting_for_permission`, denied from the tray (the tool's file is not made),
asked again and allowed from the tray (the file is made), idle; a prompt sent and a stop through
the plugin's way in (Kilo's own server: `prompt_async`, `abort`); a long turn killed with -9 ends
(nothing fires: the pid watcher); uninstall removes exactly our plugin, beside one of the
user's that both leave byte for byte."""
import json
import os
import time

from e2e_base import ScenarioTest
from harness.agents_more import KiloAgent, kilo_bin
from harness.mock_chat import ChatMock
from test_talking_back import chat_user_texts

TOOL_PROMPT = "TOOL touch made-by-tool"
# A plugin of the user's own, in the same folder: install and uninstall never touch it.
THEIRS = "// the user's own plugin\nexport const Theirs = async () => ({})\n"


class KiloPlugin(ScenarioTest):
    def setUp(self):
        super().setUp()
        if not kilo_bin():
            self.fail("kilo binary not installed: run tests/e2e/agents/install.sh")

    def pending(self):
        return [r for r in json.loads(self.tray.run("pending", "--json").stdout) if r.get("agent") == "kilo"]

    def wait_request(self, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            mine = self.pending()
            if mine:
                return mine[0]
            time.sleep(0.05)
        self.fail(f"no kilo request in `pending` within {timeout}s; screen:\n{self.agent.screen()}")

    def made(self):
        return os.path.exists(os.path.join(self.agent.cwd, "made-by-tool"))

    def ask(self):
        t = self.since()
        self.agent.prompt(TOOL_PROMPT)
        t_dialog = self.agent.wait_permission()
        t_wfp, _ = self.wait_state("waiting_for_permission", 10, since=t,
                                   what="waiting_for_permission once Kilo's dialog opened (permission.asked)")
        self.assert_within(t_wfp, t_dialog, 1.0, "waiting_for_permission", "permission dialog")
        request = self.wait_request()
        self.assertEqual(request["tool"], "bash")
        self.assertIn("touch made-by-tool", request["command"])
        return request

    def test_engine_killed_mid_wait_kilos_own_dialog_still_answers(self):
        """Our plugin's hook holding a request, the engine killed: nothing is allowed, and Kilo's
        own dialog (on screen all along) answers as if we were never there."""
        mock = ChatMock(self.world.path("logs", "chat-requests.jsonl")).start()
        self.world.on_cleanup(mock.stop)
        a = self.agent = KiloAgent(self.world, mock).configure()
        self.tray.install("--kilo")
        self.tray.start_daemon()
        self.tl = self.timeline()
        a.start()
        a.wait_ready()
        self.ask()
        self.tray.stop_daemon(kill=True)
        time.sleep(0.5)
        self.assertFalse(self.made(), "no implicit allow when the engine dies")
        a.approve()
        a.wait_for(a.PERMISSION, 10, absent=True, interval=0.05, what="the dialog answered in the terminal")
        deadline = time.monotonic() + 20
        while not self.made() and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertTrue(self.made(), "the terminal's own dialog answered as if we were never there")

    def test_kilo_turns_answered_from_the_tray_then_kill9_ends_and_uninstall_leaves_theirs(self):
        mock = ChatMock(self.world.path("logs", "chat-requests.jsonl")).start()
        self.world.on_cleanup(mock.stop)
        a = self.agent = KiloAgent(self.world, mock).configure()
        plugins = os.path.join(a.config_dir, "plugins")
        os.makedirs(plugins, exist_ok=True)
        theirs = os.path.join(plugins, "theirs.js")
        with open(theirs, "w") as f:
            f.write(THEIRS)
        ours = os.path.join(plugins, "agent-tray.js")
        dry = self.tray.run("install", "--kilo", "--dry-run")
        self.assertFalse(os.path.exists(ours), f"--dry-run wrote our plugin: {dry.stdout}")
        self.tray.install("--kilo")
        self.assertIn(json.dumps(self.tray.bin), open(ours).read(), f"install --kilo did not name {self.tray.bin} in {ours}")
        self.tray.start_daemon()
        self.tl = self.timeline()
        a.start()
        a.wait_ready()

        # Denied from the tray: Kilo's dialog closes, the tool never runs, the turn ends.
        request = self.ask()
        self.assertFalse(self.made(), "nothing ran before the answer")
        t = self.since()
        self.tray.run("deny", request["session_id"])
        a.wait_for(a.PERMISSION, 10, absent=True, interval=0.05, what="Kilo's dialog closed by the tray's deny")
        self.wait_state("idle", 30, since=t, what="idle after the tray's deny (session.idle)")
        self.assertFalse(self.made(), "a denied tool never runs")

        # Allowed from the tray: the tool runs (its file is on disk), then idle.
        request = self.ask()
        t = self.since()
        r = self.tray.run("allow", request["id"])
        self.assertIn("allowed", r.stdout)
        a.wait_for(a.PERMISSION, 10, absent=True, interval=0.05, what="Kilo's dialog closed by the tray's allow")
        self.wait_state("working", 10, since=t, what="working after the tray's allow (permission.replied)")
        self.wait_state("idle", 30, since=t, what="idle after the allowed tool ran (session.idle)")
        self.assertTrue(self.made(), "the allowed tool ran: its file is on disk")
        self.assertEqual(self.pending(), [], "the answered requests are gone")
        self.assert_pid_is_agent()

        # Talking back through the plugin's relay: a prompt reaches the model, a stop ends the turn.
        sid = request["session_id"]
        t = self.since()
        r = self.tray.run("send", sid, "SLEEP 60", "--json", timeout=30)
        self.assertEqual(json.loads(r.stdout)["route"], "plugin", r.stdout)
        self.wait_state("working", 10, since=t, what="working after `agent-tray send`")
        # Kilo appends its `<environment_details>` block to every user message, typed or sent.
        def sent():
            return [u for u in chat_user_texts(mock) if u.split("\n", 1)[0] == "SLEEP 60"]
        deadline = time.monotonic() + 20
        while not sent() and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertTrue(sent(), f"the sent prompt reached the model: {chat_user_texts(mock)}")
        t = self.since()
        r = self.tray.run("stop", sid, "--json", timeout=30)
        self.assertEqual(json.loads(r.stdout)["route"], "plugin", r.stdout)
        self.wait_state("idle", 5, since=t, what="idle after `agent-tray stop` (abort)")

        # A long turn killed with -9: nothing fires, the pid watcher ends the session.
        t = self.since()
        a.prompt("SLEEP 60")
        a.wait_working()
        self.wait_state("working", 10, since=t, what="working mid-turn (session.status busy)")
        self.assert_ended_after_kill()
        self.assert_single_session()

        self.tray.run("uninstall", "--kilo")
        self.assertFalse(os.path.exists(ours), "uninstall left our plugin")
        self.assertEqual(open(theirs).read(), THEIRS, "the user's plugin changed")
        left = sorted(n for n in os.listdir(plugins) if n.endswith((".js", ".ts")))
        self.assertEqual(left, ["theirs.js"], "a backup Kilo would load as a plugin, or theirs removed")
