"""A trivial recording hook: a shell script that stores each call in its own files.

For every call it writes, under <dir>:
  <ns>-<pid>.meta     first line: the label given on the command line (event group);
                      then the hook's ancestry, one "pid comm" line per process, parent first;
                      then the env vars AGENT_TRAY_HOME / XDG_RUNTIME_DIR / HOME / CLAUDE_CONFIG_DIR / CODEX_HOME
  <ns>-<pid>.argv     the argv, one argument a line (Codex's notify passes JSON as the last one)
  <ns>-<pid>.payload  stdin, byte for byte (written last, renamed into place)
One file set per call, so parallel hooks never interleave.
"""
import glob
import hashlib
import json
import os
import stat

SCRIPT = r"""#!/bin/sh
d=%(dir)s
n="$(date +%%s%%N)-$$"
{
  echo "$1"
  p=$PPID
  i=0
  while [ "$p" -gt 1 ] 2>/dev/null && [ $i -lt 8 ]; do
    echo "$p $(cat /proc/$p/comm 2>/dev/null)"
    p=$(ps -o ppid= -p "$p" 2>/dev/null | tr -d ' ')
    i=$((i+1))
  done
  echo "--env"
  for v in AGENT_TRAY_HOME XDG_RUNTIME_DIR HOME CLAUDE_CONFIG_DIR CODEX_HOME; do
    eval "echo $v=\${$v-<unset>}"
  done
} > "$d/.$n.meta" 2>/dev/null
printf '%%s\n' "$@" > "$d/.$n.argv"
if [ "$1" = "NOTIFY" ]; then : > "$d/.$n.payload"; else cat > "$d/.$n.payload"; fi
mv "$d/.$n.meta" "$d/$n.meta"; mv "$d/.$n.argv" "$d/$n.argv"; mv "$d/.$n.payload" "$d/$n.payload"
exit 0
"""


class Recorder:
    def __init__(self, world):
        self.dir = world.path("hook-records")
        os.makedirs(self.dir, exist_ok=True)
        self.script = os.path.join(world.bin, "record-hook")
        with open(self.script, "w") as f:
            f.write(SCRIPT % {"dir": self.dir})
        os.chmod(self.script, 0o755)

    def records(self):
        """All complete calls, oldest first: dicts with label, ancestry [(pid, comm)],
        env {..}, argv [..], payload (parsed JSON or raw str), t (ns)."""
        out = []
        for meta in sorted(glob.glob(os.path.join(self.dir, "*.meta")), key=lambda p: int(os.path.basename(p).split("-")[0])):
            base = meta[:-5]
            if not os.path.exists(base + ".payload"):
                continue
            lines = open(meta).read().splitlines()
            label = lines[0] if lines else ""
            anc, env, in_env = [], {}, False
            for ln in lines[1:]:
                if ln == "--env":
                    in_env = True
                elif in_env and "=" in ln:
                    k, v = ln.split("=", 1)
                    env[k] = v
                elif ln.strip():
                    pid, _, comm = ln.partition(" ")
                    anc.append((int(pid) if pid.isdigit() else pid, comm))
            raw = open(base + ".payload", "rb").read().decode("utf-8", "replace")
            try:
                payload = json.loads(raw) if raw.strip() else None
            except ValueError:
                payload = raw
            argv = open(base + ".argv").read().splitlines()
            out.append({"label": label, "ancestry": anc, "env": env, "argv": argv, "payload": payload,
                        "t": int(os.path.basename(base).split("-")[0])})
        return out

    def events(self):
        """hook_event_name of every hook call (notify calls as 'notify:<type>')."""
        ev = []
        for r in self.records():
            if r["label"] == "NOTIFY":
                try:
                    ev.append("notify:" + json.loads(r["argv"][-1]).get("type", "?"))
                except (ValueError, IndexError):
                    ev.append("notify:?")
            elif isinstance(r["payload"], dict):
                ev.append(r["payload"].get("hook_event_name", "?"))
            else:
                ev.append("?")
        return ev


CLAUDE_EVENTS = ["SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "Notification",
                 "PostToolUse", "PostToolUseFailure", "Stop", "StopFailure", "SubagentStart", "SubagentStop",
                 "PreCompact", "PostCompact", "SessionEnd"]
_TOOL_EVENTS = {"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest"}


def install_claude_recording_hooks(world, recorder):
    """Registers the recorder for every Claude event in $CLAUDE_CONFIG_DIR/settings.json (merging)."""
    p = os.path.join(world.claude_config_dir, "settings.json")
    settings = json.load(open(p)) if os.path.exists(p) else {}
    hooks = settings.setdefault("hooks", {})
    for e in CLAUDE_EVENTS:
        entry = {"type": "command", "command": f"{recorder.script} {e}"}
        group = {"matcher": "*", "hooks": [entry]} if e in _TOOL_EVENTS else {"hooks": [entry]}
        hooks.setdefault(e, []).append(group)
    with open(p, "w") as f:
        json.dump(settings, f, indent=2)


CODEX_EVENTS = {"SessionStart": "session_start", "UserPromptSubmit": "user_prompt_submit",
                "PreToolUse": "pre_tool_use", "PermissionRequest": "permission_request",
                "PostToolUse": "post_tool_use", "Stop": "stop", "Interrupt": "interrupt",
                "SessionEnd": "session_end"}


def codex_trust_hash(event_snake, group):
    """sha256 over the compact, key-sorted JSON of a hooks.json group, as Codex 0.169 computes it."""
    hooks = []
    for h in group["hooks"]:
        default_timeout = 1 if event_snake in ("session_end", "interrupt") else 600
        hooks.append({"type": h.get("type", "command"), "command": h["command"],
                      "timeout": h.get("timeout", default_timeout), "async": h.get("async", False)})
    canon = {"event_name": event_snake, "hooks": hooks}
    if "matcher" in group:
        canon["matcher"] = group["matcher"]
    data = json.dumps(canon, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(data.encode()).hexdigest()


def install_codex_recording_hooks(world, recorder, notify=True):
    """Registers (and trusts) the recorder for every Codex event in $CODEX_HOME/hooks.json,
    and as the `notify` program. Appends to config.toml (written by CodexAgent.configure)."""
    hp = os.path.join(world.codex_home, "hooks.json")
    doc = json.load(open(hp)) if os.path.exists(hp) else {}
    hooks = doc.setdefault("hooks", {})
    trust = []
    for e, snake in CODEX_EVENTS.items():
        groups = hooks.setdefault(e, [])
        group = {"hooks": [{"type": "command", "command": f"{recorder.script} {e}"}]}
        groups.append(group)
        gi = len(groups) - 1
        trust.append(f'[hooks.state."{hp}:{snake}:{gi}:0"]\ntrusted_hash = "{codex_trust_hash(snake, group)}"\n')
    with open(hp, "w") as f:
        json.dump(doc, f, indent=2)
    cp = os.path.join(world.codex_home, "config.toml")
    text = open(cp).read() if os.path.exists(cp) else ""
    if notify:
        # notify is a top-level key: it must come before the first [table].
        text = f'notify = ["{recorder.script}", "NOTIFY"]\n' + text
    text += "\n" + "\n".join(trust)
    with open(cp, "w") as f:
        f.write(text)
