"""Issue 39: answering the real Claude Code's questions (AskUserQuestion) from outside its
terminal.

Claude in tmux against the mock model, our hooks installed by `agent-tray install --claude`,
`agent-tray daemon` running. The mock asks a question with its AskUserQuestion tool; Claude's
PermissionRequest hook fires while the terminal shows the question, and an answer from here is
proven by what the model receives in the tool's result (read from the mock's log), a refusal by
the question still on screen and still listed."""
import json
import time

from e2e_base import ScenarioTest
from harness.tmux import ScreenTimeout
from harness.mock_anthropic import ASK_MANY
from test_answering import Pending, hooks_waiting
from test_opencode import OpenCodeMixin

QUESTION = "Which colour shall the file be?"


def tool_results(mock):
    """The text of every tool_result the model received, in order: each request's newest user
    message only (a request carries the whole conversation, earlier results included)."""
    out = []
    for record in mock.requests:
        body = record.get("body")
        messages = body.get("messages") if isinstance(body, dict) else None
        if not messages or messages[-1].get("role") != "user" or not isinstance(messages[-1].get("content"), list):
            continue
        for block in messages[-1]["content"]:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                inner = block.get("content")
                if isinstance(inner, list):
                    inner = " ".join(b.get("text", "") for b in inner if isinstance(b, dict))
                out.append(str(inner))
    return out


