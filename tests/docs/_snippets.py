"""The code blocks of the README and the guides, and the `<!-- run: ... -->` marker saying how each runs.

A marker is an HTML comment on the line just above a fenced block (invisible on GitHub and on the site):

- `server; call NAME {json} -> TEXT`: the block is a server module; it is served over stdio as a child
  process and the tool NAME called with those arguments must answer TEXT.
- `script; stdout-has "TEXT"`: the block is a program; run next to the page's last server block saved as
  `server.py`, it must end with status 0 and print TEXT.
- `async (server)`, `async (http)`, `async (server, http)`: the block runs with top-level `await`, in the
  namespace of the page's last server block (imported, not run as `__main__`); `http` serves that block with
  `mcpframe serve server.py --http --auth-token s3cret` and points the block's URL at it.
- `core`: the block runs with `chunk` (bytes from a peer) and `writer` (collects what it writes).
- `child`: the block runs as a program in a child process and must end with status 0.
- `sdk-app; call NAME {json} -> TEXT`: the block serves an official-SDK app `app` (defined by the test);
  it runs as a child and the tool must answer TEXT.
- `sh`: each line of a shell block runs and must end with status 0 (only cheap commands are marked).
- `sh (server)`: each line runs in a directory holding the page's last server block as `server.py`, with
  a handshake and a `tools/list` on stdin; it must end with status 0 and print the server's tools
  (`tests/docs/test_shell_with_server.py`).
- `no: REASON`: not run (a fragment); the reason is shown.
- `(private-fastmcp)` after the kind, e.g. `server (private-fastmcp); call ...`: the block serves a FastMCP
  app on the engine, which reaches it through fastmcp's private names only; where mcpframe took the public
  fallback (`MCPFRAME_PUBLIC_ONLY=1`, another fastmcp release) it is skipped, with that reason.

Every python block of a checked page must have a marker, so a new block cannot go untested by accident.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_FENCE = re.compile(r"^```(\w*)\s*$")
_MARKER = re.compile(r"^<!--\s*run:\s*(.*?)\s*-->\s*$")
_CALL = re.compile(r"call (\S+) (\{.*\}) -> (.*)$")
_HAS = re.compile(r'stdout-has "(.*)"$')


@dataclass(frozen=True)
class Call:
    """A tool call a server block must answer: name, arguments, the expected text."""

    name: str
    arguments: dict[str, Any]
    expected: str


@dataclass(frozen=True)
class Block:
    """One fenced block: where it is, its language, its marker (None without one), its text."""

    page: str
    line: int
    language: str
    marker: str | None
    source: str
    server: str | None = field(default=None, compare=False)
    """The page's last `server` block above this one (the module `async`/`script` blocks run against)."""

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def mode(self) -> str:
        """The marker's first word (`server`, `script`, `async`, ...); `unmarked` without a marker."""
        if self.marker is None:
            return "unmarked"
        return re.split(r"[;:\s(]", self.marker, maxsplit=1)[0]

    @property
    def needs(self) -> set[str]:
        """What the block runs against or needs: `server`, `http` (an `async` block), `private-fastmcp`."""
        # the first parentheses only: the text a call must answer may hold some too
        found = re.search(r"\((.*?)\)", self.marker or "")
        return {part.strip() for part in found.group(1).split(",")} if found else set()

    @property
    def call(self) -> Call | None:
        found = _CALL.search(self.marker or "")
        if found is None:
            return None
        return Call(found.group(1), json.loads(found.group(2)), found.group(3).strip())

    @property
    def stdout_has(self) -> str | None:
        found = _HAS.search(self.marker or "")
        return found.group(1) if found else None


def blocks(path: Path, root: Path) -> list[Block]:
    """Every python and sh block of the Markdown file `path`, in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    server: str | None = None
    index = 0
    while index < len(lines):
        fence = _FENCE.match(lines[index])
        if fence is None or not fence.group(1):
            index += 1
            continue
        start = index
        index += 1
        body: list[str] = []
        while index < len(lines) and lines[index].rstrip() != "```":
            body.append(lines[index])
            index += 1
        index += 1
        language = fence.group(1)
        if language not in ("python", "sh"):
            continue
        above = lines[start - 1] if start > 0 else ""
        marker = _MARKER.match(above)
        block = Block(
            page=str(path.relative_to(root)),
            line=start + 1,
            language=language,
            marker=marker.group(1) if marker else None,
            source="\n".join(body) + "\n",
            server=server,
        )
        if block.mode == "server":
            server = block.source
        found.append(block)
    return found


__all__ = ["Block", "Call", "blocks"]
