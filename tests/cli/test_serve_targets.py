"""`mcpframe serve TARGET`: every target form, served by a real child answering `initialize` + `tools/call`.

Each project's server has a `which` tool naming the server object, so a test sees which one was picked.
The target resolution rules (default names, the one-instance fallback) are also checked in-process, where
a case costs no child.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpframe._unstable import Choice
from mcpframe.cli.target import load_target
from mcpframe.client import Client
from mcpframe.server import Server

from .conftest import SERVE, child_env, write_project

pytestmark = pytest.mark.anyio

PROJECT = {
    "helpers.py": """
        NAME = "file-default"
    """,
    "server.py": """
        import logging

        from helpers import NAME  # a neighbour: the file's directory is first on sys.path
        from mcpframe.server import Server

        print("printed while importing")  # on stdio this must not reach the client as a frame
        logging.getLogger("user").info("logged while importing")

        server = Server(NAME)
        other = Server("not me")


        @server.tool
        def which() -> str:
            logging.getLogger("user").debug("which was called")
            return NAME
    """,
    "apps/factory.py": """
        from mcpframe.server import Server


        async def create() -> Server:
            server = Server("async-factory")
            server.tool(lambda: "async-factory", name="which")
            return server
    """,
    "pkg/__init__.py": "",
    "pkg/mod.py": """
        from mcpframe.server import Server

        mcp = Server("pkg-mod")
        mcp.tool(lambda: "pkg-mod", name="which")
    """,
    "pkg/named.py": """
        from mcpframe.server import Server

        instance = Server("module-attr")
        instance.tool(lambda: "module-attr", name="which")
    """,
    "sdk_app.py": """
        from mcp.server.mcpserver import MCPServer

        mcp = MCPServer("sdk")


        @mcp.tool()
        def which() -> str:
            return "sdk-mcpserver"
    """,
    "fm_app.py": """
        from fastmcp import FastMCP

        app = FastMCP("fm")


        @app.tool
        def which() -> str:
            return "fastmcp"
    """,
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_project(tmp_path_factory.mktemp("project"), PROJECT)


async def serve_and_call(project: Path, *args: str) -> tuple[dict[str, Any], str, str]:
    """`mcpframe serve ARGS` in `project`: the server info, `which`'s answer, the child's stderr."""
    errors = project / "stderr.txt"
    with errors.open("w") as stderr, anyio.fail_after(60):
        async with Client.stdio(
            SERVE[0], [*SERVE[1:], *args], cwd=project, env=child_env(), stderr=stderr, mode="legacy"
        ) as client:
            info = dict(client.server_info or {})
            result = await client.call_tool("which", {})
    return info, result["content"][0]["text"], errors.read_text()


async def test_a_file_with_the_default_name_and_a_neighbour_import(project: Path) -> None:
    info, which, stderr = await serve_and_call(project, "server.py", "--log-level", "debug")
    assert (info["name"], which) == ("file-default", "file-default")
    assert "printed while importing" in stderr  # the print went to stderr, and the client still answered
    assert "DEBUG user: which was called" in stderr  # --log-level reaches the user's loggers, on stderr
    assert "INFO user: logged while importing" in stderr  # the flag is applied before the import


async def test_a_path_and_an_async_factory(project: Path) -> None:
    info, which, _ = await serve_and_call(project, "apps/factory.py:create")
    assert (info["name"], which) == ("async-factory", "async-factory")


async def test_a_package_module_with_the_name_mcp(project: Path) -> None:
    info, which, _ = await serve_and_call(project, "pkg.mod")
    assert (info["name"], which) == ("pkg-mod", "pkg-mod")


async def test_module_colon_attribute(project: Path) -> None:
    info, which, stderr = await serve_and_call(project, "pkg.named:instance", "--stdio")
    assert (info["name"], which) == ("module-attr", "module-attr")
    assert stderr == ""  # an mcpframe Server is served quietly


async def test_an_sdk_mcpserver_is_served_on_the_engine(project: Path) -> None:
    pytest.importorskip("mcp.server.mcpserver")
    info, which, stderr = await serve_and_call(project, "sdk_app.py")
    assert (info["name"], which) == ("sdk", "sdk-mcpserver")
    assert stderr.splitlines()[0] == (
        "mcpframe serve: sdk_app.py:mcp is an MCPServer app: serving it on mcpframe's engine "
        "(the mcpframe.compat drop-in)"
    )


def _fastmcp_choice() -> Choice | None:
    """mcpframe's path for fastmcp (the children inherit this environment, so they choose the same), or
    None without fastmcp (``mcp_sdk`` needs ``mcp``, which fastmcp brings)."""
    if importlib.util.find_spec("fastmcp") is None:
        return None
    from mcpframe._unstable import mcp_sdk  # noqa: PLC0415 - needs mcp

    return mcp_sdk.FASTMCP_CHOICE


FASTMCP = _fastmcp_choice()
needs_fastmcp = pytest.mark.skipif(FASTMCP is None, reason="fastmcp is not installed")
needs_private_fastmcp = pytest.mark.skipif(
    FASTMCP is None or not FASTMCP.private,
    reason="the engine serves a FastMCP app through fastmcp's private names, off here: "
    + (FASTMCP.reason if FASTMCP is not None else "fastmcp is not installed"),
)
"""As ``tests/compat/_support.py``'s marker of that name, without importing ``mcp`` where it is absent."""


