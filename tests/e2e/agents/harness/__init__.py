"""End-to-end harness: real Claude Code and Codex in tmux against loopback mocks.

Modules:
  mockbase, mock_anthropic, mock_openai  the mock model servers
  tmux        a private tmux server per test
  world       private HOME / config dirs / cleanup of every process started
  agents      ClaudeAgent, CodexAgent: start, prompt, approve, Esc, exit, kill -9
  recorder    a trivial recording hook (one file per hook call)
  tray        agent-tray CLI driver: install, daemon, `list --json` timeline
  window      the real desktop app under Xvfb, its rows read through WebKitWebDriver
"""
