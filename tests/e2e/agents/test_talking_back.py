"""Talking back (`agent-tray send` and `stop`) to the real agents in tmux against the mocks.

Each send is proven by what the model receives (the mock's log), each refusal by what did not
arrive there and what the pane still shows, each stop by the turn ending within 3 s and the row
showing it stopped (idle after an interrupt), not failed.
"""
import json
import os
import subprocess
import time

from e2e_base import ScenarioTest
from test_answering import Pending


def responses_user_texts(mock):
    """The user messages a Responses model (Codex's) received, each once, in order (a request
    carries the whole conversation); Codex's own framing (`<environment_context>` …) left out."""
    seen, out = [], []
    for record in mock.requests:
        body = record.get("body")
        items = body.get("input") if isinstance(body, dict) else None
        users = []
        for item in items if isinstance(items, list) else []:
            if isinstance(item, dict) and item.get("type") == "message" and item.get("role") == "user":
                content = item.get("content")
                text = "".join(c.get("text", "") for c in content if isinstance(c, dict)) \
                    if isinstance(content, list) else str(content or "")
                if not text.lstrip().startswith("<"):
                    users.append(text)
        if len(users) > len(seen):
            out.extend(users[len(seen):])
            seen = users
    return out


def anthropic_user_texts(mock):
    """The user messages an Anthropic model (Claude's) received as typed text, each once, in
    order; tool results and Claude's `<system-reminder>` framing left out."""
    seen, out = 0, []
    for record in mock.requests:
        body = record.get("body")
        msgs = body.get("messages") if isinstance(body, dict) else None
        if not isinstance(msgs, list) or not body.get("tools"):
            continue  # side requests (titles, quota) carry no tools
        users = []
        for m in msgs:
            if not isinstance(m, dict) or m.get("role") != "user":
                continue
            c = m.get("content")
            parts = [c] if isinstance(c, str) else [
                p.get("text", "") for p in c if isinstance(p, dict) and p.get("type") == "text"] \
                if isinstance(c, list) else []
            text = "".join(p for p in parts if not p.lstrip().startswith("<"))
            if text:
                users.append(text)
        if len(users) > seen:
            out.extend(users[seen:])
            seen = len(users)
    return out


def anthropic_user_texts_raw(mock):
    """Every user text an Anthropic model received, framing included, in order (last request)."""
    for record in reversed(mock.requests):
        body = record.get("body")
        msgs = body.get("messages") if isinstance(body, dict) else None
        if not isinstance(msgs, list):
            continue
        out = []
        for m in msgs:
            if isinstance(m, dict) and m.get("role") == "user":
                c = m.get("content")
                out.append(c if isinstance(c, str) else "".join(
                    p.get("text", "") for p in c if isinstance(p, dict) and p.get("type") == "text")
                    if isinstance(c, list) else "")
        return out
    return []


