"""Private APIs of other projects are used in ``mcpframe._unstable`` only (and CPython's internals, by the
native core, in ``src/python/ffi/`` only).

The scan reads code, not prose: imports, attribute names and string constants (a ``getattr`` by name) in
every module of ``python/mcpframe`` outside ``_unstable/``; identifiers in every Rust file outside
``src/python/ffi/`` with comments removed. Local names that merely alias a quarantined function
(``_enter_task = asyncio_tasks.enter_task``) are fine: only the runtimes' own spellings count.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import mcpframe

PACKAGE = Path(mcpframe.__file__).resolve().parent
ROOT = PACKAGE.parent.parent
RUST = ROOT / "src"

RUNTIMES = frozenset({"asyncio", "anyio", "mcp", "mcp_types", "fastmcp", "sniffio"})
"""Top-level packages whose private modules and names must not be imported outside ``_unstable``."""

PRIVATE_NAMES = frozenset(
    {
        # asyncio
        "_enter_task",
        "_leave_task",
        "_current_tasks",
        "_get_running_loop",
        # anyio
        "_backends",
        "_task_states",
        "_parent_scope",
        "threadlocals",
        # mcp / fastmcp: the app, its server and registries
        "_lowlevel_server",
        "_mcp_server",
        "_request_handlers",
        "_tool_manager",
        "_resource_manager",
        "_prompt_manager",
        "_subscriptions",
        "_lifespan_manager",
        "_custom_starlette_routes",
        "_additional_http_routes",
        "_token_verifier",
        "_auth_server_provider",
        # mcp: the kernel's short way
        "_handle_call_tool",
        "_make_context",
        "_seal_result",
        "_serialize",
        "_stamp_server_info",
        "_dump_result",
        # mcp: the stdio transport
        "_drain_stdout",
        "_stop_server_process",
        "_create_platform_compatible_process",
        "_get_executable_command",
        "_WRITER_FLUSH_TIMEOUT",
        "_context_streams",
        "_otel",
        "_callable_inspection",
    }
)
"""Attribute and module names that are private to a runtime mcpframe reaches into (all known uses)."""

PRIVATE_BY_NAME = frozenset({"_stream"})  # anyio's StreamWriterWrapper._stream (`getattr(stdin, "_stream")`)
"""Private names too common as mcpframe's own attributes to flag as `.name`: flagged spelt as a string.
(``_stream`` is used nowhere any more, ``_unstable`` included: the listening proxy makes its children's stdin
pipes itself, ``proxy/listen_input.py``.)"""

_RUST_INTERNALS = re.compile(
    r"\b(_Py[A-Za-z_]+|ma_keys|ma_values|dk_[a-z_]+|ob_digit|lv_tag|ob_sval|utf8_length)\b"
)


def _python_modules() -> list[Path]:
    quarantine = PACKAGE / "_unstable"
    return [path for path in sorted(PACKAGE.rglob("*.py")) if quarantine not in path.parents]


def _private_module(module: str) -> bool:
    parts = module.split(".")
    return parts[0] in RUNTIMES and any(part.startswith("_") for part in parts[1:])


def _findings(tree: ast.AST) -> set[str]:
    """Every private spelling in one module's code (docstrings and comments are not code)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if _private_module(alias.name)}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if _private_module(node.module):
                found.add(node.module)
            elif node.module.split(".")[0] in RUNTIMES:
                found |= {f"{node.module}.{a.name}" for a in node.names if a.name.startswith("_")}
        elif isinstance(node, ast.Attribute) and node.attr in PRIVATE_NAMES:
            found.add(f".{node.attr}")
        elif isinstance(node, ast.Constant) and (
            node.value in PRIVATE_NAMES or node.value in PRIVATE_BY_NAME
        ):
            found.add(repr(node.value))
    return found


def test_the_scan_sees_each_kind_of_use() -> None:
    """The scan itself: an import, a from-import, an attribute and a getattr by name are all caught."""
    code = (
        "import anyio._backends._asyncio\n"
        "from mcp.shared._context_streams import ContextSendStream\n"
        "from mcp.client.stdio import _drain_stdout\n"
        "loop = asyncio._get_running_loop()\n"
        "server = getattr(app, '_lowlevel_server', None)\n"
        '"""A docstring may name _request_handlers."""\n'
        "_enter_task = asyncio_tasks.enter_task\n"
    )
    assert _findings(ast.parse(code)) == {
        "anyio._backends._asyncio",
        "mcp.shared._context_streams",
        "mcp.client.stdio._drain_stdout",
        "._get_running_loop",
        "'_lowlevel_server'",
    }


def test_no_private_runtime_api_outside_unstable() -> None:
    modules = _python_modules()
    assert len(modules) > 50  # the package was found
    offenders = {}
    for path in modules:
        found = _findings(ast.parse(path.read_text(encoding="utf-8")))
        if found:
            offenders[path.relative_to(PACKAGE).as_posix()] = sorted(found)
    assert not offenders, f"move these into mcpframe._unstable: {offenders}"


def test_no_cpython_internals_outside_the_native_ffi_module() -> None:
    quarantine = RUST / "python" / "ffi"
    files = [path for path in sorted(RUST.rglob("*.rs")) if quarantine not in path.parents]
    assert files  # the Rust sources were found
    offenders = {}
    for path in files:
        code = re.sub(r"//[^\n]*", "", path.read_text(encoding="utf-8"))
        found = set(_RUST_INTERNALS.findall(code))
        if found:
            offenders[path.relative_to(ROOT).as_posix()] = sorted(found)
    assert not offenders, f"move these into src/python/ffi/: {offenders}"
    # the scan bites: the quarantine itself is full of them
    assert _RUST_INTERNALS.findall((quarantine / "dict_table.rs").read_text(encoding="utf-8"))


def test_nothing_reads_under_anyio_s_process_streams() -> None:
    """Not even ``_unstable``: the proxy's fast path writes to a stdin pipe of its own, on every path."""
    quarantine = sorted((PACKAGE / "_unstable").rglob("*.py"))
    assert quarantine  # the quarantine was found
    used = {
        path.name
        for path in quarantine
        if any(
            isinstance(node, ast.Constant) and node.value in PRIVATE_BY_NAME
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        )
    }
    assert not used
