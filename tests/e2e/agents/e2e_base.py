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
from harness.tray import Tray, Timeline, TrayError, tray_bin, compact  # noqa: E402
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

    def _failed(self):
        res = getattr(getattr(self, "_outcome", None), "result", None)
        if res is None:
            return False
        return any(t is self for t, _ in list(res.failures) + list(res.errors))

    def _cleanup(self):
        if os.environ.get("AGENT_E2E_KEEP") == "failed" and self._failed():
            self.world.keep = True
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


def collapse(states):
    out = []
    for s in states:
        if not out or out[-1] != s:
            out.append(s)
    return out


def is_subsequence(seq, path):
    it = iter(path)
    return all(any(x == y for y in it) for x in seq)


class ScenarioTest(E2ETest):
    """Agent Tray scenarios: the agent in tmux, `agent-tray daemon` running, `list --json` polled."""
    needs_tray = True

    def since(self):
        return time.monotonic()

    def rel(self, t):
        return f"{t - self.tl.t0:.1f}s"

    def setup_claude(self, hooks=True, daemon=True):
        self.agent = self.claude()
        if hooks:
            self.tray.install("--claude")
            self.assert_claude_hooks_installed()
        if daemon:
            self.tray.start_daemon()
        self.tl = self.timeline()
        return self.agent

    def setup_codex(self, hooks=True, daemon=True, app_server=True):
        self.agent = self.codex(daemon=app_server)
        if hooks:
            self.tray.install("--codex", "--trust")
            self.assert_codex_hooks_installed()
        if daemon:
            self.tray.start_daemon()
        self.tl = self.timeline()
        return self.agent

    def assert_claude_hooks_installed(self):
        import json
        p = os.path.join(self.world.claude_config_dir, "settings.json")
        err = "no hooks object"
        try:
            hooks = json.load(open(p)).get("hooks", {})
        except (OSError, ValueError) as e:
            hooks, err = None, e
        if hooks is None:
            self.fail(f"`agent-tray install --claude` left no readable {p}: {err}")
        missing = [e for e in ("SessionStart", "UserPromptSubmit", "PermissionRequest", "Stop", "SessionEnd")
                   if self.tray.bin not in json.dumps(hooks.get(e, []))]
        self.assertFalse(missing, f"`agent-tray install --claude` did not register {self.tray.bin} for {missing} in {p}")

    def assert_codex_hooks_installed(self):
        import json
        hp = os.path.join(self.world.codex_home, "hooks.json")
        cp = os.path.join(self.world.codex_home, "config.toml")
        err = "no hooks object"
        try:
            hooks = json.load(open(hp)).get("hooks", {})
        except (OSError, ValueError) as e:
            hooks, err = None, e
        if hooks is None:
            self.fail(f"`agent-tray install --codex --trust` left no readable {hp}: {err}")
        missing = [e for e in ("SessionStart", "UserPromptSubmit", "PermissionRequest", "Stop", "Interrupt", "SessionEnd")
                   if self.tray.bin not in json.dumps(hooks.get(e, []))]
        self.assertFalse(missing, f"`agent-tray install --codex` did not register {self.tray.bin} for {missing} in {hp}")
        cfg = open(cp).read()
        self.assertIn("[model_providers.mock]", cfg, f"`agent-tray install --codex` lost the user's provider in {cp}")
        self.assertIn("hooks.state", cfg, f"`agent-tray install --codex --trust` wrote no trust entries in {cp}")

    # -- assertions on the timeline ------------------------------------------
    def wait_state(self, state, timeout, since=None, what=None):
        return self.tl.wait_state(self.agent.name, self.agent.cwd, state, timeout, since=since, what=what)

    def the_session(self):
        t, sessions, err = self.tl.latest()
        m = self.tl.matching(sessions, self.agent.name, self.agent.cwd)
        return m[0] if len(m) == 1 else None

    def assert_added_by(self, session, state, event, source):
        """The engine's own log says `session` was first listed in `state` by `event` from
        `source`. For a first state the agent's files may replace within a poll (Claude's
        sessions file says idle some 0.1 s after SessionStart), so `list --json` can miss it."""
        sid = session.get("session_id")
        log = self.tray.daemon_log(tail=10**7)
        added = [l for l in log.splitlines() if "session_added" in l and f"session_id={sid}" in l]
        want = f"state={state} event={event} source={source}"
        self.assertTrue(added and want in added[0],
                        f"expected the engine to list {self.agent.name} session {sid} first as {want}; "
                        f"its log says: {added or 'nothing about it'}\n" + self.tray.daemon_log())

    def assert_within(self, t_state, t_screen, limit, state, screen_what):
        d = t_state - t_screen
        self.assertLessEqual(
            d, limit + POLL,
            f"expected {self.agent.name} session in {state} within {limit}s of the {screen_what} appearing on screen "
            f"(+{POLL}s poll slack); first seen {d:.2f}s after (screen at {self.rel(t_screen)}, state at {self.rel(t_state)})\n"
            + self.tl.describe(self.agent.name, self.agent.cwd))

    def assert_pid_is_agent(self):
        # Called right after a state was seen, so exactly one session must match: none (or two)
        # is a failure, never a silent pass.
        t, sessions, err = self.tl.latest()
        m = self.tl.matching(sessions, self.agent.name, self.agent.cwd)
        self.assertEqual(len(m), 1,
                         f"expected exactly one {self.agent.name} session in {self.agent.cwd} to check "
                         f"its pid; list --json showed {sessions} (error: {err})\n"
                         + self.tl.describe(self.agent.name, self.agent.cwd))
        s = m[0]
        self.assertEqual(s.get("pid"), self.agent.pid,
                         f"expected the session's pid to be the {self.agent.name} process the user sees "
                         f"(pid {self.agent.pid}); list --json showed {s}")

    def assert_killed_mid_turn_ends(self, agent, working_because):
        """Starts `agent`, gives it a long turn, sees `working` (`working_because` says from what),
        then kills it with -9 and expects `ended` within one pid-watcher tick."""
        agent.start()
        agent.wait_ready()
        t = self.since()
        agent.prompt("SLEEP 60")
        agent.wait_working()
        self.wait_state("working", 5, since=t, what=f"working mid-turn ({working_because})")
        return self.assert_ended_after_kill()

    def assert_ended_after_kill(self):
        """kill -9 the agent mid-turn; the session must be `ended` within one pid-watcher tick.

        The pid watcher only ends a pid it once saw alive (behaviour.md), and it ticks every 10 s:
        so the session is first kept listed for PID_TICK_ALLOWANCE - 4.5 s = 10.5 s (a whole tick
        while the process lived), then killed."""
        hist = self.tl.history(self.agent.name, self.agent.cwd)
        first = min((h[0][0] for h in hist.values() if h), default=self.since())
        wait_until = first + 10.5
        while self.since() < wait_until:
            if not self.agent.alive():
                self.fail(f"{self.agent.name} died on its own before the kill; screen:\n{self.agent.screen()}")
            time.sleep(0.2)
        t_kill = self.since()
        self.agent.kill9()
        t, s = self.wait_state("ended", PID_TICK_ALLOWANCE, since=t_kill,
                               what=f"ended after kill -9 of pid {self.agent.pid} at {self.rel(t_kill)} "
                                    f"(one pid-watcher tick: 10s, allowed {PID_TICK_ALLOWANCE:.0f}s; "
                                    f"the session had been listed since {self.rel(first)})")
        return t - t_kill

    def assert_single_session(self):
        """Never two sessions listed at once for this agent+cwd, and one session id over the whole run."""
        ids = set()
        for t, sessions, _ in self.tl.snapshots():
            m = self.tl.matching(sessions, self.agent.name, self.agent.cwd)
            ids.update(s.get("session_id") for s in m)
            self.assertLessEqual(len(m), 1, f"expected one {self.agent.name} session for cwd {self.agent.cwd}; at {self.rel(t)} "
                                 f"`list --json` showed {len(m)}:\n{compact(m)}\n" + self.tl.describe(self.agent.name, self.agent.cwd))
        self.assertEqual(len(ids), 1, f"expected exactly one {self.agent.name} session id over the run, saw {sorted(map(str, ids))}\n"
                         + self.tl.describe(self.agent.name, self.agent.cwd))

    def assert_no_flicker(self, allowed_path, required):
        """The collapsed sequence of states must follow allowed_path in order (each real transition
        once, none repeated or reversed) and include every state in `required`."""
        hist = self.tl.history(self.agent.name, self.agent.cwd)
        for sid, h in hist.items():
            seq = [st for _, st in h]
            self.assertTrue(is_subsequence(seq, allowed_path),
                            f"flicker: {self.agent.name} session {sid} went {' -> '.join(seq)}; "
                            f"allowed order {' -> '.join(allowed_path)} (each transition once)\n"
                            + self.tl.describe(self.agent.name, self.agent.cwd))
            missing = [r for r in required if r not in seq]
            self.assertFalse(missing, f"{self.agent.name} session {sid} never showed {missing}; went {' -> '.join(seq)}")
