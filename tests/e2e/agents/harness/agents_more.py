"""GitHub Copilot CLI and OpenCode, driven interactively in a private tmux server, each talking
to a ChatMock (OpenAI chat completions) on 127.0.0.1. Same shape as agents.ClaudeAgent:
configure, start, wait_ready, prompt, wait_permission, approve, escape, wait_turn_done, exit,
kill9.

Both run their native binaries directly, so the tmux pane's process is the agent itself.
"""
import json
import os
import shutil

from .agents import Agent
from .world import BASE, HERE

MORE = os.path.join(HERE, "more", "node_modules")


def opencode_config_seed():
    """The folder install.sh made with OpenCode's own config-folder install (@opencode-ai/plugin at
    OpenCode's version, in node_modules), or None when it is not there."""
    d = os.environ.get("OPENCODE_CONFIG_SEED") or os.path.join(HERE, "opencode-config")
    return d if os.path.isdir(os.path.join(d, "node_modules", "@opencode-ai", "plugin")) else None


def _link_or_copy(src, dst):
    try:
        os.link(src, dst)
    except OSError:  # another file system
        shutil.copy2(src, dst)


def copilot_bin():
    b = os.environ.get("COPILOT_BIN") or os.path.join(MORE, "@github", "copilot-linux-x64", "copilot")
    return b if os.access(b, os.X_OK) else None


KILO = os.path.join(HERE, "kilo", "node_modules")


def kilo_bin():
    """Kilo's native binary (the npm wrapper `kilo` is node, which would sit between tmux and it)."""
    b = os.environ.get("KILO_BIN") or os.path.join(KILO, "@kilocode", "cli-linux-x64", "bin", "kilo")
    return b if os.access(b, os.X_OK) else None


def opencode_bin():
    b = os.environ.get("OPENCODE_BIN") or os.path.join(MORE, "opencode-ai", "bin", "opencode.exe")
    return b if os.access(b, os.X_OK) else None


class CopilotAgent(Agent):
    """`copilot` 1.0.102 with COPILOT_OFFLINE and a BYOK provider on the mock."""
    name = "copilot"

    READY = r"/ commands"
    PERMISSION = r"Do you want to run this command\?"  # Enter picks the preselected "1. Yes"
    PERMISSION_TIMEOUT = 40
    PROMPT_PAUSE = 1.0  # the recipe: text, a second, then Enter
    APPROVE_SETTLE = 0.3

    @property
    def copilot_home(self):
        return os.path.join(self.world.home, ".copilot")

    def env(self):
        e = dict(self.world.env)
        e.update({
            "COPILOT_HOME": os.path.join(self.world.home, ".copilot"),
            "COPILOT_OFFLINE": "true",
            "COPILOT_PROVIDER_BASE_URL": f"{self.mock.base_url}/v1",
            "COPILOT_PROVIDER_TYPE": "openai",
            "COPILOT_PROVIDER_API_KEY": "dummy",
            "COPILOT_MODEL": "mock-model",
            "COPILOT_PROVIDER_MAX_PROMPT_TOKENS": "100000",
            "COPILOT_PROVIDER_MAX_OUTPUT_TOKENS": "4096",
            "COPILOT_AUTO_UPDATE": "false",
            # The binary unpacks itself (~235 MB) into $XDG_CACHE_HOME/copilot on first launch:
            # one cache shared by every world, so each test does not unpack it again.
            "XDG_CACHE_HOME": os.path.join(BASE, "cache-copilot"),
        })
        return e

    def configure(self):
        """$COPILOT_HOME/config.json: the project folder trusted (no folder-trust prompt)."""
        os.makedirs(self.copilot_home, exist_ok=True)
        p = os.path.join(self.copilot_home, "config.json")
        doc = {"trustedFolders": [self.cwd], "firstLaunchAt": "2026-01-01T00:00:00.000Z", "appTipShown": True}
        with open(p, "w") as f:
            json.dump(doc, f, indent=2)
        return self

    def start(self, *extra):
        b = copilot_bin()
        if not b:
            raise RuntimeError("copilot binary not found: run tests/e2e/agents/install.sh")
        return self._start([b, *extra])

    def wait_ready(self, timeout=40):
        return self.wait_for(self.READY, timeout, what="copilot prompt ready")

    def wait_turn_done(self, reply="done", timeout=40):
        return self.wait_for(r"\b" + reply + r"\b", timeout, what=f"copilot reply {reply!r}")

    def session_dirs(self):
        d = os.path.join(self.copilot_home, "session-state")
        try:
            return [os.path.join(d, n) for n in os.listdir(d) if os.path.isdir(os.path.join(d, n))]
        except OSError:
            return []


