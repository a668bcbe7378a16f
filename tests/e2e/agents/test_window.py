"""Issue 11: every agent in one window. The REAL desktop app (target/debug/agent-tray-desktop)
under a private Xvfb and session bus, hooks and plugin installed by `agent-tray install` in a
private world, and the REAL Gemini CLI, Copilot CLI, OpenCode, Claude Code and Codex driven in
tmux against their loopback mocks: each session shows in the window's DOM by its agent's name
and colour, goes working -> waiting_for_permission -> idle there live, and ends when its agent
is killed (-9).

The window's rows are read through WebKitWebDriver (harness/window.py) every 200 ms into a
Timeline, the same poller the other tests run on `list --json`, so "first seen in state X"
is measured the same way. Screenshots go to tests/e2e/agents/artifacts/ (AGENT_E2E_ARTIFACTS).
AGENT_E2E_WINDOW_AGENTS=gemini,codex runs a subset. The app is $AGENT_TRAY_DESKTOP_BIN, else
agent-tray-desktop beside $AGENT_TRAY_BIN (scripts/test.sh builds it before this suite).
"""
import glob
import os

from e2e_base import ScenarioTest, collapse, is_subsequence
from harness.agents import ClaudeAgent, CodexAgent, claude_bin, codex_bin
from harness.agents_more import CopilotAgent, OpenCodeAgent, copilot_bin, opencode_bin
from harness.gemini import GeminiAgent, gemini_js
from harness.mock_anthropic import AnthropicMock
from harness.mock_chat import ChatMock
from harness.mock_gemini import GeminiMock
from harness.mock_openai import OpenAIMock
from harness.tray import Timeline
from harness.window import AppWindow, WindowError, registered_agents

# agent id -> (Agent class, mock class, installed?, `install` flags, the prompt, how the
# permission wait ends). The mock holds its first reply 2 s (visibly working), then asks for a
# command that needs approval. Codex's wait ends with Esc (its approval keys change between
# versions; Esc -> Interrupt -> idle is its tested path); the others approve and finish the turn.
AGENTS = {
    "gemini": (GeminiAgent, GeminiMock, gemini_js, ["--gemini"], "SLEEP 2 TOOL touch made-by-gemini", "approve"),
    "copilot": (CopilotAgent, ChatMock, copilot_bin, ["--copilot"], "SLEEP 2 TOOL touch made-by-copilot", "approve"),
    "opencode": (OpenCodeAgent, ChatMock, opencode_bin, ["--opencode"], "SLEEP 2 TOOL touch made-by-opencode", "approve"),
    "claude": (ClaudeAgent, AnthropicMock, claude_bin, ["--claude"], "SLEEP 2 TOOL touch made-by-claude", "approve"),
    "codex": (CodexAgent, OpenAIMock, codex_bin, ["--codex", "--trust"], "SLEEP 2 TOOL touch made-by-codex", "escape"),
}
# The order a session's states may take in the window (each once), and those it must show.
ALLOWED = ["starting", "idle", "working", "waiting_for_permission", "working", "idle", "ended"]
REQUIRED = ["working", "waiting_for_permission", "idle", "ended"]
DOM_POLL = 0.2


