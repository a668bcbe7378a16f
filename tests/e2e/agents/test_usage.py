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
            if row.get("compacted_at"):
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