class OpenCodeAgent(Agent):
    """The `opencode` 1.18.33 TUI with a provider on the mock and `bash: ask`."""
    name = "opencode"

    READY = r"ctrl\+p commands"
    PERMISSION = r"Permission required"  # Enter is "Allow once" (the default highlight)
    PERMISSION_TIMEOUT = 60
    PROMPT_PAUSE = 1.0
    APPROVE_SETTLE = 0.3
    # The first prompt of a process takes ~8 s of lazy loading before the model call.
    WORKING_TIMEOUT = 60
    # Its config folder gets install.sh's install of its plugin SDK (`seed_config`).
    SEEDED = True

    def env(self):
        e = dict(self.world.env)
        e.update({
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
            "OPENCODE_DISABLE_SHARE": "1",
            "OPENCODE_DISABLE_CLAUDE_CODE": "1",
        })
        return e

    @property
    def config_dir(self):
        return os.path.join(self.world.env["XDG_CONFIG_HOME"], "opencode")

    def configure(self):
        os.makedirs(self.config_dir, exist_ok=True)
        doc = {
            "autoupdate": False, "share": "disabled",
            "provider": {"mock": {"npm": "@ai-sdk/openai-compatible", "name": "Mock",
                                  "options": {"baseURL": f"{self.mock.base_url}/v1", "apiKey": "dummy"},
                                  "models": {"mock-model": {"name": "Mock", "tool_call": True}}}},
            "model": "mock/mock-model", "small_model": "mock/mock-model",
            "permission": {"bash": "ask"},
        }
        with open(os.path.join(self.config_dir, "opencode.json"), "w") as f:
            json.dump(doc, f, indent=2)
        self.seed_config()
        return self

    def seed_config(self):
        """The config folder's npm install that OpenCode runs at its first start in a new home,
        done already (install.sh's, hard-linked): without it every test's OpenCode spends ~10 s of
        CPU and a 60 MB download before its first turn. `installed_anything` says whether
        OpenCode found it enough."""
        if not self.SEEDED:
            return
        seed = opencode_config_seed()
        if not seed:
            raise RuntimeError("OpenCode's config-folder install is missing: run tests/e2e/agents/install.sh")
        for name in ("package.json", "package-lock.json"):
            shutil.copy2(os.path.join(seed, name), os.path.join(self.config_dir, name))
        shutil.copytree(os.path.join(seed, "node_modules"), os.path.join(self.config_dir, "node_modules"),
                        symlinks=True, copy_function=_link_or_copy, dirs_exist_ok=True)

    def installed_anything(self):
        """What says OpenCode ran npm in this world (its cache under HOME), or None."""
        npm_cache = os.path.join(self.world.env["HOME"], ".npm")
        return npm_cache if self.SEEDED and os.path.exists(npm_cache) else None

    def start(self, *extra):
        b = opencode_bin()
        if not b:
            raise RuntimeError("opencode binary not found: run tests/e2e/agents/install.sh")
        return self._start([b, *extra])

    def wait_ready(self, timeout=60):
        return self.wait_for(self.READY, timeout, what="opencode prompt ready")

    def wait_turn_done(self, reply="done", timeout=60):
        return self.wait_for(r"\b" + reply + r"\b", timeout, what=f"opencode reply {reply!r}")


class KiloAgent(OpenCodeAgent):
    """The `kilo` 7.7.7 TUI (Kilo Code CLI, a fork of OpenCode: the same provider config, dialog
    and ready line) with a provider on the mock and `bash: ask`, in `$XDG_CONFIG_HOME/kilo`."""
    name = "kilo"
    SEEDED = False  # Kilo installs nothing in its config folder (it only asks npm for @kilocode/plugin's version)

    def env(self):
        e = dict(self.world.env)
        e.update({
            "KILO_DISABLE_AUTOUPDATE": "1",
            "KILO_DISABLE_MODELS_FETCH": "1",
            "KILO_DISABLE_LSP_DOWNLOAD": "1",
            "KILO_DISABLE_SHARE": "1",
            "KILO_DISABLE_CLAUDE_CODE": "1",
        })
        return e

    @property
    def config_dir(self):
        return os.path.join(self.world.env["XDG_CONFIG_HOME"], "kilo")

    def configure(self):
        super().configure()
        # OpenCode's document, under the name Kilo reads first.
        os.replace(os.path.join(self.config_dir, "opencode.json"), os.path.join(self.config_dir, "kilo.json"))
        return self

    def start(self, *extra):
        b = kilo_bin()
        if not b:
            raise RuntimeError("kilo binary not found: run tests/e2e/agents/install.sh")
        return self._start([b, *extra])

    def wait_ready(self, timeout=60):
        return self.wait_for(self.READY, timeout, what="kilo prompt ready")