@needs_private_fastmcp
async def test_a_fastmcp_app_is_served_on_the_engine(project: Path) -> None:
    info, which, stderr = await serve_and_call(project, "fm_app.py", "--transport", "stdio")
    assert (info["name"], which) == ("fm", "fastmcp")
    assert stderr.splitlines()[0] == (
        "mcpframe serve: fm_app.py:app is a FastMCP app: serving it on mcpframe's engine "
        "(the mcpframe.compat drop-in)"
    )


@needs_fastmcp
def test_a_fastmcp_app_without_fastmcps_private_names_is_one_line_and_status_1(project: Path) -> None:
    """Under MCPFRAME_PUBLIC_ONLY the engine cannot reach a FastMCP app's SDK server: the command says so
    and what to do, in one line, and starts nothing (no traceback, nothing on stdout)."""
    child = subprocess.run(
        [*SERVE, "fm_app.py"],
        cwd=project,
        env=child_env(MCPFRAME_PUBLIC_ONLY="1"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert child.returncode == 1
    assert child.stdout == ""
    (only,) = child.stderr.splitlines()
    assert only.startswith(
        "mcpframe serve: fm_app.py:app is a FastMCP app, which mcpframe's engine serves only through "
        "fastmcp's private names, off here because MCPFRAME_PUBLIC_ONLY is set (fastmcp "
    )
    assert only.endswith(
        "unset MCPFRAME_PUBLIC_ONLY, or run it with fastmcp's own runner (fastmcp run fm_app.py:app)"
    )


# ------------------------------------------------------------------ resolution rules, in-process

RULES = {
    "order.py": """
        from mcpframe.server import Server

        app = Server("app")
        mcp = Server("mcp")
        extra = Server("extra")
    """,
    "skips.py": """
        import json as server  # a default name holding something else is passed over

        from mcpframe.server import Server

        def mcp():
            return Server("factory")

        only = Server("only")
        alias = only
    """,
    "dotted.py": """
        from mcpframe.server import Server

        class Holder:
            server = Server("held")
    """,
    "my-server.py": """
        from mcpframe.server import Server

        server = Server("dashed")
    """,
    "pkgdir/__init__.py": """
        from mcpframe.server import Server

        server = Server("package-dir")
    """,
}


@pytest.mark.parametrize(
    ("spec", "name"),
    [
        ("order.py", "mcp"),  # server, mcp, app: mcp comes before app
        ("skips.py", "only"),  # no instance under a default name: the one instance (aliases count once)
        ("skips.py:mcp", "factory"),  # a factory is called only when named
        ("dotted.py:Holder.server", "held"),
        ("my-server.py", "dashed"),  # not an identifier: imported under another name
        ("pkgdir", "package-dir"),  # a package directory
        ("pkgdir/", "package-dir"),
    ],
)
def test_which_server_is_picked(in_project: Path, spec: str, name: str) -> None:
    write_project(in_project, RULES)
    target = load_target(spec)
    assert isinstance(target.obj, Server)
    assert target.obj.name == name
    assert not target.sdk


def test_the_file_directory_goes_first_on_sys_path(in_project: Path) -> None:
    write_project(in_project, {"sub/server.py": "from mcpframe.server import Server\nserver = Server('s')\n"})
    target = load_target("sub/server.py")
    assert sys.path[0] == str(in_project / "sub")
    assert target.where == "sub/server.py:server"
