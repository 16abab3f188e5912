"""`@server.resource` without its URI is refused at once with a message that says what to write.

Before, the bare decorator took the function for the URI, registered nothing and put its own inner
`register` closure where the function was.
"""

from __future__ import annotations

import pytest

from mcpframe.server import Server


def test_a_bare_resource_decorator_is_refused_with_what_to_write() -> None:
    server = Server("t")
    with pytest.raises(TypeError, match=r"needs a URI.*@server\.resource\(\"scheme://name\"\)"):

        @server.resource  # type: ignore[arg-type]
        def readme() -> str:
            return "x"

    assert server.registry.resources == {}


def test_a_resource_with_its_uri_still_registers_and_keeps_the_function() -> None:
    server = Server("t")

    @server.resource("test://readme")
    def readme() -> str:
        return "x"

    assert readme() == "x"
    assert "test://readme" in server.registry.resources
