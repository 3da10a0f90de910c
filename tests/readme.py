"""README.md's code blocks, read in order and run as printed in a fresh folder.

A block is run by its language: a Python block whose first line is ``# NAME.py`` is
that file (``# NAME.py (continued)`` adds to it), any other Python block is a script
run with the folder's ``.venv/bin/python``, and a shell block runs in bash with the
exports of the blocks before it (as in one terminal). An HTML comment right before a
block changes that: ``<!-- readme-test: skip (why) -->`` leaves it out and
``<!-- readme-test: background -->`` starts it and leaves it running (a worker, a
server) until the end. What a line says it prints (``# prints X``, up to two spaces or
the line's end) must be a line of what the block printed.

Three things differ from a reader's terminal, each so that the test cannot collide
with what else runs on the machine: the server listens on a free port instead of 5017
(``ROTA_URL`` says which; ``127.0.0.1:5017`` in a block is read as that port), and the
PostgreSQL URL ``postgresql://postgres@127.0.0.1:5432/test`` is the test's own fresh
database."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.helpers import REPO, wait_until

README_PORT = "127.0.0.1:5017"
README_POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"
BLOCK = re.compile(
    r"(?:<!-- readme-test: (?P<mark>skip|background)(?: \((?P<why>[^\n]*?)\))? -->\n)?"
    r"^```(?P<lang>\w*)\n(?P<body>.*?)^```",
    re.DOTALL | re.MULTILINE,
)
PRINTS = re.compile(r"# prints:? (.*?)(?:  |$)", re.MULTILINE)
BLOCK_TIMEOUT = 120  # seconds: one block, however it hangs
EXPORTS = "if [ -f .exports ]; then source .exports; fi"  # what earlier blocks exported
FILE_LINE = re.compile(r"# (\w+\.py)( \(continued\))?\n")


@dataclass(frozen=True)
class Block:
    line: int  # in README.md, for messages
    lang: str
    body: str
    mark: str | None
    why: str | None

    @property
    def name(self) -> str:
        return f"README.md:{self.line} ({self.lang}: {self.body.splitlines()[0][:60]})"


def blocks(text: str | None = None) -> list[Block]:
    text = (REPO / "README.md").read_text() if text is None else text
    return [
        Block(text.count("\n", 0, m.start("body")), m["lang"], m["body"], m["mark"], m["why"])
        for m in BLOCK.finditer(text)
    ]


@dataclass
class Reader:
    """A reader going through the README in ``folder``, with rota's ``.venv`` linked in."""

    folder: Path
    port: int
    postgres_url: str
    background: list[subprocess.Popen[bytes]] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)  # the background ones, as run
    spawned: int = 0
    outputs: list[tuple[Block, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        (self.folder / ".venv").symlink_to(REPO / ".venv")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("ROTA_")}
        self.env.update(ROTA_URL=f"http://127.0.0.1:{self.port}", PYTHONUNBUFFERED="1")

    def as_here(self, body: str) -> str:
        body = body.replace(README_PORT, f"127.0.0.1:{self.port}")
        return body.replace(README_POSTGRES, self.postgres_url)

    def run(self, block: Block) -> None:
        body = self.as_here(block.body)
        if block.mark == "background":
            self._start(block, body)
            return
        if block.lang == "python":
            if named := FILE_LINE.match(body):
                with (self.folder / named[1]).open("a" if named[2] else "w") as file:
                    file.write(("\n" if named[2] else "") + body)
                if named[2]:
                    self._restart()  # as the README asks after new handlers
                return
            (self.folder / "block.py").write_text(body)
            command = ["bash", "-c", f"{EXPORTS}\nexec .venv/bin/python block.py"]
        elif block.lang == "sh":
            (self.folder / "block.sh").write_text(
                f"set -euo pipefail\n{EXPORTS}\n" + body + "\nexport -p > .exports\n"
            )
            command = ["bash", "block.sh"]
        else:
            raise AssertionError(f"{block.name}: no way to run {block.lang!r}; mark it skip")
        ran = subprocess.run(
            command,
            cwd=self.folder,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=BLOCK_TIMEOUT,
        )
        assert ran.returncode == 0, f"{block.name} failed:\n{ran.stdout}\n{ran.stderr}"
        printed = ran.stdout.splitlines()
        for promised in PRINTS.findall(body):
            if "<" not in promised:  # "<run id> succeeded" names no fixed text
                assert promised.strip() in printed, f"{block.name}: no {promised!r} in {printed}"
        self.outputs.append((block, ran.stdout))

    def _start(self, block: Block, body: str) -> None:
        if "rota server" in body:
            body = body.rstrip("\n") + f" --port {self.port}\n"
        self.commands.append(body.strip())
        self.background.append(self._spawn(body.strip()))

    def _spawn(self, command: str) -> subprocess.Popen[bytes]:
        self.spawned += 1
        with (self.folder / f"background-{self.spawned}.log").open("ab") as log:
            proc = subprocess.Popen(
                ["bash", "-c", f"exec {command}"],
                cwd=self.folder,
                env=self.env,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        if "rota server" in command:
            self._wait_for_server(proc)
        return proc

    def _restart(self) -> None:
        """Stop every worker and server (SIGTERM: they hand back what they hold) and
        start each again, so they know what tasks.py has now."""
        self.stop()
        self.background = [self._spawn(command) for command in self.commands]

    def _wait_for_server(self, proc: subprocess.Popen[bytes]) -> None:
        def answering() -> bool:
            assert proc.poll() is None, f"the server exited: {self.logs()}"
            try:
                url = f"http://127.0.0.1:{self.port}/health/live"
                return httpx.get(url, timeout=1).status_code == 200
            except httpx.TransportError:
                return False

        wait_until(answering, timeout=60, what="the README's server to answer")

    def logs(self) -> str:
        return "\n".join(p.read_text()[-3000:] for p in self.folder.glob("background-*.log"))

    def stop(self) -> None:
        """SIGTERM every background process (their groups), then SIGKILL what is left."""
        for proc in self.background:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.background:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
