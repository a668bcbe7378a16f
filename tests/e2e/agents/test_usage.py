"""Issue 12: a Claude and a Codex turn each record tokens. The mocks report known usage per
request (input 100, output 10; no cache); the history store's `history --json` must show the
session with tokens, read from the transcript's `usage` blocks and from the rollout's totals."""
import json
import time

from e2e_base import ScenarioTest


class Usage(ScenarioTest):
    def _tokens(self, agent, timeout=20):
        """The agent's session's `tokens` in `history --json`, once any are recorded."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            rows = json.loads(self.tray.run("history", "--json").stdout or "[]")
            mine = [r for r in rows if r.get("agent") == agent]
            last = mine
            if mine and mine[0].get("tokens", {}).get("output", 0) > 0:
                return mine[0]
            time.sleep(0.3)
        self.fail(f"no tokens recorded for {agent} within {timeout}s; history: {last}\n"
                  f"{self.tray.daemon_log()}")

    def test_claude_turn_records_tokens(self):
        a = self.setup_claude(hooks=True)
        a.start()
        a.wait_ready()
        a.prompt("hello")
        a.wait_turn_done("ok")
        row = self._tokens("claude")
        tokens = row["tokens"]
        # Every main-thread message the mock answered said input 100 (uncached): counted once
        # per message however many lines Claude wrote for it.
        self.assertGreaterEqual(tokens["input"], 100, tokens)
        self.assertEqual(tokens["input"] % 100, 0, tokens)
        self.assertGreaterEqual(tokens["output"], 1, tokens)
        self.assertEqual((tokens["cache_read"], tokens["cache_write"]), (0, 0), tokens)
        self.assertIn("cost_estimate_usd", row)

    def test_codex_turn_records_tokens(self):
        a = self.setup_codex(hooks=True, app_server=False)
        a.start()
        a.wait_ready()
        a.prompt("hello")
        a.wait_turn_done("ok")
        row = self._tokens("codex")
        tokens = row["tokens"]
        # Each response: 100 in (none cached), 10 out; the thread total counts each once.
        self.assertGreaterEqual(tokens["output"], 10, tokens)
        self.assertEqual(tokens["output"] * 10, tokens["input"], tokens)
        self.assertEqual(tokens["cache_read"], 0, tokens)
        self.assertIn("cost_estimate_usd", row)


class Context(ScenarioTest):
    """Issue 29: the context figure each agent writes after a turn reaches `list --json`, and moves
    with the next turn. The mocks report input 100 and output 10, then a bigger input."""

    def _context(self, agent, want_tokens, timeout=20):
        """The agent's session in `list --json` once its `context_tokens` is `want_tokens`."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            sessions, _, _ = self.tray.list()
            mine = [s for s in sessions or [] if s.get("agent") == agent]
            last = mine
            if mine and mine[0].get("context_tokens") == want_tokens:
                return mine[0]
            time.sleep(0.3)
        self.fail(f"{agent}'s context_tokens never became {want_tokens} within {timeout}s; "
                  f"list: {[(s.get('session_id'), s.get('context_tokens'), s.get('context_window')) for s in last or []]}\n"
                  f"{self.tray.daemon_log()}")

    def test_claude_context_moves_after_a_turn_and_no_window_is_invented(self):
        a = self.setup_claude(hooks=True)
        a.start()
        a.wait_ready()
        a.prompt("hello")
        a.wait_turn_done("ok")
        first = self._context("claude", 110)
        self.assertIsNone(first["context_window"], "Claude's files name no window")
        a.mock.input_tokens = 150_000
        a.prompt("again")
        a.wait_turn_done("ok")
        second = self._context("claude", 150_010)
        self.assertIsNone(second["context_window"])
        table = self.tray.run("list").stdout
        self.assertIn("150k in context", table)
        # /compact: Claude's PreCompact and PostCompact hooks note it; the old figure is dropped
        # until the next turn says the new one.
        a.prompt("/compact")
        deadline = time.monotonic() + 30
        row = second
        while time.monotonic() < deadline:
            sessions, _, _ = self.tray.list()
            row = next((s for s in sessions or [] if s.get("agent") == "claude"), row)
            # PreCompact notes the compact first; PostCompact then drops the old figure.
            if row.get("compacted_at") and row.get("context_tokens") is None:
                break
            time.sleep(0.3)
        self.assertTrue(row.get("compacted_at"), f"no compact noted: {row}\n{a.screen()}")
        self.assertIsNone(row["context_tokens"], row)

    def test_codex_context_moves_after_a_turn_in_the_window_codex_names(self):
        a = self.setup_codex(hooks=True, app_server=False)
        a.start()
        a.wait_ready()
        a.prompt("hello")
        a.wait_turn_done("ok")
        first = self._context("codex", 110)
        window = first["context_window"]
        self.assertIsInstance(window, int, first)
        self.assertGreater(window, 1000, first)
        a.mock.input_tokens = 150_000
        a.prompt("again")
        a.wait_turn_done("ok")
        second = self._context("codex", 150_010)
        self.assertEqual(second["context_window"], window)
        table = self.tray.run("list").stdout
        self.assertIn(f"{150_010 * 100 // window}% of {window // 1000}k", table)


