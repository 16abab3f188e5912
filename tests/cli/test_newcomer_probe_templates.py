"""`mcpframe probe` lists resource templates too.

The README's first server has one resource, `@server.resource("notes://{name}")`: a template, so the probe
said `resources:    0` and a newcomer wondered where it went. A server that has the resources capability
but no `resources/templates/list` (older servers) still gets its report, with `templates: null`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest

from .conftest import child_env

pytestmark = pytest.mark.anyio

PROBE = [sys.executable, "-m", "mcpframe", "probe"]

SERVER = """\
from mcpframe.server import Server

server = Server("demo", version="1.0.0")


@server.tool
def add(a: int, b: int) -> int:
    return a + b


@server.resource("notes://{name}")
def note(name: str) -> str:
    return f"the note called {name}"


if __name__ == "__main__":
    server.run()
"""

# resources, but no templates method: -32601 for it (and for server/discover, so the client falls back)
NO_TEMPLATES = """\
import json, sys
answers = {
    "initialize": {
        "protocolVersion": "2025-06-18",
        "capabilities": {"resources": {}},
        "serverInfo": {"name": "old", "version": "0.1"},
    },
    "resources/list": {"resources": [{"uri": "old://one", "name": "one"}]},
}
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    if m["method"] in answers:
        out = {"jsonrpc": "2.0", "id": m["id"], "result": answers[m["method"]]}
    else:
        out = {"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "Method not found"}}
    print(json.dumps(out), flush=True)
"""


async def _probe(where: Path, source: str, *flags: str) -> str:
    (where / "server.py").write_text(source, encoding="utf-8")
    with anyio.fail_after(120):
        done = await anyio.run_process(
            [*PROBE, *flags, "--", sys.executable, str(where / "server.py")], env=child_env(), check=False
        )
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


async def test_a_template_is_listed(tmp_path: Path) -> None:
    lines = (await _probe(tmp_path, SERVER)).splitlines()
    assert "resources:    0" in lines
    assert "templates:    1  notes://{name}" in lines
    assert "resources/templates/list" in lines[-1]


async def test_a_server_without_the_method_still_gets_its_report(tmp_path: Path) -> None:
    report = json.loads(await _probe(tmp_path, NO_TEMPLATES, "--json"))
    assert report["resources"] == {"count": 1, "names": ["old://one"]}
    assert report["templates"] is None
    assert report["tools"] is None


@pytest.mark.parametrize("code", [-32601, -32602, -32603])
async def test_templates_refused_in_any_way_print_not_supported(tmp_path: Path, code: int) -> None:
    # a quirky server refusing templates/list with another code must not fail a probe that passed before
    source = NO_TEMPLATES.replace('"code": -32601', f'"code": {code}')
    lines = (await _probe(tmp_path, source)).splitlines()
    assert "resources:    1  old://one" in lines
    assert "templates:    (not supported)" in lines
    assert "tools:        (no capability)" in lines
