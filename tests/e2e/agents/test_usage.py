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
