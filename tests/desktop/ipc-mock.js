// Stands in for the Tauri shell in a plain browser: implements the few internals that
// @tauri-apps/api calls (invoke, transformCallback, event listen) and records every command.
// Tests seed `window.__mock.snapshot` before load and drive events with `window.__mock.emit`.
(() => {
  const callbacks = new Map();
  const listeners = new Map(); // event name -> [callback id]
  let next = 1;
  const mock = {
    calls: [],
    snapshot: { seq: 1, sessions: [], engine: { kind: "running", socket: "/tmp/test.sock" }, settings: null, version: "0.0.0-test" },
    // holdSnapshot(): the next get_snapshot takes its copy at once but answers only on
    // releaseSnapshot(), as a snapshot computed while events are still on their way.
    held: null,
    holdSnapshot() {
      let release;
      mock.held = new Promise((resolve) => (release = resolve));
      mock.releaseSnapshot = release;
    },
    // holdAll(): every command from now on is recorded but answered only on releaseAll(), as a
    // shell whose main thread is busy; `answered` counts the answers given.
    gate: null,
    answered: 0,
    holdAll() {
      mock.gate = new Promise((resolve) => (mock.releaseAll = resolve));
    },
    // What the shell keeps of the window between a close and the next open.
    memory: { filter_text: "", filter_agent: null, selected: null, scroll_top: 0, open_settings: false, install_report: null, focus: null, focus_reply: false },
    installReport: { ok: true, output: "hooks installed for claude and codex" },
    // The history views: what the core answered over a scripted day (tests/fixtures/
    // window_views.json, written by a Rust test from a real store). get_history answers a query
    // with the core's answer to that same query; a query the file has no answer for is recorded
    // in `unanswered` (tests assert there is none) and answered with everything.
    views: { today: null, history: [], details: {}, queries: [] },
    unanswered: [],
    emit(event, payload) {
      for (const id of listeners.get(event) ?? []) {
        const cb = callbacks.get(id);
        if (cb) cb({ event, id, payload });
      }
    },
  };
  window.__mock = mock;
  window.__TAURI_EVENT_PLUGIN_INTERNALS__ = { unregisterListener() {} };
  window.__TAURI_INTERNALS__ = {
    metadata: { currentWindow: { label: "main" }, currentWebview: { windowLabel: "main", label: "main" } },
    transformCallback(cb) {
      const id = next++;
      callbacks.set(id, cb);
      return id;
    },
    unregisterCallback(id) {
      callbacks.delete(id);
    },
    convertFileSrc(path) {
      return path;
    },
    async invoke(cmd, args) {
      mock.calls.push({ cmd, args: JSON.parse(JSON.stringify(args ?? {})) });
      if (mock.gate) await mock.gate;
      mock.answered += 1;
      return mock.answer(cmd, args);
    },
  };
  // What the core's answering settings hold by default (Claude on, Codex opt-in).
  mock.answering = [
    { agent: "claude", enabled: true, wait_secs: 300, default_wait_secs: 300, max_wait_secs: 590, on_by_default: true, terminal_stays_open: true, accepts: { allow_for_session: true, deny_message: true } },
    { agent: "codex", enabled: false, wait_secs: 4, default_wait_secs: 4, max_wait_secs: 4, on_by_default: false, terminal_stays_open: false, accepts: { allow_for_session: false, deny_message: true } },
  ];
  mock.answer = async (cmd, args) => {
      switch (cmd) {
        case "plugin:event|listen": {
          const list = listeners.get(args.event) ?? [];
          list.push(args.handler);
          listeners.set(args.event, list);
          return args.handler;
        }
        case "plugin:event|unlisten":
          return null;
        case "get_snapshot": {
          const copy = JSON.parse(JSON.stringify(mock.snapshot));
          const gate = mock.held;
          mock.held = null;
          if (gate) await gate;
          return copy;
        }
        case "get_window_memory": {
          // As the shell does: the one-shot requests are handed over once.
          const taken = JSON.parse(JSON.stringify(mock.memory));
          Object.assign(mock.memory, { open_settings: false, install_report: null, focus: null, focus_reply: false });
          return taken;
        }
        case "save_window_memory":
          // As the shell does: the page saves its own state; the one-shots stay the shell's.
          mock.memory = { ...args.state, open_settings: mock.memory.open_settings, install_report: mock.memory.install_report, focus: mock.memory.focus, focus_reply: mock.memory.focus_reply };
          return null;
        case "install_hooks":
          return mock.installReport;
        case "save_settings":
          mock.snapshot.settings = args.settings;
          return null;
        case "get_today":
          if (!mock.views.today) throw { code: "history_unavailable", message: "no history in this test" };
          return JSON.parse(JSON.stringify(mock.views.today));
        case "get_history": {
          const q = args.query;
          const same = (a, b) => (a ?? null) === (b ?? null);
          const answer = mock.views.queries.find(
            (x) => x.query.search.toLowerCase() === q.search.trim().toLowerCase() && same(x.query.agent, q.agent) && same(x.query.project, q.project),
          );
          if (!answer) mock.unanswered.push(q);
          const ids = answer ? answer.ids : mock.views.history.map((e) => e.session.session_id);
          return ids.map((id) => mock.views.history.find((e) => e.session.session_id === id));
        }
        case "get_session_detail":
          return JSON.parse(JSON.stringify(mock.views.details[args.sessionId] ?? null));
        // The core's checks stand in as its refusal for a name with a space; an accepted change
        // shows in the next snapshot, as the engine's reload would make it.
        case "add_remote":
          if (/\s/.test(args.name)) {
            throw { code: "settings_not_saved", message: `a remote name is 1 to 64 ASCII letters, digits, '-', '_' or '.', beginning with a letter or a digit; ${JSON.stringify(args.name)} is not` };
          }
          mock.snapshot.remotes = [...(mock.snapshot.remotes ?? []), { name: args.name, destination: args.destination, state: "connecting", since: new Date().toISOString(), message: null, sessions: 0, remote_version: null }];
          return null;
        case "remove_remote":
          mock.snapshot.remotes = (mock.snapshot.remotes ?? []).filter((r) => r.name !== args.name);
          return null;
        case "jump_to_session":
        case "reveal_transcript":
        case "dismiss_session":
        case "hide_window":
        case "open_main_window":
        case "hide_popover":
          return null;
        case "get_answering":
          return JSON.parse(JSON.stringify(mock.answering));
        case "set_answering": {
          const c = mock.answering.find((x) => x.agent === args.agent);
          Object.assign(c, { enabled: args.enabled, wait_secs: args.waitSecs });
          return JSON.parse(JSON.stringify(c));
        }
        // Talking back: `talkRefusal` stands in for the engine's refusal (its code and sentence).
        case "send_prompt":
        case "stop_turn":
          if (mock.talkRefusal) throw mock.talkRefusal;
          return null;
        case "answer_request":
        case "answer_question":
          if (mock.answerRefusal) throw mock.answerRefusal;
          return null;
        default:
          throw { code: "unknown_command", message: `the mock does not know ${cmd}` };
      }
  };
})();