class PlanLimits(ScenarioTest):
    """Issue 29: the plan windows the model server reports to Codex (its rate-limit headers) reach
    `agent-tray limits --json` through Codex's own rollout, and follow the next turn's report."""

    def _limits(self, want, timeout=20):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            r = self.tray.run("limits", "--json", check=False)
            if r.returncode == 0:
                last = json.loads(r.stdout)
                if want(last):
                    return last
            else:
                last = r.stderr
            time.sleep(0.3)
        self.fail(f"limits never as expected within {timeout}s; last: {last}\n{self.tray.daemon_log()}")

    def test_codex_reports_its_windows_and_the_next_turn_moves_them(self):
        a = self.setup_codex(hooks=True, app_server=False)
        reset_5h = int(time.time()) + 95 * 60
        reset_week = int(time.time()) + 3 * 86400
        a.mock.stream_headers = {
            "x-codex-primary-used-percent": "42.5", "x-codex-primary-window-minutes": "300",
            "x-codex-primary-reset-at": str(reset_5h),
            "x-codex-secondary-used-percent": "12", "x-codex-secondary-window-minutes": "10080",
            "x-codex-secondary-reset-at": str(reset_week),
        }
        # Before any turn: nothing reported, nothing invented.
        self.assertEqual(json.loads(self.tray.run("limits", "--json").stdout), [])
        self.assertIn("No plan limits reported", self.tray.run("limits").stdout)
        a.start()
        a.wait_ready()
        a.prompt("hello")
        a.wait_turn_done("ok")
        limits = self._limits(lambda l: len(l) == 2)
        by_window = {w["window"]: w for w in limits}
        self.assertEqual(set(by_window), {"5h", "weekly"}, limits)
        five = by_window["5h"]
        self.assertEqual(five["agent"], "codex")
        self.assertAlmostEqual(five["used_percent"], 42.5)
        self.assertEqual(five["window_minutes"], 300)
        from datetime import datetime
        resets = datetime.fromisoformat(five["resets_at"].replace("Z", "+00:00")).timestamp()
        self.assertEqual(int(resets), reset_5h)
        self.assertIsNone(five["host"])
        table = self.tray.run("limits").stdout
        self.assertIn("5h window 42% used, resets", table)
        a.mock.stream_headers = dict(a.mock.stream_headers, **{"x-codex-primary-used-percent": "93"})
        a.prompt("again")
        a.wait_turn_done("ok")
        limits = self._limits(lambda l: any(w["window"] == "5h" and w["used_percent"] == 93 for w in l))
        self.assertEqual(len(limits), 2, limits)