class ClaudeQuestions(Pending, ScenarioTest):

    def ask(self, prompt, on_screen):
        """Starts Claude, prompts the mock's question; its request as `pending` lists it, once
        the terminal shows the question."""
        a = self.setup_claude(hooks=True)
        a.start()
        a.wait_ready()
        a.prompt(prompt)
        a.wait_for(on_screen, timeout=30, interval=0.05, what="the question on screen")
        return self.wait_request_of("claude")

    def refused(self, *args, says):
        r = self.tray.run(*args, check=False)
        self.assertNotEqual(r.returncode, 0, f"`{' '.join(args)}` must be refused: {r.stdout}")
        self.assertIn(says, r.stderr, f"`{' '.join(args)}`'s sentence")
        return r

    def test_listed_refused_when_wrong_and_answered_from_the_cli_the_model_receives_the_label(self):
        request = self.ask(f"ASK {QUESTION}", r"Which colour shall the file be\?")
        a = self.agent
        # Listed with a stable kind and its questions whole.
        self.assertEqual(request["kind"], "question", request)
        self.assertEqual(request["questions"], [{
            "question": QUESTION, "header": "Choice", "multi_select": False, "allows_other": True,
            "options": [{"label": "Red", "description": "the red one"},
                        {"label": "Blue", "description": "the blue one"}]}], request)
        self.assertIsNone(request.get("for_session"), "a question grants nothing for the session")
        self.wait_state("waiting_for_input", 5, what="the session waits for the user's answer")
        text = self.tray.run("pending").stdout
        self.assertIn(f"question 1 [Choice]: {QUESTION}", text)
        self.assertIn("    - Blue \u2014 the blue one", text)
        self.assertIn(f"agent-tray answer {request['id']} --choice Red", text)
        rid = request["id"]
        # Every wrong answer is refused with a sentence, and nothing reaches the agent.
        self.refused("answer", rid, "--choice", "Green", says='offers no "Green"')
        self.refused("answer", rid, "--choice", "Red", "--choice", "Blue", says="takes one choice")
        self.refused("answer", rid, "--question", "2", "--choice", "Red", says="asks 1 question(s) and 2 were answered")
        self.refused("allow", rid, says="is a question, not a permission")
        self.refused("answer", request["session_id"], "--choice", "Red",
                     says=f"must name the request you read, by its id: agent-tray answer {rid}")
        self.refused("answer", rid, says="say what to answer")
        self.refused("answer", "r999-nosuch", "--choice", "Red", says="no request r999-nosuch is known")
        self.assertEqual([r["id"] for r in self.pending()], [rid], "still waiting after every refusal")
        self.assertEqual(tool_results(a.mock), [], "the model received nothing yet")
        self.assertIn(QUESTION, a.screen(), "the terminal still shows the question")
        # The right answer: exit 0 once the hook printed it; the model receives the label.
        t = self.since()
        r = self.tray.run("answer", rid, "--choice", "Blue")
        self.assertIn(f"answered {rid}", r.stdout)
        a.wait_turn_done("done")
        results = tool_results(a.mock)
        self.assertEqual(len(results), 1, results)
        self.assertIn(f'"{QUESTION}"="Blue"', results[0], "the model received the chosen label")
        self.wait_state("idle", 10, since=t, what="idle after the answered question's turn")
        self.assertEqual(self.pending(), [])
        self.refused("answer", rid, "--choice", "Red", says="already answered from the command line")

    def test_several_questions_multi_select_and_own_words_in_one_answer(self):
        request = self.ask("ASK MANY", r"Which database should the cache use\?")
        a = self.agent
        self.assertEqual([q["question"] for q in request["questions"]], [q["question"] for q in ASK_MANY])
        self.assertEqual([q["multi_select"] for q in request["questions"]], [False, True, False])
        rid = request["id"]
        # Question 3 left out: refused whole, nothing sent.
        self.refused("answer", rid, "--question", "1", "--choice", "SQLite",
                     "--question", "2", "--choice", "Redis", says="asks 3 question(s) and 2 were answered")
        self.assertEqual(tool_results(a.mock), [])
        self.tray.run("answer", rid, "--question", "1", "--choice", "SQLite",
                      "--question", "2", "--choice", "Redis", "--choice", "Memcached",
                      "--question", "3", "--text", "hot-cache")
        a.wait_turn_done("done")
        [result] = tool_results(a.mock)
        self.assertIn('"Which database should the cache use?"="SQLite"', result)
        self.assertIn('"Which caches should sit in front of it?"="Redis, Memcached"', result)
        self.assertIn('"What should the cache be called?"="hot-cache"', result)

    def test_answered_in_the_terminal_first_our_request_is_gone_within_a_second(self):
        request = self.ask(f"ASK {QUESTION}", r"Which colour shall the file be\?")
        a = self.agent
        self.assertNotEqual(self.hooks_waiting(), [], "our hook waits on the engine while the question is open")
        t = time.monotonic()
        a.answer_question()  # Enter: the first option, Red
        while self.pending() and time.monotonic() - t < 5:
            time.sleep(0.05)
        self.assertEqual(self.pending(), [], f"question {request['id']} still listed after the terminal answered")
        self.assertLess(time.monotonic() - t, 1.0 + 2.5, "gone as soon as the terminal answered (the "
                        "answer's Enters take up to 2 s of that)")
        [result] = tool_results(a.mock)
        self.assertIn(f'"{QUESTION}"="Red"', result, "the terminal's answer, not one of ours")
        self.refused("answer", request["id"], "--choice", "Blue", says="moved on")
        # Our hook did not stay behind waiting for an answer that can no longer matter. (The turn's
        # later events run hooks of their own for a few ms each: one may be caught in flight,
        # so the check allows them 2 s to end; a waiting hook would stay.)
        deadline = time.monotonic() + 2
        while self.hooks_waiting() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(self.hooks_waiting(), [], "no hook process left waiting")

    def test_engine_killed_mid_question_the_terminal_still_asks_and_answers(self):
        self.ask(f"ASK {QUESTION}", r"Which colour shall the file be\?")
        a = self.agent
        self.tray.stop_daemon(kill=True)
        time.sleep(0.5)
        self.assertEqual(tool_results(a.mock), [], "no invented answer when the engine dies")
        self.assertIn(QUESTION, a.screen(), "the terminal still shows the question")
        a.answer_question()
        [result] = tool_results(a.mock)
        self.assertIn(f'"{QUESTION}"="Red"', result, "the terminal's own answer went through")

    def hooks_waiting(self):
        """Pids of `agent-tray hook` processes of this world still running."""
        return hooks_waiting(self.world)


