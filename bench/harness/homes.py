"""The two contestants: where their binaries are, their HERMES_HOME, environment and config.

Each gets its own temporary HERMES_HOME (also HOME, so nothing of the machine's user leaks in)
whose config.yaml selects the mock model as a `custom` OpenAI-compatible provider, and a
working directory holding `bench.txt` (the file the scripted tool call reads).
"""

import json
import os
import tempfile
import time
from pathlib import Path

PEER_VERSION = "0.19.0"

OURS_CONFIG = """model:
  provider: custom
  base_url: {base_url}
  default: bench-tool
"""

# Python Hermes: the same model section, plus
# - context_length: without it, it probes the endpoint and OpenRouter's model list (DNS
#   failure without network) for the context size at every start;
# - security.tirith_enabled: false: otherwise every start tries to download the `tirith`
#   scanner binary (no network here; a user without the binary gets the same fallback).
PEER_CONFIG = """model:
  provider: custom
  base_url: {base_url}
  default: bench-tool
  context_length: 200000
security:
  tirith_enabled: false
"""


class Contestant:
    def __init__(self, name, label, argv0, config, root, prompt, quit_line="/quit"):
        self.name = name
        self.label = label
        self.argv0 = argv0
        self.prompt = prompt
        self.quit_line = quit_line
        self.home = Path(tempfile.mkdtemp(prefix=f"hb-{name}-home-", dir=root))
        self.cwd = Path(tempfile.mkdtemp(prefix=f"hb-{name}-cwd-", dir=root))
        (self.cwd / "bench.txt").write_text("hello from the benchmark\n")
        (self.home / "config.yaml").write_text(config)
        if name == "peer":
            # `hermes --version` checks PyPI for a newer release unless this 6-hour cache is
            # fresh; seeding it keeps every run offline (and measures the cached path).
            cache = {"ts": time.time(), "behind": 0, "rev": None, "ver": PEER_VERSION}
            (self.home / ".update_check").write_text(json.dumps(cache))

    def env(self):
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "HERMES_HOME": str(self.home),
            "LANG": "C.UTF-8",
            "TERM": "xterm-256color",
            "NO_COLOR": "1",
        }

    def argv(self, *args):
        return [self.argv0, *args]

    def db_bytes(self):
        return sum(
            p.stat().st_size
            for p in self.home.glob("state.db*")
            if p.is_file()
        )


def ours(binary, base_url, root):
    # The REPL's prompt: the default skin's prompt symbol (`branding.prompt_symbol`).
    return Contestant("ours", "hermes (Rust)", str(binary),
                      OURS_CONFIG.format(base_url=base_url), root, prompt="❯ ")


def peer(venv, base_url, root):
    # The idle prompt of its prompt_toolkit REPL (the busy one reads "⚕ ❯ msg=interrupt").
    return Contestant("peer", f"Python Hermes {PEER_VERSION}", str(Path(venv) / "bin" / "hermes"),
                      PEER_CONFIG.format(base_url=base_url), root, prompt="\n❯ ")
