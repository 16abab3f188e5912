"""``mcpframe.compat.install()`` / ``uninstall()``: every by-name binding, both ways, and the version gate."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator

import pytest

pytest.importorskip("mcp")

import mcp
import mcp.client.client
import mcp.client.stdio
import mcp.server.mcpserver.server
import mcp.server.stdio

import mcpframe.compat
from mcpframe.compat import mcp_sdk

BINDINGS = [
    (mcp.server.stdio, "stdio_server"),
    (mcp.client.stdio, "stdio_client"),
    (mcp, "stdio_server"),
    (mcp, "stdio_client"),
    (mcp.server.mcpserver.server, "stdio_server"),
    (mcp.client.client, "stdio_client"),
]
DROP_INS = {"stdio_server": mcp_sdk.stdio_server, "stdio_client": mcp_sdk.stdio_client}
ORIGINALS = {"stdio_server": mcp_sdk.SDK_STDIO_SERVER, "stdio_client": mcp_sdk.SDK_STDIO_CLIENT}


@pytest.fixture
def user_module() -> Iterator[types.ModuleType]:
    """A module of the application's that did ``from mcp.server.stdio import stdio_server`` earlier."""
    module = types.ModuleType("compat_test_user_module")
    module.stdio_server = mcp.server.stdio.stdio_server  # type: ignore[attr-defined]
    module.unrelated = print  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    yield module
    mcpframe.compat.uninstall()
    del sys.modules[module.__name__]


def test_install_rebinds_every_importer_and_uninstall_restores(user_module: types.ModuleType) -> None:
    assert not mcpframe.compat.installed()
    assert mcpframe.compat.install() >= len(BINDINGS) + 1
    assert mcpframe.compat.installed()
    for module, name in BINDINGS:
        assert getattr(module, name) is DROP_INS[name], (module.__name__, name)
    assert user_module.stdio_server is mcp_sdk.stdio_server
    assert user_module.unrelated is print
    assert mcpframe.compat.install() == 0  # idempotent
    assert mcpframe.compat.uninstall() >= len(BINDINGS) + 1
    assert not mcpframe.compat.installed()
    for module, name in BINDINGS:
        assert getattr(module, name) is ORIGINALS[name], (module.__name__, name)
    assert user_module.stdio_server is mcp_sdk.SDK_STDIO_SERVER
    assert mcp_sdk.stdio_server is not mcp_sdk.SDK_STDIO_SERVER  # the drop-ins' own module is untouched
    assert mcpframe.compat.uninstall() == 0


def test_a_module_imported_after_install_gets_the_drop_in(user_module: types.ModuleType) -> None:
    mcpframe.compat.install()
    namespace: dict[str, object] = {}
    exec("from mcp.server.stdio import stdio_server", namespace)
    assert namespace["stdio_server"] is mcp_sdk.stdio_server


@pytest.mark.parametrize("version", ["1.26.0", "3.0.0"])
def test_other_major_versions_are_refused(monkeypatch: pytest.MonkeyPatch, version: str) -> None:
    monkeypatch.setattr(mcpframe.compat.metadata, "version", lambda name: version)
    with pytest.raises(RuntimeError, match=rf"supports mcp>=2,<3, but mcp {version} is installed"):
        mcpframe.compat.install()
    assert not mcpframe.compat.installed()


def test_missing_sdk_is_an_import_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> str:
        raise mcpframe.compat.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(mcpframe.compat.metadata, "version", missing)
    with pytest.raises(ImportError, match=r"pip install 'mcp==2\.3\.0'"):
        mcpframe.compat.install()


def test_install_sets_the_default_frame_limit() -> None:
    try:
        mcpframe.compat.install(max_frame=1234)
        assert mcp_sdk.limits.max_frame == 1234
        with pytest.raises(ValueError, match="at least 1"):
            mcpframe.compat.install(max_frame=0)
    finally:
        mcpframe.compat.uninstall()
        mcp_sdk.limits.max_frame = mcpframe.core.DEFAULT_MAX_FRAME
    assert mcp_sdk.limits.max_frame == 64 * 1024 * 1024
