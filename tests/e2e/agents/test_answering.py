"""Issue 25: answering the real Claude Code's, Codex's, OpenCode's and GitHub Copilot CLI's
permission requests from outside their terminals.

Claude in tmux against the mock model, our hooks installed by `agent-tray install --claude`,
`agent-tray daemon` running. The mock asks for `touch made-by-tool`; every answer is proven by its
effect on disk (the file made, or not) and by what the agent does next."""
import json
import os
import time

from e2e_base import ScenarioTest
from harness.world import describe_processes
from test_copilot import CopilotMixin
from test_opencode import OpenCodeMixin

TOOL_PROMPT = "TOOL touch made-by-tool"


def prompt_to_dialog(a):
    """Starts agent `a`, prompts the mock's tool call, and approves the agent's own dialog in the
    terminal; how long the dialog took to show after the prompt."""
    a.start()
    a.wait_ready()
    t = time.monotonic()
    a.prompt(TOOL_PROMPT)
    shown = a.wait_permission()
    a.approve()
    return shown - t


def appears(path, timeout):
    """Whether `path` exists within `timeout` s: a tool's file made by an answer."""
    deadline = time.monotonic() + timeout
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.1)
    return os.path.exists(path)


class Pending:
    """`agent-tray pending --json`, read as the scripts that drive the CLI read it."""

    def pending(self):
        return json.loads(self.tray.run("pending", "--json").stdout)

    def wait_request_of(self, agent, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            mine = [r for r in self.pending() if r.get("agent") == agent]
            if mine:
                return mine[0]
            time.sleep(0.05)
        self.fail(f"no {agent} request in `pending` within {timeout}s; screen:\n{self.agent.screen()}")

    def made(self):
        return os.path.exists(os.path.join(self.agent.cwd, "made-by-tool"))

    def ask_bash(self, agent, dialog):
        """Prompts the mock's `touch made-by-tool`; its request as `pending` lists it (after the
        agent's own dialog, where it shows one while the hook waits)."""
        self.agent.prompt(TOOL_PROMPT)
        if dialog:
            self.agent.wait_permission()
        request = self.wait_request_of(agent)
        self.assertEqual(request["tool"], "bash")
        self.assertIn("touch made-by-tool", request["command"])
        return request


class ClaudeAnswering(Pending, ScenarioTest):

    def wait_request(self, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            mine = [r for r in self.pending() if r.get("cwd") and os.path.samefile(r["cwd"], self.agent.cwd)]
            if mine:
                return mine[0]
            time.sleep(0.1)
        self.fail(f"no permission request for {self.agent.cwd} in `pending` within {timeout}s; "
                  f"pending: {self.pending()}\nscreen:\n{self.agent.screen()}")

    def test_allowed_from_the_cli_the_tool_runs_and_the_turn_ends(self):
        a = self.setup_claude(hooks=True)
        a.start()
        a.wait_ready()
        a.prompt(TOOL_PROMPT)
        a.wait_permission()
        request = self.wait_request()
        self.assertEqual(request["tool"], "Bash")
        self.assertIn("touch made-by-tool", request["command"])
        self.assertFalse(self.made(), "nothing ran before the answer")
        t = self.since()
        r = self.tray.run("allow", request["id"])
        self.assertIn("allowed", r.stdout)
        a.wait_turn_done("done")
        self.assertTrue(self.made(), "the allowed tool ran: its file is on disk")
        self.wait_state("idle", 10, since=t, what="idle after the tray's allow let the tool run")
        self.assertEqual(self.pending(), [], "the answered request is gone")

    def test_denied_with_a_message_the_tool_does_not_run_and_the_agent_carries_on(self):
        a = self.setup_claude(hooks=True)
        a.start()
        a.wait_ready()
        a.prompt(TOOL_PROMPT)
        a.wait_permission()
        request = self.wait_request()
        self.tray.run("deny", request["session_id"], "--message", "not in this folder")
        # The dialog closes: the agent took the denial and carries on to the end of its turn.
        a.wait_for(a.PERMISSION, 10, absent=True, interval=0.05, what="the dialog closed by the tray's deny")
        self.wait_state("idle", 20, since=self.since(), what="idle after the denial")
        time.sleep(1)
        self.assertFalse(self.made(), "a denied tool never runs")
        self.assertIn("not in this folder", json.dumps(a.mock.requests),
                      "the model was told the user's message")

    def test_answered_in_the_terminal_the_request_is_gone_within_a_second(self):
        a = self.setup_claude(hooks=True)
        a.start()
        a.wait_ready()
        a.prompt(TOOL_PROMPT)
        a.wait_permission()
        request = self.wait_request()
        a.approve()
        t = time.monotonic()
        while self.pending() and time.monotonic() - t < 5:
            time.sleep(0.05)
        gone_after = time.monotonic() - t
        self.assertEqual(self.pending(), [], f"request {request['id']} still pending after the terminal answered")
        self.assertLess(gone_after, 1.0 + 0.2, f"the request left {gone_after:.2f}s after the terminal's answer")
        a.wait_turn_done("done")
        self.assertTrue(self.made())
        late = self.tray.run("allow", request["id"], check=False)
        self.assertNotEqual(late.returncode, 0, "a late answer is refused")
        self.assertIn("moved on", late.stderr)

    def test_engine_killed_mid_wait_the_terminal_dialog_still_answers(self):
        a = self.setup_claude(hooks=True)
        a.start()
        a.wait_ready()
        a.prompt(TOOL_PROMPT)
        a.wait_permission()
        self.wait_request()
        self.tray.stop_daemon(kill=True)
        time.sleep(0.5)
        self.assertFalse(self.made(), "no implicit allow when the engine dies")
        a.approve()
        a.wait_turn_done("done")
        self.assertTrue(self.made(), "the terminal's own dialog answered as if we were never there")


class CodexAnswering(Pending, ScenarioTest):
    """Codex hides its own prompt while the hook waits, so answering is opt-in there and short."""

    def test_opted_in_allowed_from_the_cli_the_tool_runs(self):
        self.tray.run("answering", "codex", "on")
        a = self.setup_codex(hooks=True, app_server=False)
        a.start()
        a.wait_ready()
        a.prompt("TOOL touch x_file")
        request = self.wait_request_of("codex")
        self.assertIn("touch x_file", request["command"])
        self.assertFalse(request["accepts"]["allow_for_session"], "Codex takes no updatedPermissions")
        self.tray.run("allow", request["id"])
        a.wait_turn_done("done")
        self.assertTrue(os.path.exists(os.path.join(a.cwd, "x_file")), "the allowed tool ran")
        self.assertEqual(self.pending(), [])

    def test_opted_in_denied_from_the_cli_the_tool_does_not_run(self):
        self.tray.run("answering", "codex", "on")
        a = self.setup_codex(hooks=True, app_server=False)
        a.start()
        a.wait_ready()
        a.prompt("TOOL touch x_file")
        request = self.wait_request_of("codex")
        self.tray.run("deny", request["id"], "--message", "not here")
        a.wait_turn_done("done")
        time.sleep(1)
        self.assertFalse(os.path.exists(os.path.join(a.cwd, "x_file")), "a denied tool never runs")
        self.assertIn("not here", json.dumps(a.mock.requests), "the model was told the message")

    def test_opted_in_nobody_answers_codexs_own_prompt_comes_at_the_wait_without_a_hook_failure(self):
        """The hook gives up by itself at its 4 s wait, before Codex's 5 s hook timeout: no
        decision, no "Hook failed" line, and Codex's own prompt answers."""
        self.tray.run("answering", "codex", "on")
        a = self.setup_codex(hooks=True, app_server=False)
        a.start()
        a.wait_ready()
        a.prompt("TOOL touch x_file")
        self.wait_request_of("codex")
        t = time.monotonic()
        shown = a.wait_permission(timeout=15)
        print(f"\n  Codex's own prompt {shown - t:.2f}s after the request was seen (the wait is 4s)")
        self.assertNotIn("Hook failed", a.screen(), "the hook ended before Codex's timeout")
        self.assertFalse(os.path.exists(os.path.join(a.cwd, "x_file")), "no implicit allow at the deadline")
        self.assertEqual(self.pending(), [], "the expired request is gone")
        a.approve()
        a.wait_turn_done("done")
        self.assertTrue(os.path.exists(os.path.join(a.cwd, "x_file")), "the terminal answered")

    def test_not_opted_in_the_prompt_comes_at_once_and_nothing_is_pending(self):
        a = self.setup_codex(hooks=True, app_server=False)
        a.start()
        a.wait_ready()
        a.prompt("TOOL touch x_file")
        a.wait_permission()
        self.assertEqual(self.pending(), [], "answering is off for Codex by default")
        a.approve()
        a.wait_turn_done("done")
        self.assertTrue(os.path.exists(os.path.join(a.cwd, "x_file")))


class CodexAnsweredThroughItsServer(Pending, ScenarioTest):
    """Issue 39: Codex in its default mode (the shared background server). Its approval request
    reaches the engine through the server's control socket, on by default: the TUI shows its own
    dialog at once (no hook waits, even with the hook route opted in), our request is listed
    beside it, and the first answer wins."""

    def dialog_and_request(self, opted_in=False):
        if opted_in:
            self.tray.run("answering", "codex", "on")
        a = self.setup_codex(hooks=True, app_server=True)
        a.start()
        a.wait_ready()
        # A first turn: the thread gets its rollout, and the engine's feed subscribes to it.
        a.prompt("hello")
        a.wait_turn_done("ok")
        t = self.since()
        a.prompt("TOOL touch x_file")
        shown = a.wait_permission()
        request = self.wait_request_of("codex")
        if opted_in:
            # The hook route, opted in, would hold the dialog for its 4 s wait after the hook
            # reported the wait: a default-mode TUI's hook leaves the request to the server, and
            # the dialog comes with the wait.
            t_wait, _ = self.wait_state("waiting_for_permission", 5, since=t, what="the approval wait")
            print(f"\n  Codex's dialog {shown - t_wait:+.2f}s from the wait (the hook route would hold it 4 s)")
            self.assertLess(shown - t_wait, 2.5, "the dialog was held back by a waiting hook")
        # A hook of another event may be caught in flight for a few ms; a waiting one stays 4 s.
        deadline = time.monotonic() + 1
        while hooks_waiting(self.world) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(hooks_waiting(self.world), [], "no hook holds the request back from the terminal")
        self.assertGreater(parse_time(request["answer_by"]) - parse_time(request["asked_at"]), 60,
                           "listed for the server route's wait, not a hook's seconds")
        self.assertIn("touch x_file", request["command"], request)
        self.assertFalse(request["accepts"]["allow_for_session"], "Codex's lasting grant is never offered")
        return a, request

    def made(self):
        return os.path.exists(os.path.join(self.agent.cwd, "x_file"))

    def test_allowed_from_the_cli_while_the_terminals_dialog_is_up_the_tool_runs(self):
        a, request = self.dialog_and_request(opted_in=True)
        self.wait_state("waiting_for_permission", 5, what="waiting for the approval")
        r = self.tray.run("allow", request["id"])
        self.assertIn(f"allowed {request['id']}", r.stdout)
        a.wait_turn_done("done")
        self.assertTrue(self.made(), "the allowed command ran")
        self.assertEqual(self.pending(), [])

    def test_denied_from_the_cli_the_tool_does_not_run(self):
        a, request = self.dialog_and_request()
        self.tray.run("deny", request["id"])
        a.wait_interrupted()
        time.sleep(0.5)
        self.assertFalse(self.made(), "a denied command never runs")
        self.assertEqual(self.pending(), [])

    def test_answered_in_the_terminal_first_ours_is_gone_within_a_second(self):
        a, request = self.dialog_and_request()
        t = time.monotonic()
        a.approve()
        while self.pending() and time.monotonic() - t < 5:
            time.sleep(0.05)
        self.assertEqual(self.pending(), [], f"{request['id']} still listed after the terminal answered")
        self.assertLess(time.monotonic() - t, 1.5)
        a.wait_turn_done("done")
        self.assertTrue(self.made(), "the terminal's allow ran the command")
        r = self.tray.run("deny", request["id"], check=False)
        self.assertNotEqual(r.returncode, 0, "a request the terminal answered takes no second answer")

    def test_engine_killed_mid_wait_the_terminal_still_answers(self):
        a, _ = self.dialog_and_request()
        self.tray.stop_daemon(kill=True)
        time.sleep(0.5)
        self.assertFalse(self.made(), "nothing allowed when the engine dies")
        a.approve()
        a.wait_turn_done("done")
        self.assertTrue(self.made(), "the terminal's own answer went through")


def parse_time(text):
    """Seconds since the epoch of an RFC 3339 time as `pending --json` writes it."""
    from datetime import datetime
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def hooks_waiting(world):
    """Pids of `agent-tray hook` processes of this world still running."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
            env = open(f"/proc/{pid}/environ", "rb").read()
        except OSError:
            continue
        if b"hook" in argv[1:3] and world.tray_home.encode() in env:
            out.append(int(pid))
    return out


class ClaudeAnsweredFromTheApp(ScenarioTest):
    """The REAL desktop app (under a private Xvfb and session bus, as test_window runs it) hosting
    the engine, the real Claude in tmux: the window's Allow lets the tool run; then, with dunst
    on the bus, the alert's Allow (chosen in dunst's own menu, so dunst sends ActionInvoked) does
    the same."""

    def setUp(self):
        super().setUp()
        from harness.window import AppWindow, WindowError
        self.window = AppWindow(self.world)
        try:
            self.window.check()
        except WindowError as e:
            self.fail(str(e))

    def test_the_alerts_allow_and_the_windows_allow_each_let_the_tool_run(self):
        from harness.window import WindowError
        a = self.claude()
        self.agent = a
        self.tray.install("--claude")
        self.window.start()
        try:
            self.window.start_dunst(self.world)
        except WindowError as e:
            self.fail(str(e))
        self.window.pick_action("Allow")
        self.assertEqual(self.window.wait_alerts_displayed(0, 10), "0", "dunst answers on the bus")
        a.start()
        a.wait_ready()
        # The alert first (one permission alert per session a minute: the cooldown).
        a.prompt("TOOL touch made-by-alert")
        a.wait_permission()
        self.assertEqual(self.window.wait_alerts_displayed(1, 15), "1", "the permission alert is on screen")
        made = os.path.join(a.cwd, "made-by-alert")
        try:
            picks = self.window.pick_until(lambda: os.path.exists(made))
        except WindowError as e:
            self.fail(f"the alert's Allow did not run the tool: {e}")
        print(f"\n  the alert was picked {picks} time(s)")
        a.wait_turn_done("done")
        self.assertEqual(self.window.wait_alerts_displayed(0, 5), "0", "the answered alert is gone")

        a.prompt("TOOL touch made-by-window")
        a.wait_permission()
        self.window.wait_js("return !!document.querySelector('.row [data-action=\"answer:allow\"]')", True, 15,
                            "the request's Allow in the window")
        self.window.screenshot("answer-claude-in-window")
        self.window.js("document.querySelector('.row [data-action=\"answer:allow\"]').click()")
        # The screen still shows the first turn's "done": wait for the tool's effect itself.
        self.assertTrue(appears(os.path.join(a.cwd, "made-by-window"), 15), "the window's Allow ran the tool")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            stats = json.loads(self.tray.run("stats", "--json").stdout)
            if stats["answers"]["from_tray"] >= 2:
                break
            time.sleep(0.2)
        self.assertEqual(stats["answers"]["by_source"], {"window": 1, "alert": 1}, stats["answers"])
        self.assertEqual(self.window.stop(), [], "everything the app started ends by pid")


class NoAppNoDelay(ScenarioTest):
    """With no app or daemon running, the answer path costs nothing: the agent's own prompt
    appears as fast as it does without our hooks (both measured in this run)."""

    def _prompt_to_dialog(self, hooks):
        a = self.claude()
        self.agent = a
        if hooks:
            self.tray.install("--claude")
        took = prompt_to_dialog(a)
        a.wait_turn_done("done")
        a.exit()
        a.wait_gone()
        a.tmux.kill_server()  # the next run starts its own, under the same name
        return took

    def test_claude_with_hooks_and_no_app_shows_its_dialog_as_soon_as_without_them(self):
        baseline = self._prompt_to_dialog(hooks=False)
        with_hooks = self._prompt_to_dialog(hooks=True)
        print(f"\n  prompt -> dialog: {baseline:.2f}s without our hooks, {with_hooks:.2f}s with them and no app")
        # The hook returns in about a millisecond with no engine; a second is far beyond noise.
        self.assertLess(with_hooks - baseline, 1.0,
                        f"our hooks with no app delayed the dialog: {with_hooks:.2f}s vs {baseline:.2f}s")


class CodexEngineKilledMidWait(ScenarioTest):
    def test_the_engine_killed_mid_wait_brings_codexs_own_prompt_at_once(self):
        """Codex hides its prompt while our hook waits: when the engine dies, the hook must give
        up at once (not at its deadline), so the prompt appears, and the terminal answers."""
        self.tray.run("answering", "codex", "on")
        a = self.setup_codex(hooks=True, app_server=False)
        a.start()
        a.wait_ready()
        a.prompt("TOOL touch x_file")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not json.loads(self.tray.run("pending", "--json").stdout):
            time.sleep(0.05)
        self.assertTrue(json.loads(self.tray.run("pending", "--json").stdout), "the request is pending")
        t_kill = time.monotonic()
        self.tray.stop_daemon(kill=True)
        shown = a.wait_permission(timeout=10)
        took = shown - t_kill
        print(f"\n  engine killed -> Codex's own prompt: {took:.2f}s (the wait was 4s)")
        self.assertLess(took, 4.0, "the prompt came before the hook's own deadline would have brought it")
        self.assertFalse(os.path.exists(os.path.join(a.cwd, "x_file")), "no implicit allow")
        a.approve()
        a.wait_turn_done("done")
        self.assertTrue(os.path.exists(os.path.join(a.cwd, "x_file")), "the terminal answered")


class OpenCodeAnswering(Pending, ScenarioTest, OpenCodeMixin):
    """OpenCode 1.18.33 in tmux against the mock, our plugin installed by `agent-tray install
    --opencode`: the plugin's hook waits for the tray's answer and gives it to OpenCode's own API,
    while OpenCode's dialog stays on screen (answering is on by default)."""

    def start_opencode(self, daemon=True):
        a = self.opencode()
        self.agent = a
        self.tray.install("--opencode")
        if daemon:
            self.tray.start_daemon()
        self.tl = self.timeline()
        a.start()
        a.wait_ready()
        return a

    def ask(self):
        return self.ask_bash("opencode", dialog=True)

    def test_allowed_from_the_cli_the_tool_runs_and_the_turn_ends(self):
        a = self.start_opencode()
        request = self.ask()
        self.assertFalse(self.made(), "nothing ran before the answer")
        t = self.since()
        r = self.tray.run("allow", request["id"])
        self.assertIn("allowed", r.stdout)
        a.wait_for(a.PERMISSION, 10, absent=True, interval=0.05, what="the dialog closed by the tray's allow")
        self.wait_state("idle", 30, since=t, what="idle after the tray's allow let the tool run")
        self.assertTrue(self.made(), "the allowed tool ran: its file is on disk")
        self.assertEqual(self.pending(), [], "the answered request is gone")

    def test_denied_from_the_cli_the_tool_does_not_run_and_the_agent_carries_on(self):
        a = self.start_opencode()
        request = self.ask()
        t = self.since()
        self.tray.run("deny", request["session_id"])
        a.wait_for(a.PERMISSION, 10, absent=True, interval=0.05, what="the dialog closed by the tray's deny")
        self.wait_state("idle", 30, since=t, what="idle after the denial")
        time.sleep(1)
        self.assertFalse(self.made(), "a denied tool never runs")
        self.assertEqual(self.pending(), [])

    def test_answered_in_the_terminal_the_request_is_gone_within_a_second(self):
        a = self.start_opencode()
        request = self.ask()
        a.approve()
        t = time.monotonic()
        while self.pending() and time.monotonic() - t < 5:
            time.sleep(0.05)
        gone_after = time.monotonic() - t
        self.assertEqual(self.pending(), [], f"request {request['id']} still pending after the terminal answered")
        self.assertLess(gone_after, 1.0 + 0.2, f"the request left {gone_after:.2f}s after the terminal's answer")
        self.wait_state("idle", 30, since=self.since(), what="idle after the terminal's answer")
        self.assertTrue(self.made())
        late = self.tray.run("allow", request["id"], check=False)
        self.assertNotEqual(late.returncode, 0, "a late answer is refused")

    def test_engine_killed_mid_wait_the_terminal_dialog_still_answers(self):
        a = self.start_opencode()
        self.ask()
        self.tray.stop_daemon(kill=True)
        time.sleep(0.5)
        self.assertFalse(self.made(), "no implicit allow when the engine dies")
        a.approve()
        a.wait_for(a.PERMISSION, 10, absent=True, interval=0.05, what="the dialog answered in the terminal")
        self.assertTrue(appears(os.path.join(a.cwd, "made-by-tool"), 20),
                        "the terminal's own dialog answered as if we were never there")


class DelayInTurns:
    """Prompt-to-dialog with our part installed and no app, against without it: the four numbered
    tests (unittest runs them in order) take turns, without, with, without, with, each in a world
    of its own, and the last compares the quicker run of each kind. A hook that adds a delay adds
    it to every run with it; a busy moment of the machine slows one run (seen: 4.8 s against
    3.4 s while a benchmark loaded the machine), so one slow run does not fail the test and a
    real delay still does. A class mixes this in before ScenarioTest and gives `ours` (its name
    in messages) and `_prompt_to_dialog(ours)`."""

    ours = "our part"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.without, cls.with_ours = [], []
        cls.undecided = False

    def test_1_without_ours(self):
        self.without.append(self._prompt_to_dialog(ours=False))

    def test_2_with_ours(self):
        self.with_ours.append(self._prompt_to_dialog(ours=True))

    def test_3_without_ours_again(self):
        self.without.append(self._prompt_to_dialog(ours=False))

    def test_4_with_ours_again_and_no_app_the_dialog_comes_as_soon(self):
        self.with_ours.append(self._prompt_to_dialog(ours=True))
        if len(self.without) < 2 or len(self.with_ours) < 2:
            self.fail("run with the class's earlier numbered tests first (this run's baselines)")
        if self._over_margin():
            # The agent's own spread from one start to the next can exceed the margin twice in a
            # row on a loaded machine (OpenCode: 3.0 s and 4.7 s without our plugin): a third
            # turn each (tests 5 and 6) decides. A real delay is in every run with it.
            type(self).undecided = True
            return
        self._judge()

    def test_5_without_ours_a_third_time_when_two_did_not_decide(self):
        if not type(self).undecided:
            self.assertEqual(len(self.without), 2, "decided on two turns each")
            return
        self.without.append(self._prompt_to_dialog(ours=False))

    def test_6_with_ours_a_third_time_decides(self):
        if not type(self).undecided:
            self.assertEqual(len(self.with_ours), 2, "decided on two turns each")
            return
        self.with_ours.append(self._prompt_to_dialog(ours=True))
        if len(self.without) < 3 or len(self.with_ours) < 3:
            self.fail("run with the class's earlier numbered tests first (this run's baselines)")
        self._judge()

    def _margin(self, baseline):
        # The hook costs milliseconds with no app; the margin is for the agent's own spread from
        # one start to the next: a second, or a quarter of the baseline where the agent itself
        # takes seconds (OpenCode: 5-7 s on a busy machine).
        return max(1.0, 0.25 * baseline)

    def _over_margin(self):
        baseline, with_ours = min(self.without), min(self.with_ours)
        return with_ours - baseline >= self._margin(baseline)

    def _judge(self):
        baseline, with_ours = min(self.without), min(self.with_ours)
        print(f"\n  prompt -> dialog: without {self.ours} {', '.join(f'{t:.2f}s' for t in self.without)}; "
              f"with it and no app {', '.join(f'{t:.2f}s' for t in self.with_ours)}")
        self.assertLess(with_ours - baseline, self._margin(baseline),
                        f"{self.ours} with no app delayed the dialog: {with_ours:.2f}s vs {baseline:.2f}s "
                        f"(the quicker of {len(self.without)} each)")


class OpenCodeNoAppNoDelay(ScenarioTest, OpenCodeMixin):
    """With no app or daemon running, our plugin costs OpenCode nothing on its way to the dialog:
    the plugin never waits for the hook it runs (shown with a hook that never returns: the dialog
    still comes, and the terminal's answer still runs the tool), and with no app every hook it ran
    has ended by itself. What one hook run costs is measured in `benches/` (1.4 ms with no app),
    not timed here: comparing OpenCode's own prompt-to-dialog times, with and without us, failed
    on a loaded CI machine (8.3 s against 6.1 s, the quicker of three each) while neither our
    plugin nor our hook waited on anything."""

    def _plugin(self, a):
        return os.path.join(a.config_dir, "plugins", "agent-tray.js")

    def test_a_hook_that_never_returns_holds_neither_the_dialog_nor_the_answer(self):
        a = self.opencode()
        self.agent = a
        self.tray.install("--opencode")
        started = self.world.path("stand-in-started")
        stand_in = self.world.path("agent-tray-that-never-returns")
        with open(stand_in, "w") as f:
            f.write(f'#!/bin/sh\necho "$$ $1" >> {started}\nexec sleep 300\n')
        os.chmod(stand_in, 0o755)
        self.world.on_cleanup(lambda: kill_stand_ins(started))
        text = open(self._plugin(a)).read()
        named = f"const BIN = {json.dumps(self.tray.bin)};"
        self.assertIn(named, text, "the plugin names our binary")
        with open(self._plugin(a), "w") as f:
            f.write(text.replace(named, f"const BIN = {json.dumps(stand_in)};"))

        took = prompt_to_dialog(a)
        waiting = [pid for pid, what in stand_ins(started) if what == "hook" and alive(pid)]
        print(f"\n  prompt -> dialog with a hook that never returns: {took:.2f}s; hooks still waiting: {len(waiting)}")
        self.assertTrue(waiting, "the plugin ran its hook for the turn's events, and that hook was still "
                                 "waiting when the dialog came")
        self.assertTrue(appears(os.path.join(a.cwd, "made-by-tool"), 20),
                        "the terminal's answer ran the tool while our hooks still waited")
        self.assertTrue(any(alive(pid) for pid in waiting), "the hooks were still waiting after the answer")

    def test_with_no_app_every_hook_the_plugin_ran_ends_by_itself(self):
        a = self.opencode()
        self.agent = a
        self.tray.install("--opencode")
        took = prompt_to_dialog(a)
        print(f"\n  prompt -> dialog with our plugin and no app: {took:.2f}s")
        self.assertTrue(appears(os.path.join(a.cwd, "made-by-tool"), 20), "approved in the terminal")
        a.wait_for(a.PERMISSION, 10, absent=True, interval=0.05, what="the dialog closed")
        # Hooks of later events (the turn goes on after the tool) start and end meanwhile; one
        # that waited for an app would stay. Watched until none runs, for at most 10 s: every
        # hook seen must end within 5 s of being seen (a hook with no app ends within its budget).
        seen, lingering = {}, []
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            now, live = time.monotonic(), hooks_waiting(self.world)
            for pid in live:
                seen.setdefault(pid, now)
            lingering = [pid for pid in live if now - seen[pid] > 5]
            if not live or lingering:
                break
            time.sleep(0.1)
        journal = os.path.join(self.world.tray_home, "journal")
        journaled = "".join(open(os.path.join(journal, n), errors="replace").read()
                            for n in sorted(os.listdir(journal))) if os.path.isdir(journal) else ""
        print(f"  hooks seen running after the dialog closed: {len(seen)}")
        self.assertEqual(lingering, [], f"no hook of ours waits when no app runs: {describe_processes(lingering)}; "
                                        f"journal tail: {journaled[-3000:]}")
        self.assertIn('"event":"PermissionRequest"', journaled,
                      "the plugin's hook ran for the request and journaled it for the app")


def stand_ins(started):
    """(pid, first argument) of each stand-in hook started, from the file they append to."""
    try:
        lines = open(started).read().split("\n")
    except OSError:
        return []
    return [(int(l.split()[0]), (l.split() + ["", ""])[1]) for l in lines if l.strip()]


def alive(pid):
    try:
        return b"sleep" in open(f"/proc/{pid}/cmdline", "rb").read()
    except OSError:
        return False


def kill_stand_ins(started):
    import signal
    for pid, _ in stand_ins(started):
        if alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


class CopilotAnswering(Pending, ScenarioTest, CopilotMixin):
    """GitHub Copilot CLI 1.0.102 in tmux against the mock, our hooks installed by `agent-tray
    install --copilot`. Copilot shows no dialog while its permissionRequest hook runs (only
    "Working"), so answering is opt-in and short there, like Codex's."""

    def start_copilot(self, opted_in=True):
        a = self.copilot()
        self.agent = a
        self.tray.install("--copilot")
        if opted_in:
            self.tray.run("answering", "copilot", "on")
        self.tray.start_daemon()
        a.start()
        a.wait_ready()
        return a

    def ask(self):
        request = self.ask_bash("copilot", dialog=False)
        self.assertFalse(request["accepts"]["allow_for_session"], "Copilot's hook takes no session rule")
        return request

    def test_opted_in_allowed_from_the_cli_the_tool_runs_and_the_turn_ends(self):
        a = self.start_copilot()
        request = self.ask()
        t = time.monotonic()
        self.tray.run("allow", request["id"])
        a.wait_turn_done("done")
        print(f"\n  allow -> Copilot's turn done: {time.monotonic() - t:.2f}s")
        self.assertTrue(self.made(), "the allowed tool ran")
        self.assertEqual(self.pending(), [])

    def test_opted_in_denied_from_the_cli_the_tool_does_not_run_and_the_agent_carries_on(self):
        a = self.start_copilot()
        request = self.ask()
        self.tray.run("deny", request["id"], "--message", "not on this branch")
        a.wait_turn_done("done")
        time.sleep(1)
        self.assertFalse(self.made(), "a denied tool never runs")
        self.assertIn("not on this branch", json.dumps(a.mock.requests), "the model was told the message")
        self.assertEqual(self.pending(), [])

    def test_opted_in_nobody_answers_copilots_own_prompt_comes_at_the_wait_and_the_terminal_answers(self):
        """The hook gives up by itself at its 4 s wait, before its 5 s timeoutSec: no decision,
        Copilot shows its own dialog, the request leaves the tray within a second, and the
        terminal answers."""
        a = self.start_copilot()
        self.ask()
        t = time.monotonic()
        shown = a.wait_permission(timeout=15)
        print(f"\n  Copilot's own prompt {shown - t:.2f}s after the request was seen (the wait is 4s)")
        self.assertFalse(self.made(), "no implicit allow at the deadline")
        deadline = time.monotonic() + 1.0
        while self.pending() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(self.pending(), [], "the expired request is gone")
        a.approve()
        a.wait_turn_done("done")
        self.assertTrue(self.made(), "the terminal answered")

    def test_not_opted_in_the_prompt_comes_at_once_and_nothing_is_pending(self):
        a = self.start_copilot(opted_in=False)
        a.prompt(TOOL_PROMPT)
        a.wait_permission()
        self.assertEqual(self.pending(), [], "answering is off for Copilot by default")
        a.approve()
        a.wait_turn_done("done")
        self.assertTrue(self.made())

    def test_engine_killed_mid_wait_copilots_own_prompt_comes_at_once(self):
        a = self.start_copilot()
        self.ask()
        t_kill = time.monotonic()
        self.tray.stop_daemon(kill=True)
        shown = a.wait_permission(timeout=10)
        took = shown - t_kill
        print(f"\n  engine killed -> Copilot's own prompt: {took:.2f}s (the wait was 4s)")
        self.assertLess(took, 4.0, "the prompt came before the hook's own deadline would have brought it")
        self.assertFalse(self.made(), "no implicit allow")
        a.approve()
        a.wait_turn_done("done")
        self.assertTrue(self.made(), "the terminal answered")


class CopilotNoAppNoDelay(DelayInTurns, ScenarioTest, CopilotMixin):
    """Answering on and no app or daemon running: Copilot's dialog appears as fast as without
    our hooks (the hook finds no engine and prints nothing at once). Two pairs in this run, each
    run in a world of its own, the baseline first in each (see `DelayInTurns`)."""

    ours = "our hooks (answering on)"

    def _prompt_to_dialog(self, ours):
        a = self.copilot()
        self.agent = a
        if ours:
            self.tray.install("--copilot")
            self.tray.run("answering", "copilot", "on")
        took = prompt_to_dialog(a)
        a.wait_turn_done("done")
        self.assertTrue(os.path.exists(os.path.join(a.cwd, "made-by-tool")), "approved in the terminal")
        return took