class EveryAgentInTheWindow(ScenarioTest):
    def setUp(self):
        super().setUp()
        # The app's pid watcher ticks every 10 s in use; half a second keeps the kill short.
        self.world.env["AGENT_TRAY_PID_WATCH_INTERVAL_MS"] = "500"
        self.names = registered_agents()
        self.window = AppWindow(self.world)
        try:
            self.window.check()
        except WindowError as e:
            self.fail(str(e))

    def dom_rows(self):
        """The window's rows as `list --json`-like dicts (agent id from the badge's name)."""
        try:
            rows = self.window.rows()
        except WindowError as e:
            return None, "", str(e)
        by_name = {name: agent for agent, (name, _) in self.names.items()}
        for r in rows:
            r["agent"] = by_name.get(r.get("name"))
        return rows, "", ""

    def engine_side(self):
        """What the engine itself says beside the window's rows: its `list --json` and the app's
        log lines of state changes (a row stuck in the window and a session stuck in the engine
        are different bugs)."""
        sessions, _, err = self.tray.list()
        lines = [f"the engine's `list --json`: {err}" if sessions is None else
                 "the engine's `list --json`: " + ", ".join(
                     f"{s.get('agent')} {s.get('state')} ({s.get('session_id')})" for s in sessions)]
        logs = sorted(glob.glob(os.path.join(self.world.tray_home, "logs", "desktop.log*")))
        wanted = ("session_state", "session_added", "session_ended", "permission_request", "WARN", "ERROR")
        kept = [line.rstrip() for path in logs for line in open(path, errors="replace")
                if any(w in line for w in wanted)]
        lines.append("the app's log (state changes, warnings; last 40):\n" + "\n".join(kept[-40:]))
        return "\n".join(lines)

    def agents(self, ids):
        out = []
        for agent_id in ids:
            cls, mock_cls, installed, _, _, _ = AGENTS[agent_id]
            if not installed():
                self.fail(f"{agent_id} not installed: run tests/e2e/agents/install.sh")
            mock = mock_cls(self.world.path("logs", f"{agent_id}-requests.jsonl")).start()
            self.world.on_cleanup(mock.stop)
            cwd = self.world.path("proj", f"win-{agent_id}")
            os.makedirs(cwd, exist_ok=True)
            out.append(cls(self.world, mock, cwd=cwd).configure())
        return out

    def wait_dom(self, a, state, timeout, since, what):
        return self.tl.wait_state(a.name, a.cwd, state, timeout, since=since, what=f"in the window: {what}")

    def test_every_agent_shows_live_in_the_window_and_ends_when_killed(self):
        ids = [i for i in AGENTS if not os.environ.get("AGENT_E2E_WINDOW_AGENTS")
               or i in os.environ["AGENT_E2E_WINDOW_AGENTS"].split(",")]
        agents = self.agents(ids)
        self.tray.install(*[f for i in ids for f in AGENTS[i][3]])
        t_app = self.since()
        self.window.start()
        self.tl = Timeline(self.tray, interval=DOM_POLL, source=self.dom_rows, source_name="window's rows",
                           explain=self.engine_side).start()
        app_up = self.since() - t_app
        # All start at once (their start-ups overlap), then each is driven through a turn.
        for a in agents:
            a.start()
        for a in agents:
            a.wait_ready()
        timings = {}
        for a in agents:
            _, _, _, _, prompt, answer = AGENTS[a.name]
            t0 = self.since()
            a.prompt(prompt)
            _, row = self.wait_dom(a, "working", 40, t0, f"{a.name} working after its prompt")
            name, colour = self.names[a.name]
            self.assertEqual((row["name"], row["colour"]), (name, colour),
                             f"{a.name}'s row names it {name!r} in its colour {colour}: {row}")
            self.assertEqual(row["section"], "working", row)
            t_dialog = a.wait_permission()
            t_wfp, row = self.wait_dom(a, "waiting_for_permission", 10, t0, f"{a.name} waiting for permission")
            self.assertEqual(row["section"], "needs_you", row)
            t_answer = self.since()
            if answer == "approve":
                a.approve()
                a.wait_turn_done("done")
            else:
                a.escape()
            t_idle, row = self.wait_dom(a, "idle", 20, t_answer, f"{a.name} idle after the turn")
            self.assertEqual(row["section"], "idle", row)
            timings[a.name] = (t_wfp - t_dialog, t_idle - t0)
        self.window.screenshot("window-every-agent-idle")
        # Issue 29: each row says how full its context is where the agent wrote it (Claude's
        # transcript, Codex's rollout, Copilot's usage records: the mock's 100 in + 10 out), and
        # nothing where it did not. Claude names no window without the status-line bridge (issue
        # 42): its row says so rather than guess one.
        contexts = dict(self.window.js(
            "return [...document.querySelectorAll('.row')].map(r => [r.querySelector('.agent')?.textContent,"
            " r.querySelector('.context')?.textContent ?? null])"))
        by_name = {name: agent for agent, (name, _) in self.names.items()}
        for name, text in contexts.items():
            agent = by_name.get(name)
            if agent == "claude":
                self.assertEqual(text, "110 in context, window unknown", contexts)
            elif agent in ("codex", "copilot"):
                self.assertRegex(text or "", r"^0% of \d+k$", contexts)
            else:
                self.assertIsNone(text, f"{agent} wrote no context figure: {contexts}")
        t_kill = self.since()
        for a in agents:
            a.kill9()
        for a in agents:
            _, row = self.wait_dom(a, "ended", 10, t_kill, f"{a.name} ended after kill -9 of pid {a.pid}")
            self.assertEqual(row["section"], "ended", row)
        self.window.screenshot("window-every-agent-ended")
        for a in agents:
            hist = self.tl.history(a.name, a.cwd)
            self.assertEqual(len(hist), 1, f"one {a.name} row over the run, saw {sorted(map(str, hist))}\n"
                             + self.tl.describe(a.name, a.cwd))
            seq = collapse(st for _, st in next(iter(hist.values())))
            self.assertTrue(is_subsequence(seq, ALLOWED) and all(s in seq for s in REQUIRED),
                            f"{a.name}'s row went {' -> '.join(seq)}; expected {' -> '.join(ALLOWED)} "
                            f"with {REQUIRED}\n" + self.tl.describe(a.name, a.cwd))
        self.tl.stop()
        left = self.window.stop()
        self.assertEqual(left, [], "the app, its WebKit helpers, WebKitWebDriver, the bus and Xvfb all end by pid")
        print(f"\n  window: app up in {app_up:.1f}s; dialog->row waiting, prompt->row idle (s): "
              + ", ".join(f"{k} {w:.2f}/{i:.1f}" for k, (w, i) in timings.items()))