class ClaudeQuestionsFromTheApp(ScenarioTest):
    """The REAL desktop app (Xvfb, a private session bus, WebKitWebDriver) hosting the engine,
    the real Claude in tmux: the alert offers the question's options as its own buttons (picked
    in dunst's menu, so dunst sends ActionInvoked), and the window's form answers three
    questions at once; the model receives exactly what was picked."""

    def setUp(self):
        super().setUp()
        from harness.window import AppWindow, WindowError
        self.window = AppWindow(self.world)
        try:
            self.window.check()
        except WindowError as e:
            self.fail(str(e))

    def test_the_alerts_option_and_the_windows_form_each_answer_the_question(self):
        from harness.window import WindowError
        a = self.claude()
        self.agent = a
        self.tray.install("--claude")
        self.window.start()
        try:
            self.window.start_dunst(self.world)
        except WindowError as e:
            self.fail(str(e))
        self.assertEqual(self.window.wait_alerts_displayed(0, 10), "0", "dunst answers on the bus")
        a.start()
        a.wait_ready()
        # The alert: one short question, two short options: each is a button of the alert.
        self.window.pick_action("#Blue")
        a.prompt(f"ASK {QUESTION}")
        a.wait_for(r"Which colour shall the file be\?", timeout=30, interval=0.05, what="the question on screen")
        self.assertEqual(self.window.wait_alerts_displayed(1, 15), "1", "the question's alert is on screen")
        try:
            picks = self.window.pick_until(lambda: len(tool_results(a.mock)) == 1)
        except WindowError as e:
            self.fail(f"the alert's Blue did not answer the question: {e}")
        menus = open(self.window.dunst_menu_log).read()
        self.assertIn("#Red", menus, "every option is one of the alert's actions")
        self.assertNotIn("#Allow", menus, "a question's alert has no Allow")
        print(f"\n  the alert was picked {picks} time(s)")
        self.assertIn(f'"{QUESTION}"="Blue"', tool_results(a.mock)[0], "the model received the alert's choice")
        a.wait_turn_done("done")
        self.assertEqual(self.window.wait_alerts_displayed(0, 5), "0", "the answered alert is gone")

        # The window: three questions, one multi-select, one answered in the user's own words.
        a.prompt("ASK MANY")
        a.wait_for(r"Which database should the cache use\?", timeout=30, interval=0.05, what="the questions on screen")
        self.window.wait_js("return !!document.querySelector('.row [data-question-form] [data-question=\"2\"]')", True, 15,
                            "the three questions in the window")
        self.assertFalse(self.window.js("return !!document.querySelector('.row [data-action=\"answer:allow\"]')"),
                         "no Allow beside a question")
        self.window.js("""
            const form = document.querySelector('.row [data-question-form]');
            form.querySelector('[data-question="0"] [data-option="1"]').click();
            form.querySelector('[data-question="1"] [data-option="0"]').click();
            form.querySelector('[data-question="1"] [data-option="2"]').click();
            const other = form.querySelector('[data-question="2"] input[data-other]');
            other.value = 'hot-cache';
            other.dispatchEvent(new Event('input', { bubbles: true }));
        """)
        self.window.screenshot("question-claude-in-window")
        self.window.js("document.querySelector('.row [data-action=\"answer:submit\"]').click()")
        deadline = time.monotonic() + 15
        while len(tool_results(a.mock)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        results = tool_results(a.mock)
        self.assertEqual(len(results), 2, f"the window's answers reached the model; screen:\n{a.screen()}")
        self.assertIn('"Which database should the cache use?"="SQLite"', results[1])
        self.assertIn('"Which caches should sit in front of it?"="Redis, In-process"', results[1])
        self.assertIn('"What should the cache be called?"="hot-cache"', results[1])
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            stats = json.loads(self.tray.run("stats", "--json").stdout)
            if stats["answers"]["from_tray"] >= 2:
                break
            time.sleep(0.2)
        self.assertEqual(stats["answers"]["by_source"], {"window": 1, "alert": 1}, stats["answers"])
        self.assertEqual(self.window.stop(), [], "everything the app started ends by pid")


def chat_tool_results(mock):
    """The text of every tool result a chat-completions model received (OpenCode's), in order:
    each request's messages after its last assistant message."""
    out = []
    for record in mock.requests:
        body = record.get("body")
        messages = body.get("messages") if isinstance(body, dict) else None
        if not messages:
            continue
        tail = []
        for m in reversed(messages):
            if not isinstance(m, dict) or m.get("role") == "assistant":
                break
            tail.append(m)
        for m in reversed(tail):
            if m.get("role") == "tool":
                content = m.get("content")
                if isinstance(content, list):
                    content = " ".join(c.get("text", "") for c in content if isinstance(c, dict))
                out.append(str(content))
    return out


class OpenCodeQuestions(Pending, ScenarioTest, OpenCodeMixin):
    """OpenCode 1.18.33 in tmux against the mock, our plugin installed: its `question` tool's
    question is listed and answered from here through the plugin's client, while OpenCode's own
    question stays on screen."""

    def ask(self, prompt, on_screen):
        a = self.opencode()
        self.agent = a
        self.tray.install("--opencode")
        self.tray.start_daemon()
        self.tl = self.timeline()
        a.start()
        a.wait_ready()
        a.prompt(prompt)
        a.wait_for(on_screen, timeout=30, interval=0.05, what="the question on screen")
        return self.wait_request_of("opencode")

    def wait_results(self, n, timeout=20):
        deadline = time.monotonic() + timeout
        while len(chat_tool_results(self.agent.mock)) < n and time.monotonic() < deadline:
            time.sleep(0.1)
        return chat_tool_results(self.agent.mock)

    def test_listed_and_answered_from_the_cli_the_model_receives_the_label(self):
        request = self.ask(f"ASK {QUESTION}", r"Which colour shall the file be\?")
        self.assertEqual(request["kind"], "question", request)
        self.assertEqual(request["questions"], [{
            "question": QUESTION, "header": "Choice", "multi_select": False, "allows_other": True,
            "options": [{"label": "Red", "description": "the red one"},
                        {"label": "Blue", "description": "the blue one"}]}], request)
        self.wait_state("waiting_for_input", 5, what="the session waits for the answer")
        r = self.tray.run("answer", request["id"], "--choice", "Purple", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('offers no "Purple"', r.stderr)
        self.assertEqual(self.wait_results(0, timeout=0), [], "nothing reached the model")
        r = self.tray.run("answer", request["id"], "--choice", "Blue")
        self.assertIn(f"answered {request['id']}", r.stdout)
        results = self.wait_results(1)
        self.assertEqual(len(results), 1, f"the answer reached the model; screen:\n{self.agent.screen()}")
        self.assertIn(f'"{QUESTION}"="Blue"', results[0])
        self.wait_state("idle", 20, what="idle after the answered question's turn")
        self.assertEqual(self.pending(), [])

    def test_two_questions_a_multi_select_and_own_words(self):
        request = self.ask("ASK MANY", r"Which database should the cache use\?")
        self.assertEqual([q["multi_select"] for q in request["questions"]], [False, True])
        self.tray.run("answer", request["id"], "--question", "1", "--text", "DuckDB",
                      "--question", "2", "--choice", "Redis", "--choice", "In-process")
        [result] = self.wait_results(1)
        self.assertIn('"Which database should the cache use?"="DuckDB"', result)
        self.assertIn('"Which caches should sit in front of it?"="Redis, In-process"', result)

    def test_declined_from_the_cli_the_question_is_dismissed(self):
        request = self.ask(f"ASK {QUESTION}", r"Which colour shall the file be\?")
        self.tray.run("deny", request["id"])
        self.wait_state(("working", "idle"), 20, what="the agent went on after the declined question")
        deadline = time.monotonic() + 10
        while self.pending() and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertEqual(self.pending(), [])
        self.assertFalse(any("Blue" in r or "Red" in r for r in chat_tool_results(self.agent.mock)),
                         "no answer was invented")

    def test_answered_in_the_terminal_first_our_request_is_gone_within_a_second(self):
        request = self.ask(f"ASK {QUESTION}", r"Which colour shall the file be\?")
        t = time.monotonic()
        self.agent.tmux.send_keys("Enter")  # OpenCode's first option, Red
        # Its dialog can drop an Enter that lands as it opens (seen on a loaded machine): one
        # more after 1.5 s, and the second counts from then (an Enter the dialog took and we
        # missed would make the later one land on an empty prompt, which does nothing).
        enters = 1
        while self.pending() and time.monotonic() - t < 5:
            if enters < 3 and time.monotonic() - t > 1.5:
                self.agent.tmux.send_keys("Enter")
                t, enters = time.monotonic(), enters + 1
            time.sleep(0.05)
        self.assertEqual(self.pending(), [], f"{request['id']} still listed after the terminal answered; "
                                             f"screen:\n{self.agent.screen()}")
        self.assertLess(time.monotonic() - t, 1.5)
        [result] = self.wait_results(1)
        self.assertIn(f'"{QUESTION}"="Red"', result, "the terminal's answer, not ours")


class ClaudeForms(Pending, ScenarioTest):
    """Claude Code 2.1.332 calls a stdio MCP server's tool, which asks for a form
    (`elicitation/create`); Claude's `Elicitation` hook lists it here, each field a question, and
    the answer reaches the MCP server as the form's content. The terminal shows no form while
    the hook waits, so this route is opt-in (`answering claude on --forms`)."""

    def start(self, opted_in=True, wait=30):
        from harness import form_mcp
        a = self.claude()
        self.agent = a
        self.tray.install("--claude")
        if opted_in:
            self.tray.run("answering", "claude", "on", "--forms", "--wait", str(wait))
        self.tray.start_daemon()
        self.tl = self.timeline()
        self.form_log = self.world.path("logs", "form-mcp.jsonl")
        config = self.world.path("mcp.json")
        with open(config, "w") as f:
            json.dump({"mcpServers": {"form": {"command": "python3", "args": [form_mcp.__file__],
                                               "env": {"FORM_MCP_LOG": self.form_log}}}}, f)
        a.start("--mcp-config", config, "--allowedTools", "mcp__form__ask_form")
        a.wait_ready()
        a.prompt("MCP mcp__form__ask_form")
        return a

    def results(self, n=1, timeout=20):
        from harness.form_mcp import form_results
        deadline = time.monotonic() + timeout
        while len(form_results(self.form_log)) < n and time.monotonic() < deadline:
            time.sleep(0.1)
        return form_results(self.form_log)

    def test_listed_refused_when_wrong_and_answered_from_the_cli_the_server_receives_the_content(self):
        a = self.start()
        request = self.wait_request_of("claude")
        self.assertEqual(request["kind"], "question", request)
        self.assertEqual(request["tool"], "MCP form of form")
        self.assertEqual(request["description"], "Name the new cache")
        self.assertEqual(request["questions"], [
            {"question": "Name: what to call it", "header": "name", "options": [],
             "multi_select": False, "allows_other": True},
            {"question": "Size", "header": "size", "multi_select": False, "allows_other": False,
             "options": [{"label": "small", "description": None}, {"label": "large", "description": None}]},
        ], request)
        self.wait_state("waiting_for_input", 5, what="the session waits for the form")
        rid = request["id"]
        for args, says in (((rid, "--question", "1", "--text", "hot", "--question", "2", "--choice", "huge"), 'offers no "huge"'),
                           ((rid, "--question", "1", "--text", "hot", "--question", "2", "--text", "medium"), "own words"),
                           ((rid, "--question", "1", "--text", "hot"), "asks 2 question(s) and 1 were answered")):
            r = self.tray.run("answer", *args, check=False)
            self.assertNotEqual(r.returncode, 0, r.stdout)
            self.assertIn(says, r.stderr)
        self.assertEqual(self.results(0, timeout=0), [], "nothing reached the MCP server after the refusals")
        r = self.tray.run("answer", rid, "--question", "1", "--text", "hot-cache", "--question", "2", "--choice", "large")
        self.assertIn(f"answered {rid}", r.stdout)
        self.assertEqual(self.results(1), [{"action": "accept", "content": {"name": "hot-cache", "size": "large"}}],
                         "the MCP server received the form's content, typed as its schema says")
        a.wait_turn_done("done")
        self.assertEqual(self.pending(), [])

    def test_declined_from_the_cli_the_server_receives_a_decline(self):
        self.start()
        request = self.wait_request_of("claude")
        self.tray.run("deny", request["id"])
        self.assertEqual(self.results(1), [{"action": "decline"}])
        self.agent.wait_turn_done("done")

    def test_cancelled_from_the_cli_the_server_receives_a_cancel(self):
        self.start()
        request = self.wait_request_of("claude")
        r = self.tray.run("answer", request["id"], "--cancel")
        self.assertIn(f"dismissed {request['id']}", r.stdout)
        [result] = self.results(1)
        self.assertEqual(result["action"], "cancel", result)  # Claude adds an empty `content`
        self.assertFalse(result.get("content"), "nothing filled in")
        self.agent.wait_turn_done("done")

    def test_nobody_answering_the_terminal_shows_the_form_at_the_wait(self):
        a = self.start(wait=3)
        self.wait_request_of("claude")
        t = time.monotonic()
        a.wait_for(r"requests your input", timeout=15, interval=0.05, what="the form in the terminal")
        print(f"\n  the terminal's form {time.monotonic() - t:.1f}s after the request was seen (the wait is 3 s)")
        self.assertEqual(self.results(0, timeout=0), [], "nothing invented at the deadline")
        deadline = time.monotonic() + 5
        while self.pending() and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertEqual(self.pending(), [], "the expired request is gone")

    def test_not_opted_in_the_form_is_in_the_terminal_at_once_and_nothing_is_pending(self):
        a = self.start(opted_in=False)
        a.wait_for(r"requests your input", timeout=15, interval=0.05, what="the form in the terminal")
        self.assertEqual(self.pending(), [])
        self.wait_state("waiting_for_input", 5, what="still shown as waiting for the user")

    def test_engine_killed_mid_wait_the_terminal_shows_the_form(self):
        a = self.start(wait=60)
        self.wait_request_of("claude")
        self.tray.stop_daemon(kill=True)
        a.wait_for(r"requests your input", timeout=10, interval=0.05, what="the form in the terminal after the engine died")
        self.assertEqual(self.results(0, timeout=0), [], "no invented answer when the engine dies")


def codex_tool_outputs(mock):
    """Each `function_call_output` a Responses model (Codex's) received, once, in order, as JSON:
    a request carries the whole conversation, so each call's output is taken the first time."""
    seen, out = set(), []
    for record in mock.requests:
        body = record.get("body")
        items = body.get("input") if isinstance(body, dict) else None
        for item in items if isinstance(items, list) else []:
            if isinstance(item, dict) and item.get("type") == "function_call_output" \
                    and item.get("call_id") not in seen:
                seen.add(item.get("call_id"))
                try:
                    out.append(json.loads(item.get("output")))
                except (TypeError, ValueError):
                    out.append(item.get("output"))
    return out


class CodexQuestions(Pending, ScenarioTest):
    """Codex 0.171 in tmux against the mock, in Plan mode (where it offers the model
    `request_user_input`), in its default mode (the shared background server): the server asks
    every client subscribed to the thread, our engine's feed among them, while the TUI shows its
    own question; the first answer wins. Our answer is proven by the tool output the model
    receives, read from the mock's log."""

    def ask(self, prompt, on_screen):
        from harness.agents import Agent
        a = self.setup_codex(hooks=True)
        a.start()
        a.wait_ready()
        # A first turn: the thread gets its rollout, and the engine's feed subscribes to it.
        a.prompt("hello")
        a.wait_turn_done("ok")
        # Shift+Tab: the TUI can drop it just after a turn; pressed again only while the mode
        # line has not changed (a second press that landed would cycle past Plan mode).
        for attempt in range(5):
            a.tmux.send_keys("BTab")
            try:
                a.wait_for(r"Plan mode", 2, what="codex in Plan mode (Shift+Tab)")
                break
            except ScreenTimeout:
                if attempt == 4:
                    raise
        # One Enter only: the harness's retry (for an Enter the composer dropped) would answer the
        # question's first option, since the sent prompt looks like the composer's line.
        Agent.prompt(a, prompt)
        a.wait_for(on_screen, timeout=30, interval=0.05, what="the question on screen")
        return self.wait_request_of("codex")

    def wait_outputs(self, n, timeout=20):
        deadline = time.monotonic() + timeout
        while len(codex_tool_outputs(self.agent.mock)) < n and time.monotonic() < deadline:
            time.sleep(0.1)
        return codex_tool_outputs(self.agent.mock)

    def test_listed_and_answered_from_the_cli_the_model_receives_the_label(self):
        request = self.ask(f"ASK {QUESTION}", r"Which colour shall the file be\?")
        a = self.agent
        self.assertEqual(request["kind"], "question", request)
        self.assertEqual(request["questions"], [{
            "question": QUESTION, "header": "Colour", "multi_select": False, "allows_other": True,
            "options": [{"label": "Red", "description": "warm"},
                        {"label": "Blue", "description": "cool"}]}], request)
        self.wait_state("waiting_for_input", 5, what="the session waits for the user's answer")
        rid = request["id"]
        for args, says in (((rid, "--choice", "Green"), 'offers no "Green"'),
                           ((rid, "--choice", "Red", "--choice", "Blue"), "takes one choice")):
            r = self.tray.run("answer", *args, check=False)
            self.assertNotEqual(r.returncode, 0, r.stdout)
            self.assertIn(says, r.stderr)
        r = self.tray.run("allow", rid, check=False)
        self.assertNotEqual(r.returncode, 0, "a question is never allowed")
        self.assertEqual(codex_tool_outputs(a.mock), [], "nothing reached the model after the refusals")
        self.assertIn(QUESTION, a.screen(), "the terminal still shows its own question")
        t = self.since()
        r = self.tray.run("answer", rid, "--choice", "Blue")
        self.assertIn(f"answered {rid}", r.stdout)
        a.wait_turn_done("done")
        self.assertEqual(self.wait_outputs(1), [{"answers": {"colour": {"answers": ["Blue"]}}}],
                         "the model received the chosen label under the question's id")
        self.wait_state("idle", 10, since=t, what="idle after the answered question's turn")
        self.assertEqual(self.pending(), [])
        r = self.tray.run("answer", rid, "--choice", "Red", check=False)
        self.assertNotEqual(r.returncode, 0, "a second answer to the same question is refused")

    def test_two_questions_one_in_own_words(self):
        request = self.ask("ASK MANY", r"Which database should the cache use\?")
        self.assertEqual([q["question"] for q in request["questions"]],
                         ["Which database should the cache use?", "How should old entries go?"])
        self.tray.run("answer", request["id"], "--question", "1", "--choice", "SQLite",
                      "--question", "2", "--text", "never, it is small")
        self.assertEqual(self.wait_outputs(1), [{"answers": {"database": {"answers": ["SQLite"]},
                                                             "eviction": {"answers": ["never, it is small"]}}}])

    def test_declined_from_the_cli_the_model_receives_no_answer(self):
        request = self.ask(f"ASK {QUESTION}", r"Which colour shall the file be\?")
        self.tray.run("deny", request["id"])
        self.assertEqual(self.wait_outputs(1), [{"answers": {}}], "declined: no answer, none invented")
        self.agent.wait_turn_done("done")
        self.assertEqual(self.pending(), [])

    def test_answered_in_the_terminal_first_our_request_is_gone_within_a_second(self):
        request = self.ask(f"ASK {QUESTION}", r"Which colour shall the file be\?")
        t = time.monotonic()
        self.agent.tmux.send_keys("Enter")  # the TUI's first option, Red
        while self.pending() and time.monotonic() - t < 5:
            time.sleep(0.05)
        self.assertEqual(self.pending(), [], f"{request['id']} still listed after the terminal answered")
        self.assertLess(time.monotonic() - t, 1.0 + 0.5)
        self.assertEqual(self.wait_outputs(1), [{"answers": {"colour": {"answers": ["Red"]}}}],
                         "the terminal's answer, not one of ours")
        r = self.tray.run("answer", request["id"], "--choice", "Blue", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("moved on", r.stderr)

    def test_engine_killed_mid_question_the_terminal_still_asks_and_answers(self):
        self.ask(f"ASK {QUESTION}", r"Which colour shall the file be\?")
        self.tray.stop_daemon(kill=True)
        time.sleep(0.5)
        self.assertEqual(codex_tool_outputs(self.agent.mock), [], "no invented answer when the engine dies")
        self.assertIn(QUESTION, self.agent.screen(), "the terminal still shows the question")
        self.agent.tmux.send_keys("Enter")
        self.assertEqual(self.wait_outputs(1), [{"answers": {"colour": {"answers": ["Red"]}}}],
                         "the terminal's own answer went through")


if __name__ == "__main__":
    import unittest
    unittest.main()
