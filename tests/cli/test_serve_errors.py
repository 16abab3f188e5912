"""`mcpframe serve`: a wrong target or flag is one line on stderr, with the user's file:line.

Most cases call `serve_main` in-process (the same code a child runs, at no start-up cost); two run a real
`mcpframe serve` child to prove the whole stderr and the exit status of the command itself.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mcpframe.cli.serve import serve_main

from .conftest import SERVE, child_env, write_project

SYNTAX = "from mcpframe.server import Server\n\nserver = Server('x')\ndef f(:\n    pass\n"

FILES = {
    "syntax.py": SYNTAX,
    "imports.py": """
        from mcpframe.server import Server

        import not_installed_anywhere
    """,
    "boom.py": """
        from mcpframe.server import Server


        def settings():
            raise ValueError("no API key set")


        SETTINGS = settings()
    """,
    "plenty.py": """
        from mcpframe.server import Server

        a = Server("a")
        b = Server("b")
        number = 42


        def needs(x, y=1):
            return Server("n")


        def wrong():
            return 42


        def broken():
            raise RuntimeError("the database is down")
    """,
    "nothing.py": """
        from mcpframe.server import Server

        value = 1


        def make_server():
            return Server("m")
    """,
    "relpkg/__init__.py": "",
    "relpkg/mod.py": """
        from . import helper
    """,
    "badtype.py": """
        from typing import IO

        from mcpframe.server import Server

        server = Server("bt")


        @server.tool
        def upload(f: IO[bytes]) -> str:
            return "ok"
    """,
}


@pytest.fixture
def project(in_project: Path) -> Path:
    return write_project(in_project, FILES)


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """`mcpframe serve ARGV` in-process: the exit status and the one line on stderr (asserted single)."""
    status = serve_main(argv)
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    return status, lines[0]


def syntax_line() -> str:
    """What this Python says about SYNTAX (message and column vary between versions)."""
    try:
        compile(SYNTAX, "syntax.py", "exec")
    except SyntaxError as exc:
        return f"syntax.py:{exc.lineno}:{exc.offset}: {exc.msg}"
    raise AssertionError("SYNTAX compiled")


def test_user_code_failures_name_the_file_and_line(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["syntax.py"], capsys) == (1, syntax_line())
    assert run(["imports.py"], capsys) == (
        1,
        "imports.py:3: No module named 'not_installed_anywhere' (imported by your module; "
        f"is it installed for {sys.executable}?)",
    )
    assert run(["boom.py"], capsys) == (
        1,
        "boom.py:5: ValueError: no API key set (raised while importing boom.py)",
    )
    assert run(["plenty.py:broken"], capsys) == (
        1,
        "plenty.py:17: RuntimeError: the database is down (raised by plenty.py:broken())",
    )
    assert run(["relpkg/mod.py"], capsys) == (
        1,
        "relpkg/mod.py:1: attempted relative import with no known parent package; serve it as a module "
        "instead: mcpframe serve relpkg.mod",
    )


def test_an_unsupported_tool_parameter_type_names_the_decorated_line(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, line = run(["badtype.py"], capsys)
    assert status == 1
    assert line.startswith("badtype.py:8: ")  # the @server.tool line
    # the server's own ToolDefinitionError words, whole on the one line: tool, parameter, type, what works
    assert "tool 'upload': parameter 'f' has type IO[bytes], which has no JSON Schema; use str" in line
    assert line.endswith("or a pydantic model")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["missing.py"], "mcpframe serve: no such file: missing.py (looked for {root}/missing.py)"),
        (
            ["no_such_module_xyz"],
            "mcpframe serve: no module named 'no_such_module_xyz' (looked in {root} and on the Python path; "
            "a file needs its .py, e.g. no_such_module_xyz.py)",
        ),
        (
            ["plenty.py:missing"],
            "mcpframe serve: plenty.py has no attribute 'missing'; it has a (Server), b (Server), "
            "needs() (function), wrong() (function), broken() (function)",
        ),
        (
            ["plenty.py:number"],
            "mcpframe serve: plenty.py:number is an int, not a server (an mcpframe Server, an SDK MCPServer "
            "or a FastMCP app, or a function returning one)",
        ),
        (
            ["plenty.py:Server"],
            "mcpframe serve: plenty.py:Server is the class Server, not a server (an mcpframe Server, an SDK "
            "MCPServer or a FastMCP app, or a function returning one)",
        ),
        (
            ["plenty.py:needs"],
            "mcpframe serve: plenty.py:needs needs arguments (x); name a server, or a function that makes "
            "one when called with none",
        ),
        (
            ["plenty.py:wrong"],
            "mcpframe serve: plenty.py:wrong() returned an int, not an mcpframe Server, an SDK MCPServer or "
            "a FastMCP app",
        ),
        (["plenty.py"], "mcpframe serve: plenty.py has several servers (a, b): name one, e.g. plenty.py:a"),
        (
            ["nothing.py"],
            "mcpframe serve: nothing.py has no server instance (looked for server, mcp, app, then any "
            "module-level name); name one as nothing.py:NAME (it has make_server() (function))",
        ),
        ([":server"], "mcpframe serve: expected FILE.py[:NAME] or MODULE[:NAME], got ':server'"),
        (
            ["not a module"],
            "mcpframe serve: 'not a module' is neither a .py file nor a module name (like package.module)",
        ),
        (
            ["plenty.py", "--auth-token", "t"],
            "mcpframe serve: --auth-token protects HTTP: add --http (stdio has no auth)",
        ),
        (
            ["plenty.py", "--http", "--max-sessions", "0"],
            "mcpframe serve: --max-sessions 0 is out of range: expected at least 1",
        ),
        (
            ["plenty.py", "--http", "--idle-timeout", "-1"],
            "mcpframe serve: --idle-timeout -1.0 is out of range: expected 0 (never) or more seconds",
        ),
        (
            ["plenty.py", "--http", "--auth-token", "two words"],
            "mcpframe serve: --auth-token must be one word with no spaces (a bearer token)",
        ),
    ],
)
def test_usage_errors_exit_2_in_one_line(
    project: Path, capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    assert run(argv, capsys) == (2, expected.format(root=project.resolve()))


def test_traceback_flag_and_debug_env_print_the_whole_traceback(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert serve_main(["boom.py", "--traceback"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):")
    assert 'boom.py", line 5, in settings' in err
    assert err.endswith("boom.py:5: ValueError: no API key set (raised while importing boom.py)\n")
    monkeypatch.setenv("MCPFRAME_DEBUG", "1")
    assert serve_main(["plenty.py:broken"]) == 1
    assert capsys.readouterr().err.startswith("Traceback (most recent call last):")


def test_two_transports_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        serve_main(["examples.everything:server", "--http", "--stdio"])
    assert exited.value.code == 2
    assert "--stdio: not allowed with argument --http" in capsys.readouterr().err


@pytest.mark.parametrize(("target", "line"), [("syntax.py", None), ("imports.py:server", "imports.py:3: ")])
def test_a_real_child_prints_one_line_and_exits_1(project: Path, target: str, line: str | None) -> None:
    child = subprocess.run(
        [*SERVE, target],
        cwd=project,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert child.returncode == 1
    assert child.stdout == ""
    (only,) = child.stderr.splitlines()
    assert only == syntax_line() if line is None else only.startswith(line)


@pytest.mark.parametrize("value", ["-1", "nan"])
def test_a_negative_grace_period_is_refused_in_one_line(
    project: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    assert run(["plenty.py:a", "--grace", value], capsys) == (
        2,
        f"mcpframe serve: --grace must be 0 or more seconds; got {float(value):g}",
    )
