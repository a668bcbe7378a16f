"""Pi 0.73.1: our extension, written by `agent-tray install --pi`, forwards Pi's events to
`agent-tray hook --agent pi`; Pi's own session file adds the model and the context. One session
from start to kill -9, as `list --json` shows it, and what install / uninstall do to the
extensions folder."""
import json
import os

from e2e_base import ScenarioTest
from harness.pi import PiAgent, PiMock, pi_js

# A user's own extension, beside ours: never touched by install or uninstall.
THEIRS = "export default function (pi) { pi.on(\"agent_end\", () => {}); }\n"


class PiExtension(ScenarioTest):
    def setup_pi(self):
        if not pi_js():
            self.fail("pi not installed: run tests/e2e/agents/install.sh")
        mock = PiMock(self.world.path("logs", "anthropic-requests.jsonl")).start()
        self.world.on_cleanup(mock.stop)
        self.agent = PiAgent(self.world, mock).configure()
        ext_dir = os.path.join(self.agent.agent_dir, "extensions")
        os.makedirs(ext_dir, exist_ok=True)
        self.theirs = os.path.join(ext_dir, "mine.js")
        with open(self.theirs, "w") as f:
            f.write(THEIRS)
        self.ours = os.path.join(ext_dir, "agent-tray.js")
        dry = self.tray.run("install", "--pi", "--dry-run")
        self.assertFalse(os.path.exists(self.ours), f"--dry-run wrote {self.ours}: {dry.stdout}")
        self.assertIn("agent-tray.js", dry.stdout, "--dry-run shows the file it would write")
        self.tray.install("--pi")
        text = open(self.ours).read()
        self.assertIn(json.dumps(self.tray.bin), text, f"`agent-tray install --pi` did not name {self.tray.bin} in {self.ours}")
        self.tray.start_daemon()
        doctor = self.tray.run("doctor", check=False)
        for said in (f"{self.ours} (ours, current)", "Pi is installed", "Pi coding agent's hook delivered a probe"):
            self.assertIn(said, doctor.stdout, f"doctor on Pi:\n{doctor.stdout}")
        self.tl = self.timeline()
        return self.agent

    def test_pi_session_from_start_through_a_tool_run_to_kill9(self):
        """start -> listed (session_start) with Pi's pid; prompt -> working (agent_start); the
        bash tool writes a file; idle (agent_end) with the model and the context from Pi's
        session file, one row; kill -9 -> ended (the pid watcher); uninstall removes only ours."""
        a = self.setup_pi()
        t0 = self.since()
        a.start()
        a.wait_ready()
        self.assertIn("agent-tray.js", a.screen(), "Pi did not list our extension among those it loaded")
        self.wait_state("starting", 15, since=t0, what="listed at start (session_start from the extension)")
        self.assert_pid_is_agent()
        t_prompt = self.since()
        a.prompt("SLEEP 2 TOOL echo pi-was-here > made-by-tool")
        self.wait_state("working", 10, since=t_prompt, what="working after the prompt (agent_start)")
        self.wait_state("idle", 30, since=t_prompt, what="idle after the run (agent_end)")
        made = os.path.join(a.cwd, "made-by-tool")
        self.assertTrue(os.path.exists(made), "Pi's bash tool did not run the command")
        self.assertEqual(open(made).read().strip(), "pi-was-here")
        # The hooks carry no context: the figure comes from the session file's last reply, so
        # seeing it on the hook's row proves both feeds fill one session.
        s = self.tl.wait(a.name, a.cwd, lambda s: s.get("context_tokens"), "with the context from Pi's session file", 10, t_prompt)[1]
        self.assertEqual(s.get("model"), "claude-mock", f"the model: {s}")
        self.assertEqual(s.get("context_tokens"), PiMock.input_tokens + 10, f"the last reply's usage: {s}")
        self.assertTrue((s.get("transcript_path") or "").endswith(".jsonl"), f"the session file: {s}")
        self.assert_pid_is_agent()
        self.assert_single_session()
        self.assert_ended_after_kill()
        self.tray.run("uninstall", "--pi")
        self.assertFalse(os.path.exists(self.ours), "uninstall left our extension")
        self.assertEqual(open(self.theirs).read(), THEIRS, "the user's own extension changed")
        left = sorted(n for n in os.listdir(os.path.dirname(self.ours)) if n.endswith((".js", ".ts")))
        self.assertEqual(left, ["mine.js"], "only the user's extension is left for Pi to load")


class PiSessionFiles(ScenarioTest):
    def test_pi_without_the_extension_is_listed_from_its_session_file(self):
        """No extension: the session appears from Pi's session file once the first reply is
        written (Pi writes the file only then), idle at the run's end, with its folder, model and
        context; no pid (nothing names Pi's process), so only the TTL would end it."""
        if not pi_js():
            self.fail("pi not installed: run tests/e2e/agents/install.sh")
        mock = PiMock(self.world.path("logs", "anthropic-requests.jsonl")).start()
        self.world.on_cleanup(mock.stop)
        self.agent = a = PiAgent(self.world, mock).configure()
        self.tray.start_daemon()
        self.tl = self.timeline()
        a.start()
        a.wait_ready()
        self.assertNotIn("agent-tray.js", a.screen(), "an extension of ours was loaded though none was installed")
        t = self.since()
        a.prompt("hello")
        _, s = self.tl.wait(a.name, a.cwd, lambda s: s.get("state") == "idle" and s.get("context_tokens"),
                            "idle, with the context, from Pi's session file", 30, t)
        self.assertEqual(s.get("model"), "claude-mock", f"the model from the session file: {s}")
        self.assertEqual(s.get("context_tokens"), PiMock.input_tokens + 10, f"the reply's usage: {s}")
        self.assertIsNone(s.get("pid"), f"a pid nobody reported: {s}")
        self.assert_single_session()
        a.exit()
