"""OpenCode 1.18.33 (issue 11): our plugin installed by `agent-tray install --opencode` forwards
the bus events to `agent-tray hook --agent opencode`; states via `list --json`, kill -9 mid-turn,
events journaled while no app runs replayed, and other `opencode` commands (which load plugins
too) never make a session."""
import json
import os
import subprocess

from e2e_base import ScenarioTest
from harness.agents_more import OpenCodeAgent, opencode_bin
from harness.mock_chat import ChatMock


class OpenCodeMixin:
    def opencode(self):
        if not opencode_bin():
            self.fail("opencode binary not installed: run tests/e2e/agents/install.sh")
        mock = ChatMock(self.world.path("logs", "chat-requests.jsonl")).start()
        self.world.on_cleanup(mock.stop)
        agent = OpenCodeAgent(self.world, mock).configure()
        self.addCleanup(assert_opencode_installed_nothing, self, agent)
        return agent


def assert_opencode_installed_nothing(test, agent):
    """The world's OpenCode found its config folder's install there and fetched nothing: a stale
    seed (another OpenCode version) would cost every test a download."""
    ran = agent.installed_anything()
    if ran:
        test.fail(f"OpenCode ran npm in its config folder ({ran} exists): the seed from "
                  "install.sh does not match this OpenCode")


class OpenCodePlugin(ScenarioTest, OpenCodeMixin):
    def setup_opencode(self, daemon=True):
        self.agent = self.opencode()
        self.tray.install("--opencode")
        p = os.path.join(self.agent.config_dir, "plugins", "agent-tray.js")
        text = open(p).read()
        self.assertIn(json.dumps(self.tray.bin), text, f"`agent-tray install --opencode` did not name {self.tray.bin} in {p}")
        if daemon:
            self.tray.start_daemon()
        self.tl = self.timeline()
        return self.agent

    def test_opencode_full_flow(self):
        """prompt -> working (session.created, busy); dialog -> waiting_for_permission within 1 s
        (permission.asked); Enter -> working (permission.replied) then idle (session.idle);
        /exit -> ended (nothing fires: the pid watcher)."""
        a = self.setup_opencode()
        a.start()
        a.wait_ready()
        t_prompt = self.since()
        a.prompt("SLEEP 2 TOOL touch made-by-tool && sleep 2")
        self.wait_state("working", 30, since=t_prompt, what="working after the first prompt (session.created, session.status busy)")
        t_dialog = a.wait_permission()
        t_wfp, _ = self.wait_state("waiting_for_permission", 10, since=t_prompt,
                                   what="waiting_for_permission once the dialog opened (permission.asked)")
        self.assert_within(t_wfp, t_dialog, 1.0, "waiting_for_permission", "permission dialog")
        t_ok = self.since()
        a.approve()
        self.wait_state("working", 5, since=t_ok, what="working again after the approval (permission.replied)")
        self.wait_state("idle", 20, since=t_ok, what="idle after the turn ended (session.idle)")
        self.assertTrue(os.path.exists(os.path.join(a.cwd, "made-by-tool")), "the approved command did not run")
        self.assert_pid_is_agent()
        self.assert_single_session()
        t_exit = self.since()
        a.exit()
        self.wait_state("ended", 15, since=t_exit, what="ended after /exit (no event: the pid watcher)")

    def test_opencode_kill9_mid_turn(self):
        self.assert_killed_mid_turn_ends(self.setup_opencode(), "plugin events")

    def test_opencode_journal_replay_after_daemon_start(self):
        a = self.setup_opencode(daemon=False)
        a.start()
        a.wait_ready()
        a.prompt("TOOL touch made-by-tool")
        a.wait_permission()
        t = self.since()
        self.tray.start_daemon()
        self.wait_state("waiting_for_permission", 10, since=t,
                        what="waiting_for_permission after the daemon started (events sent while it was down)")
        a.approve()
        self.wait_state("idle", 20, since=self.since(), what="idle after the turn, once the daemon runs")

    def test_opencode_other_commands_make_no_session_and_uninstall_removes_the_plugin(self):
        """`opencode session list` loads our plugin under its own short-lived pid while the TUI
        runs: only the TUI's session is ever listed, with the TUI's pid (the positive control:
        the plugin does forward, from the process that has the session). Then uninstall removes
        exactly our plugin."""
        a = self.setup_opencode()
        a.start()
        a.wait_ready()
        r = subprocess.run([opencode_bin(), "session", "list"], env=a.env(), cwd=a.cwd,
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=90)
        self.assertEqual(r.returncode, 0, "`opencode session list` failed")
        t = self.since()
        a.prompt("hello")
        self.wait_state("idle", 40, since=t, what="idle after a plain prompt (session.created, busy, idle)")
        self.assert_pid_is_agent()
        for _, sessions, _ in self.tl.snapshots():
            mine = [s for s in sessions or [] if s.get("agent") == "opencode"]
            self.assertLessEqual(len(mine), 1, f"more than one opencode session: {mine}")
            for s in mine:
                self.assertEqual(s.get("pid"), a.pid, f"a session bound to another opencode process: {s}")
        plugin = os.path.join(a.config_dir, "plugins", "agent-tray.js")
        self.tray.run("uninstall", "--opencode")
        self.assertFalse(os.path.exists(plugin), "uninstall left our plugin")
        left = [n for n in os.listdir(os.path.dirname(plugin)) if n.endswith((".js", ".ts"))]
        self.assertEqual(left, [], "a backup OpenCode would load as a plugin")