class TalkBack:
    """What the agents' tests share."""

    def session(self, timeout=10, after=None, **want):
        """The one session of this agent in its folder, once it matches `want` (`list --json`);
        with `after` (the session as listed before a prompt was sent), only once the engine has
        seen a later turn begin: an idle read before the sent prompt's turn reached the engine
        (its hooks run late on a loaded machine) is the turn before's, and a send then meets the
        turn's start."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            sessions, _, err = self.tray.list()
            m = [s for s in sessions or [] if s.get("agent") == self.agent.name
                 and s.get("cwd") == self.agent.cwd and s.get("state") != "ended"]
            if len(m) == 1:
                last = m[0]
                later = after is None or (last.get("turn_started_at") is not None
                                          and last.get("turn_started_at") != after.get("turn_started_at"))
                if later and all(last.get(k) == v for k, v in want.items()):
                    return last
            time.sleep(0.1)
        self.fail(f"no {self.agent.name} session with {want}"
                  f"{' after the turn begun ' + str(after.get('turn_started_at')) if after else ''} "
                  f"within {timeout}s; last: {last}")

    def send(self, sid, *args, check=True):
        r = self.tray.run("send", sid, *args, "--json", check=False, timeout=30)
        if check:
            self.assertEqual(r.returncode, 0, f"send {args}: {r.stderr}")
            return json.loads(r.stdout)
        return r

    def wait_user_texts(self, read, n, timeout=20):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            texts = read(self.agent.mock)
            if len(texts) >= n:
                return texts
            time.sleep(0.1)
        return read(self.agent.mock)

    def wait_sent_text(self, read, n, words, timeout=20):
        """The texts the model received after the first `n` that hold any of `words`, once there
        is one: a request the agent makes again for the turn before (Gemini does, on a loaded
        machine) is not the sent text, and counting requests would take it for it."""
        deadline = time.monotonic() + timeout
        while True:
            texts = read(self.agent.mock)
            sent = [t for t in texts[n:] if any(w in t for w in words)]
            if sent or time.monotonic() >= deadline:
                return sent, texts
            time.sleep(0.1)


class CodexTalkBack(TalkBack, ScenarioTest):
    """Codex 0.171 in its default mode (the shared background server): a send is `turn/start`
    and a stop `turn/interrupt` on the TUI's thread, through the engine's connection."""

    def ready(self):
        a = self.setup_codex(hooks=True)
        a.start()
        a.wait_ready()
        a.prompt("hello")
        a.wait_turn_done("ok")
        return self.session(can_send=True)

    def test_a_send_to_an_idle_codex_reaches_the_model_and_shows_in_its_terminal(self):
        s = self.ready()
        self.assertFalse(s["can_stop"], s)
        text = "/review the cache\nthen say ok"
        reply = self.send(s["session_id"], text)
        self.assertEqual(reply["route"], "app_server", reply)
        texts = self.wait_user_texts(responses_user_texts, 2)
        self.assertEqual(texts[-1], text, f"the model received {texts}")
        self.agent.wait_for(r"review the cache", 10, what="the sent prompt in the TUI")
        self.agent.wait_turn_done("ok")

    def test_a_send_to_a_working_codex_is_refused_and_a_stop_ends_its_turn(self):
        s = self.ready()
        a = self.agent
        a.prompt("SLEEP 60")
        a.wait_working()
        s = self.session(state="working", can_stop=True)
        self.assertFalse(s["can_send"], s)
        # The turn's own request reaches the mock some time after the TUI shows it working (a
        # CI run on a loaded machine counted before it came): counted once it is there.
        texts = self.wait_user_texts(responses_user_texts, 2)
        self.assertEqual(texts[-1], "SLEEP 60", f"the model received {texts}")
        before = len(texts)
        r = self.send(s["session_id"], "do something else", check=False)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("working", r.stderr)
        self.assertNotIn("do something else", a.screen())
        t = time.monotonic()
        r = self.tray.run("stop", s["session_id"], "--json", check=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["route"], "app_server")
        a.wait_interrupted(timeout=3)
        stopped = self.session(timeout=3, state="idle")
        self.assertLess(time.monotonic() - t, 3.5, "the turn ended within 3 s of the stop")
        self.assertIsNone(stopped.get("error"), f"a stop is not a failure: {stopped}")
        self.assertEqual(stopped.get("last_event"), "TurnAborted", stopped)
        received = responses_user_texts(a.mock)
        self.assertEqual(len(received), before, f"the refused text never reached the model: {received}")
        self.assertNotIn("do something else", "\n".join(received))
        r = self.tray.run("stop", s["session_id"], check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("no running turn", r.stderr)

    def test_a_codex_session_takes_a_send_again_from_an_engine_started_after_ours_was_killed(self):
        s = self.ready()
        self.tray.stop_daemon(kill=True)
        self.assertTrue(self.agent.alive(), "the agent outlives our engine")
        self.tray.start_daemon()
        s = self.session(timeout=20, can_send=True)
        self.send(s["session_id"], "after the restart")
        texts = self.wait_user_texts(responses_user_texts, 2)
        self.assertEqual(texts[-1], "after the restart", texts)
        self.agent.wait_turn_done("ok")


class ClaudeTalkBack(TalkBack, Pending, ScenarioTest):
    """Claude Code 2.1.332 in tmux: no interface of its own takes a prompt, so a send is typed
    into its pane (a bracketed paste and Enter, one tmux command list) and a stop is Esc, each
    after the pane was checked to still run that Claude, in front, idle at its prompt."""

    def ready(self):
        a = self.setup_claude(hooks=True)
        a.start()
        a.wait_ready()
        a.prompt("hello")
        a.wait_turn_done("ok")
        return self.session(can_send=True)

    def test_a_send_to_an_idle_claude_reaches_the_model_whole_and_literal(self):
        s = self.ready()
        self.assertFalse(s["can_stop"], s)
        reply = self.send(s["session_id"], "first line\nsecond line")
        self.assertEqual(reply["route"], "tmux", reply)
        texts = self.wait_user_texts(anthropic_user_texts, 2)
        self.assertEqual(texts[-1], "first line\nsecond line", f"one prompt, its lines kept: {texts}")
        self.agent.wait_turn_done("ok")
        s = self.session(timeout=20, after=s, can_send=True)
        self.send(s["session_id"], "!ls -la")
        texts = self.wait_user_texts(anthropic_user_texts, 3)
        self.assertEqual(texts[-1].strip(), "!ls -la", f"sent as words, not run as a shell line: {texts}")
        self.agent.wait_turn_done("ok")
        s = self.session(timeout=20, after=s, can_send=True)
        # Claude runs any leading /word as its command, however it is typed: refused, not typed.
        r = self.send(s["session_id"], "/compact the notes please", check=False)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("--command", r.stderr)
        time.sleep(0.3)
        self.assertNotIn("/compact the notes", self.agent.screen())
        self.assertEqual(len(anthropic_user_texts(self.agent.mock)), 3, "nothing more reached the model")

    def test_a_draft_in_the_prompt_box_is_never_joined(self):
        s = self.ready()
        a = self.agent
        a.tmux.cmd("send-keys", "-t", a.tmux.target, "-l", "my own draft")
        a.wait_for(r"my own draft", 3, what="the user's draft in the box")
        r = self.send(s["session_id"], "TRAY-TEXT", check=False)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("nothing was typed", r.stderr)
        time.sleep(0.3)
        self.assertNotIn("TRAY-TEXT", a.screen())

    def test_a_send_to_a_working_claude_is_refused_and_a_stop_ends_its_turn(self):
        s = self.ready()
        a = self.agent
        a.prompt("SLEEP 60")
        s = self.session(state="working", can_stop=True)
        self.assertFalse(s["can_send"], s)
        # The turn's request may reach the mock after the state says working: counted once there.
        before = self.wait_user_texts(anthropic_user_texts, 2)
        self.assertIn("SLEEP 60", before[-1], f"the model received {before}")
        screen = a.screen()
        r = self.send(s["session_id"], "do something else", check=False)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("working", r.stderr)
        time.sleep(0.5)
        self.assertNotIn("do something else", a.screen(), "nothing reached the pane")
        t = time.monotonic()
        r = self.tray.run("stop", s["session_id"], "--json", check=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["route"], "tmux")
        stopped = self.session(timeout=3, state="idle")
        # Esc before the reply puts the prompt back in Claude's prompt box: the turn is over.
        a.wait_for(lambda sc: "esc to interrupt" not in sc, 3, what="no turn running on screen")
        self.assertLess(time.monotonic() - t, 3.5, "the turn ended within 3 s of the stop")
        self.assertIsNone(stopped.get("error"), f"a stop is not a failure: {stopped}")
        self.assertEqual(anthropic_user_texts(a.mock), before, "the refused text never reached the model")
        self.assertNotIn("do something else", screen)

    def test_a_pane_whose_claude_was_replaced_by_a_shell_is_not_typed_into(self):
        s = self.ready()
        a = self.agent
        # The pane now runs a shell where Claude was (same pane id); the engine has not yet
        # noticed Claude is gone (its pid watcher ticks every 10 s), so the row is still idle.
        a.tmux.cmd("respawn-pane", "-k", "-t", a.tmux.target, "sh")
        time.sleep(0.5)
        r = self.send(s["session_id"], "echo TYPED-INTO-THE-SHELL", check=False)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertRegex(r.stderr, r"nothing was typed|has ended")
        time.sleep(0.5)
        self.assertNotIn("TYPED-INTO-THE-SHELL", a.screen(), "nothing typed into the shell")

    def test_a_pane_in_copy_mode_is_not_typed_into_and_a_send_after_it_left_arrives(self):
        s = self.ready()
        a = self.agent
        a.tmux.cmd("copy-mode", "-t", a.tmux.target)
        r = self.send(s["session_id"], "COPY-MODE-TEXT", check=False)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("copy mode", r.stderr)
        self.assertIn("nothing was typed", r.stderr)
        a.tmux.send_keys("q")
        time.sleep(0.3)
        self.assertNotIn("COPY-MODE-TEXT", a.screen())
        self.send(s["session_id"], "after copy mode")
        texts = self.wait_user_texts(anthropic_user_texts, 2)
        self.assertEqual(texts[-1], "after copy mode", texts)

    def test_the_engine_killed_mid_send_leaves_nothing_half_typed(self):
        s = self.ready()
        a = self.agent
        text = "one whole prompt " + "word " * 80
        received = len(anthropic_user_texts(a.mock))
        for delay in (0.0, 0.004, 0.015, 0.04):
            s = self.session(timeout=20, can_send=True)
            p = subprocess.Popen([self.tray.bin, "send", s["session_id"], text], env=self.tray.env,
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(delay)
            self.tray.stop_daemon(kill=True)
            p.wait(timeout=20)
            time.sleep(1.0)
            texts = anthropic_user_texts(a.mock)
            box = [ln for ln in a.screen().splitlines() if ln.startswith("\u276f")]
            if len(texts) > received:
                self.assertEqual(texts[-1], text.rstrip(), f"whole or nothing (after {delay}s)")
                received = len(texts)
                a.wait_turn_done("ok")
            else:
                self.assertTrue(box and box[-1].strip("\u276f\xa0 ") == "",
                                f"nothing half-typed after a kill {delay}s into the send: {box}")
            self.assertTrue(a.alive(), "the agent outlives our engine")
            self.tray.start_daemon()
        # Still driven normally afterwards.
        s = self.session(timeout=20, can_send=True)
        self.send(s["session_id"], "still fine")
        self.assertEqual(self.wait_user_texts(anthropic_user_texts, received + 1)[-1], "still fine")

    def test_a_stop_while_claude_waits_on_a_permission_denies_it_and_ends_the_turn(self):
        s = self.ready()
        a = self.agent
        a.prompt("TOOL touch stopped-tool")
        request = self.wait_request_of("claude")
        s = self.session(state="waiting_for_permission", can_stop=True)
        turns = lambda: sum(1 for r in a.mock.requests if isinstance(r.get("body"), dict) and r["body"].get("tools"))
        before = turns()
        t = time.monotonic()
        r = self.tray.run("stop", s["session_id"], "--json", check=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["route"], "pending_request", r.stdout)
        stopped = self.session(timeout=3, state="idle")
        self.assertLess(time.monotonic() - t, 3.5, "the turn ended within 3 s of the stop")
        self.assertIsNone(stopped.get("error"), stopped)
        time.sleep(1)
        self.assertFalse(os.path.exists(os.path.join(a.cwd, "stopped-tool")), "the tool never ran")
        self.assertEqual(turns(), before, "the turn ended there: the denied tool's result never went back to the model")
        self.assertEqual(self.pending(), [], f"request {request['id']} closed")


def chat_user_texts(mock):
    """The user messages a chat-completions model (OpenCode's) received, each once, in order."""
    seen, out = 0, []
    for record in mock.requests:
        body = record.get("body")
        msgs = body.get("messages") if isinstance(body, dict) else None
        if not isinstance(msgs, list) or not body.get("tools"):
            continue
        users = []
        for m in msgs:
            if isinstance(m, dict) and m.get("role") == "user":
                c = m.get("content")
                users.append(c if isinstance(c, str) else "".join(
                    p.get("text", "") for p in c if isinstance(p, dict)) if isinstance(c, list) else "")
        if len(users) > seen:
            out.extend(users[seen:])
            seen = len(users)
    return out


class OpenCodeTalkBack(TalkBack, ScenarioTest):
    """OpenCode 1.18.33's TUI: our plugin holds a way in (`agent-tray inbox`) and carries a send
    out as `prompt_async` and a stop as `abort`, through OpenCode's own server in its process."""

    def ready(self):
        from test_opencode import OpenCodeMixin
        self.agent = OpenCodeMixin.opencode(self)
        self.tray.install("--opencode")
        self.tray.start_daemon()
        self.tl = self.timeline()
        a = self.agent
        a.start()
        a.wait_ready()
        a.prompt("hello")
        return self.session(timeout=30, state="idle", can_send=True)

    def test_a_send_to_an_idle_opencode_reaches_the_model_and_a_stop_ends_a_long_turn(self):
        s = self.ready()
        a = self.agent
        reply = self.send(s["session_id"], "/init the notes\n!ls")
        self.assertEqual(reply["route"], "plugin", reply)
        texts = self.wait_user_texts(chat_user_texts, 2)
        self.assertEqual(texts[-1], "/init the notes\n!ls", f"the model received {texts}")
        self.session(timeout=20, after=s, state="idle", can_send=True)
        self.send(s["session_id"], "SLEEP 60")
        s = self.session(timeout=20, state="working", can_stop=True)
        r = self.send(s["session_id"], "not now", check=False)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("working", r.stderr)
        t = time.monotonic()
        r = self.tray.run("stop", s["session_id"], "--json", check=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["route"], "plugin")
        stopped = self.session(timeout=3, state="idle")
        self.assertLess(time.monotonic() - t, 3.5, "the turn ended within 3 s of the stop")
        self.assertNotIn("not now", "\n".join(chat_user_texts(a.mock)))
        self.assertIsNone(stopped.get("error"), f"a stop is not a failure: {stopped}")

    def test_the_plugins_relay_finds_an_engine_started_after_ours_was_killed(self):
        s = self.ready()
        self.tray.stop_daemon(kill=True)
        self.assertTrue(self.agent.alive(), "the agent outlives our engine")
        self.tray.start_daemon()
        s = self.session(timeout=20, state="idle", can_send=True)
        reply = self.send(s["session_id"], "after the restart")
        self.assertEqual(reply["route"], "plugin", reply)
        texts = self.wait_user_texts(chat_user_texts, 2)
        self.assertEqual(texts[-1], "after the restart", texts)
        relays = subprocess.run(["pgrep", "-f", f"inbox --agent opencode --pid {self.agent.pid}"],
                                capture_output=True, text=True).stdout.split()
        self.assertEqual(len(relays), 1, f"one relay per OpenCode process: {relays}")


class QwenTalkBack(TalkBack, ScenarioTest):
    """Qwen Code 0.24.4's TUI: once the user minted our controller token
    (`agent-tray answering qwen --send on`), a send goes to the session's controller inbox and
    the session says it took it; the model receives the text inside Qwen's controller envelope.
    Nothing in the inbox stops a turn, so no stop is offered."""

    def ready(self):
        from harness.mock_anthropic import AnthropicMock
        from harness.qwen import QwenAgent, qwen_js
        if not qwen_js():
            self.fail("qwen not installed: run tests/e2e/agents/install.sh")
        mock = AnthropicMock(self.world.path("logs", "anthropic-requests.jsonl")).start()
        self.world.on_cleanup(mock.stop)
        self.agent = QwenAgent(self.world, mock).configure()
        self.tray.install("--qwen")
        self.tray.start_daemon()
        self.tl = self.timeline()
        a = self.agent
        a.start()
        a.wait_ready()
        a.prompt("hello")
        a.wait_turn_done("ok")
        return self.session(timeout=20, state="idle")

    def test_a_send_reaches_an_idle_qwen_only_with_the_users_consent(self):
        s = self.ready()
        self.assertFalse(s["can_send"], f"no way in before the user's consent: {s}")
        r = self.send(s["session_id"], "not yet", check=False)
        self.assertEqual(r.returncode, 1, r.stdout)
        r = self.tray.run("answering", "qwen", "--send", "on")
        self.assertIn("Agent Tray", r.stdout)
        token = os.path.join(self.world.tray_home, "qwen-controller.json")
        self.assertEqual(os.stat(token).st_mode & 0o777, 0o600, "the token is kept 0600")
        s = self.session(can_send=True)
        self.assertFalse(s["can_stop"], s)
        text = "first line\n/help <b>"
        reply = self.send(s["session_id"], text)
        self.assertEqual(reply["route"], "controller_inbox", reply)
        deadline = time.monotonic() + 20
        got = ""
        while time.monotonic() < deadline and "first line" not in got:
            texts = anthropic_user_texts_raw(self.agent.mock)
            got = texts[-1] if texts else ""
            time.sleep(0.2)
        self.assertIn("first line\n/help &lt;b>", got, "the model received the text, in Qwen's envelope")
        self.assertIn('controller="Agent Tray"', got)
        self.assertNotIn("not yet", "\n".join(anthropic_user_texts_raw(self.agent.mock)))
        self.agent.wait_for(r"Message from a trusted controller \(Agent Tray\)", 10, what="the TUI names us")
        r = self.tray.run("stop", s["session_id"], check=False)
        self.assertEqual(r.returncode, 1, "no stop through Qwen's inbox")
        r = self.tray.run("answering", "qwen", "--send", "off")
        self.assertFalse(os.path.exists(token), "the token is forgotten")
        self.session(can_send=False)


def gemini_user_texts(mock):
    """The last user text of each main request a Gemini model received, in order."""
    out = []
    for record in mock.requests:
        body = record.get("body")
        contents = body.get("contents") if isinstance(body, dict) else None
        if not isinstance(contents, list) or not body.get("tools"):
            continue
        users = [c for c in contents if isinstance(c, dict) and c.get("role") == "user"]
        if users:
            parts = users[-1].get("parts") or []
            out.append("".join(p.get("text", "") for p in parts if isinstance(p, dict)))
    return out


class GeminiTalkBack(TalkBack, ScenarioTest):
    """Gemini CLI 0.61.0 in tmux: no interface of its own, so a send is typed into its pane (a
    bracketed paste, the Enter 0.3 s later, pressed by tmux's server) and a stop is Esc."""

    def ready(self):
        from harness.gemini import GeminiAgent, gemini_js
        from harness.mock_gemini import GeminiMock
        if not gemini_js():
            self.fail("gemini not installed: run tests/e2e/agents/install.sh")
        mock = GeminiMock(self.world.path("logs", "gemini-requests.jsonl")).start()
        self.world.on_cleanup(mock.stop)
        self.agent = GeminiAgent(self.world, mock).configure()
        self.tray.install("--gemini")
        self.tray.start_daemon()
        self.tl = self.timeline()
        a = self.agent
        a.start()
        a.wait_ready()
        a.prompt("hello")
        a.wait_turn_done("ok")
        return self.session(timeout=20, state="idle", can_send=True)

    def test_a_send_reaches_an_idle_gemini_whole_and_a_stop_cancels_its_turn(self):
        s = self.ready()
        a = self.agent
        n = len(gemini_user_texts(a.mock))
        reply = self.send(s["session_id"], "first line\nsecond line")
        self.assertEqual(reply["route"], "tmux", reply)
        sent, texts = self.wait_sent_text(gemini_user_texts, n, ["first line", "second line"])
        self.assertTrue(sent, f"the sent text reached the model: {texts}")
        self.assertEqual(set(sent), {"first line\nsecond line"}, f"whole, in one message: {texts}")
        a.wait_turn_done("ok")
        s = self.session(timeout=20, after=s, state="idle", can_send=True)
        n = len(texts)
        self.send(s["session_id"], "!ls -la")
        sent, texts = self.wait_sent_text(gemini_user_texts, n, ["ls -la"])
        self.assertEqual(set(sent), {"!ls -la"}, f"a pasted ! is words, not a shell line: {texts}")
        s = self.session(timeout=20, after=s, state="idle", can_send=True)
        r = self.send(s["session_id"], "/help me", check=False)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("--command", r.stderr)
        self.send(s["session_id"], "SLEEP 60")
        s = self.session(timeout=20, state="working", can_stop=True)
        r = self.send(s["session_id"], "not now", check=False)
        self.assertEqual(r.returncode, 1, r.stdout)
        t = time.monotonic()
        r = self.tray.run("stop", s["session_id"], "--json", check=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        a.wait_for(r"Request cancelled", 3, what="the turn cancelled on screen")
        self.assertLess(time.monotonic() - t, 3.5)
        stopped = self.session(timeout=5, state="idle")
        self.assertIsNone(stopped.get("error"), f"a stop is not a failure: {stopped}")
        self.assertNotIn("not now", "\n".join(gemini_user_texts(a.mock)))


class CopilotTalkBack(TalkBack, ScenarioTest):
    """GitHub Copilot CLI 1.0.102 in tmux: no interface of its own for a terminal session, so a
    send is typed into its pane; a leading `/` or `!` runs there however it is typed, so it is
    refused without --command; no stop is offered."""

    def ready(self):
        from test_copilot import CopilotMixin
        self.agent = CopilotMixin.copilot(self)
        self.tray.install("--copilot")
        self.tray.start_daemon()
        self.tl = self.timeline()
        a = self.agent
        a.start()
        a.wait_ready()
        a.prompt("hello")
        return self.session(timeout=30, state="idle", can_send=True)

    def test_a_send_reaches_an_idle_copilot_and_no_stop_is_offered(self):
        s = self.ready()
        a = self.agent
        n = len(chat_user_texts(a.mock))
        reply = self.send(s["session_id"], "first line\nsecond line")
        self.assertEqual(reply["route"], "tmux", reply)
        texts = self.wait_user_texts(chat_user_texts, n + 1)
        self.assertTrue(texts[-1].endswith("\n\nfirst line\nsecond line"),
                        f"one prompt, after Copilot's own date line: {texts[-1]!r}")
        self.session(timeout=20, after=s, state="idle", can_send=True)
        for text in ("!ls -la", "/help me"):
            r = self.send(s["session_id"], text, check=False)
            self.assertEqual(r.returncode, 1, r.stdout)
            self.assertIn("--command", r.stderr)
        time.sleep(0.5)
        self.assertNotIn("Shell ls", a.screen(), "no shell line ran")
        # No stop is offered: none typed into its terminal was seen to end a turn Copilot then
        # reports as ended (the row would stay "working").
        self.send(s["session_id"], "SLEEP 60")
        s = self.session(timeout=20, state="working")
        self.assertFalse(s["can_stop"] or s["can_send"], s)
        r = self.send(s["session_id"], "not now", check=False)
        self.assertEqual(r.returncode, 1, r.stdout)
        r = self.tray.run("stop", s["session_id"], check=False)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("no stop", r.stderr)
        self.assertIn("Working esc esc", a.screen(), "nothing was typed: the turn runs on")
        self.assertNotIn("not now", "\n".join(chat_user_texts(a.mock)))


class ClaudeInKittyTalkBack(TalkBack, ScenarioTest):
    """Claude Code 2.1.332 in a real kitty window (0.26.5, under a private Xvfb) that listens for
    remote control: a send is one `kitty @ send-text` (the bracketed paste and Enter together),
    a stop is Esc, each after kitty said the window's foreground process is that Claude and its
    prompt box is empty."""

    def kitty(self, *args, check=True):
        r = subprocess.run(["kitty", "@", "--to", self.kitty_to, *args], capture_output=True, text=True, timeout=10)
        if check and r.returncode != 0:
            self.fail(f"kitty @ {args}: {r.stderr}")
        return r.stdout

    def screen(self):
        return self.kitty("get-text", "--match", "id:1", check=False)

    def wait_screen(self, pred, timeout, what):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if pred(self.screen()):
                return
            time.sleep(0.1)
        self.fail(f"kitty's window did not show {what} within {timeout}s:\n{self.screen()}")

    def ready(self):
        import shutil
        from harness.agents import claude_bin
        from harness.window import _read_line_from
        if not shutil.which("kitty") or not shutil.which("Xvfb"):
            self.fail("kitty and Xvfb are needed: scripts/setup.sh --test installs them")
        self.agent = self.claude()
        self.tray.install("--claude")
        self.tray.start_daemon()
        self.tl = self.timeline()
        r, w = os.pipe()
        xvfb = subprocess.Popen(["Xvfb", "-displayfd", str(w), "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
                                pass_fds=(w,), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        os.close(w)
        self.world.on_cleanup(lambda: (xvfb.kill(), xvfb.wait()))
        display = ":" + _read_line_from(r, 15, "Xvfb")
        os.close(r)
        self.kitty_to = "unix:" + self.world.path("kitty.sock")
        env = dict(self.agent.env(), DISPLAY=display, LIBGL_ALWAYS_SOFTWARE="1")
        term = subprocess.Popen(
            ["kitty", "--config", "NONE", "-o", "allow_remote_control=socket-only", "--listen-on", self.kitty_to,
             "-o", "shell_integration=disabled", "--directory", self.agent.cwd,
             claude_bin(), "--permission-mode", "default"],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)
        self.world.on_cleanup(lambda: (term.kill(), term.wait()))
        self.wait_screen(lambda s: "? for shortcuts" in s, 40, "Claude's prompt")
        self.kitty("send-text", "--match", "id:1", "hello")
        time.sleep(0.3)
        self.kitty("send-text", "--match", "id:1", "\\r")
        self.wait_screen(lambda sc: "● ok" in sc and "esc to interrupt" not in sc, 30, "the first turn done")
        return self.session(timeout=30, state="idle", can_send=True)

    def test_a_send_and_a_stop_reach_claude_in_a_kitty_window(self):
        s = self.ready()
        a = self.agent
        n = len(anthropic_user_texts(a.mock))
        r = self.send(s["session_id"], "first line\nsecond line", check=False)
        self.assertEqual(r.returncode, 0, f"{r.stderr}\nscreen:\n{self.screen()!r}")
        reply = json.loads(r.stdout)
        self.assertEqual(reply["route"], "kitty", reply)
        texts = self.wait_user_texts(anthropic_user_texts, n + 1)
        self.assertEqual(texts[-1], "first line\nsecond line", texts)
        self.session(timeout=20, state="idle", can_send=True)
        self.kitty("send-text", "--match", "id:1", "my own draft")
        self.wait_screen(lambda sc: "my own draft" in sc, 5, "the user's draft")
        r = self.send(s["session_id"], "TRAY-TEXT", check=False)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("nothing was typed", r.stderr)
        self.assertNotIn("TRAY-TEXT", self.screen())
        self.kitty("send-text", "--match", "id:1", "\\x15")  # Ctrl-U: the draft is the user's to clear
        self.wait_screen(lambda sc: "my own draft" not in sc, 5, "the draft cleared")
        self.send(s["session_id"], "SLEEP 60")
        s = self.session(timeout=20, state="working", can_stop=True)
        t = time.monotonic()
        r = self.tray.run("stop", s["session_id"], "--json", check=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["route"], "kitty")
        stopped = self.session(timeout=3, state="idle")
        self.assertLess(time.monotonic() - t, 3.5)
        self.assertIsNone(stopped.get("error"), stopped)
