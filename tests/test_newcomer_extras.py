"""The install hint names the pip that installs into the running venv when that venv is not activated.

The README runs `.venv/bin/mcpframe` without `source .venv/bin/activate`; a bare `pip install ...` typed
from the hint would then install into another Python (or be refused as an externally managed one).
"""

from __future__ import annotations

import os
import shlex
import sys
import sysconfig

import pytest

from mcpframe._extras import install_hint

THIS_PIP = shlex.quote(os.path.join(sysconfig.get_path("scripts"), "pip"))


@pytest.fixture
def in_a_venv(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "base_prefix", os.path.join(sys.prefix, "not-the-base"))


@pytest.mark.usefixtures("in_a_venv")
@pytest.mark.parametrize("active", [None, "/somewhere/else/.venv"], ids=["no-venv-activated", "another-venv"])
def test_a_venv_not_activated_gets_its_own_pip(active: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    if active is None:
        monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    else:
        monkeypatch.setenv("VIRTUAL_ENV", active)
    assert install_hint("http").startswith(f"{THIS_PIP} install '")
    assert install_hint("no-such-extra") == f"{THIS_PIP} install '.[no-such-extra]' in mcpframe's source tree"


@pytest.mark.usefixtures("in_a_venv")
def test_the_activated_venv_gets_plain_pip(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VIRTUAL_ENV", sys.prefix)
    assert install_hint("http").startswith("pip install '")


def test_outside_any_venv_plain_pip(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "base_prefix", sys.prefix)
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    assert install_hint("http").startswith("pip install '")
