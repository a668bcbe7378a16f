"""Issue 42: the status-line bridge with the real Claude Code. The user has a coloured status line
of their own; `agent-tray install --claude --status-line` puts the bridge in front of it. In the
pane the user's line still shows; the row gets the context window Claude names and the last
turn's tokens; a plan login's windows (the mock sends the `anthropic-ratelimit-unified-*`
headers) reach `agent-tray limits`; `uninstall --claude` gives `settings.json` back exactly."""
import json
import os
import time

from e2e_base import ScenarioTest


class StatusLineBridge(ScenarioTest):
    def _user_line(self):
        """The user's own status line: a script printing a coloured line (its input's size)."""
        script = os.path.join(self.world.bin, "my-status-line")
        with open(script, "w") as f:
            f.write('#!/bin/sh\ninput=$(cat)\nprintf "\\033[35mMY-OWN-LINE %s\\033[0m\\n" "${#input}"\n')
        os.chmod(script, 0o755)
        return script

    def _row(self, want, what, timeout=20):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            sessions, _, _ = self.tray.list()
            mine = [s for s in sessions or [] if s.get("agent") == "claude"]
            last = mine
            if mine and want(mine[0]):
                return mine[0]
            time.sleep(0.3)
        self.fail(f"{what} within {timeout}s; claude rows: "
                  f"{[(s.get('session_id'), s.get('context_tokens'), s.get('context_window')) for s in last or []]}\n"
                  f"{self.tray.daemon_log()}")

    def test_the_users_line_shows_the_row_gets_its_window_and_uninstall_restores_it(self):
        self.agent = a = self.claude()
        # A plan login: Claude then hands the plan's windows to the status line.
        a.tmux.env.pop("ANTHROPIC_API_KEY", None)
        a.tmux.env["CLAUDE_CODE_OAUTH_TOKEN"] = "sk-ant-oat01-mock-e2e-0123456789"
        now = int(time.time())
        a.mock.stream_headers = {
            "anthropic-ratelimit-unified-status": "allowed",
            "anthropic-ratelimit-unified-5h-utilization": "0.42",
            "anthropic-ratelimit-unified-5h-reset": str(now + 95 * 60),
            "anthropic-ratelimit-unified-7d-utilization": "0.12",
            "anthropic-ratelimit-unified-7d-reset": str(now + 3 * 86400),
        }
        settings = os.path.join(self.world.claude_config_dir, "settings.json")
        script = self._user_line()
        # Claude's own two-space JSON, with a key of the user's beside the command.
        before = json.dumps({"model": "opus", "statusLine": {"type": "command", "command": script, "padding": 0}},
                            indent=2) + "\n"
        with open(settings, "w") as f:
            f.write(before)
        self.tray.install("--claude", "--status-line")
        doc = json.load(open(settings))
        command = doc["statusLine"]["command"]
        self.assertIn("status-line --agent claude --then", command)
        self.assertIn(script, command)
        self.assertEqual(doc["statusLine"]["padding"], 0)
        doctor = self.tray.run("doctor", check=False).stdout
        self.assertIn("status-line bridge: on", doctor)
        self.tray.start_daemon()
        self.tl = self.timeline()
        a.start()
        # The user's line, printed through the bridge, is on screen (where "? for shortcuts"
        # would be without a status line).
        a.wait_for(r"MY-OWN-LINE \d+", 30, what="the user's own status line in the pane")
        a.prompt("hello")
        a.wait_turn_done("ok")
        # After the turn: the window Claude names for its model, and the turn's tokens (the mock
        # reports 100 in, 10 out).
        row = self._row(lambda s: s.get("context_window") and s.get("context_tokens") == 110,
                        "the row never got its window and tokens")
        self.assertEqual(row["context_window"], 1_000_000, row)
        self.assertIsNone(row.get("blocked_until"), row)
        table = self.tray.run("list").stdout
        self.assertIn("0% of 1.0M", table)
        self.assertNotIn("window unknown", table)
        deadline = time.monotonic() + 20
        limits = []
        while time.monotonic() < deadline:
            limits = json.loads(self.tray.run("limits", "--json").stdout)
            if len(limits) == 2:
                break
            time.sleep(0.3)
        by = {w["window"]: w for w in limits if w["agent"] == "claude"}
        self.assertEqual(set(by), {"5h", "weekly"}, limits)
        self.assertAlmostEqual(by["5h"]["used_percent"], 42)
        self.assertAlmostEqual(by["weekly"]["used_percent"], 12)
        self.assertEqual(by["5h"]["account"], "plan")
        self.assertIn("Claude plan: 5h window 42% used, resets", self.tray.run("limits").stdout)
        doctor = self.tray.run("doctor", check=False).stdout
        self.assertIn("last status line", doctor)
        self.assertIn("MY-OWN-LINE", a.screen(), "still the user's line")
        a.exit()
        self.tray.run("uninstall", "--claude")
        with open(settings) as f:
            self.assertEqual(f.read(), before, "uninstall gives the setting back byte for byte")
