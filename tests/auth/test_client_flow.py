"""mcpframe's OAuth client against an mcpframe server that verifies JWTs of the in-test authorization server.

The authorization endpoint redirects at once; the redirect handler follows it headlessly (as a browser
would) and the callback handler returns what it carried.
"""

from __future__ import annotations

import time
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx
import pytest

from mcpframe.http import connect
from mcpframe.http.auth import ClientCredentialsProvider, OAuthClientProvider, OAuthFlowError
from mcpframe.http.auth_loopback import LoopbackCallback
from mcpframe.http.auth_storage import ClientInfo, InMemoryTokenStorage, OAuthToken
from mcpframe.session import JSONRPCError

from ._authserver import SERVICE, AuthServer
from .conftest import protected

pytestmark = pytest.mark.anyio

REDIRECT = "http://127.0.0.1:1/callback"


class Browser:
    """Follows the authorization redirect; `tamper` replaces the state it carried."""

    def __init__(self, tamper: str | None = None) -> None:
        self.seen: list[str] = []
        self.found: tuple[str, str | None] = ("", None)
        self.tamper = tamper

    async def redirect(self, url: str) -> None:
        self.seen.append(url)
        async with httpx.AsyncClient() as http:
            response = await http.get(url)
        query = parse_qs(urlsplit(response.headers["location"]).query)
        self.found = (query["code"][0], self.tamper or query["state"][0])

    async def callback(self) -> tuple[str, str | None]:
        return self.found


def provider(url: str, browser: Browser, storage: InMemoryTokenStorage | None = None) -> OAuthClientProvider:
    return OAuthClientProvider(
        url,
        redirect_uri=REDIRECT,
        redirect_handler=browser.redirect,
        callback_handler=browser.callback,
        storage=storage,
    )


async def echo(url: str, auth: httpx.Auth) -> str:
    with anyio.fail_after(10):
        async with connect(url, auth=auth, mode="legacy") as client:
            result = await client.call_tool("echo", {"text": "hi"})
    return str(result["content"][0]["text"])


async def test_authorization_code_with_registration_pkce_and_resource(authsrv: AuthServer) -> None:
    browser = Browser()
    storage = InMemoryTokenStorage()
    async with protected(authsrv) as url:
        assert await echo(url, provider(url, browser, storage)) == "hi"
        assert authsrv.count("/register") == 1
        [asked] = [parse_qs(urlsplit(u).query) for u in browser.seen]
        assert asked["code_challenge_method"] == ["S256"]
        assert asked["resource"] == [url]
        assert asked["scope"] == ["mcp"]  # the challenge's scope
        [exchange] = authsrv.forms("/token")
        assert exchange["resource"] == url
        assert exchange["grant_type"] == "authorization_code"
        # the stored token and registration serve the next connection: no new authorization
        assert await echo(url, provider(url, browser, storage)) == "hi"
        assert len(browser.seen) == 1
        assert authsrv.count("/register") == 1


async def test_a_redirect_with_another_state_is_refused(authsrv: AuthServer) -> None:
    browser = Browser(tamper="forged")
    async with protected(authsrv) as url:
        with pytest.raises(JSONRPCError, match=r"OAuthFlowError.*another state"):
            await echo(url, provider(url, browser))
        assert authsrv.count("/token") == 0


async def test_an_expired_token_is_refreshed_without_the_user(authsrv: AuthServer) -> None:
    browser = Browser()
    storage = InMemoryTokenStorage()
    async with protected(authsrv) as url:
        assert await echo(url, provider(url, browser, storage)) == "hi"
        stored = storage.tokens
        assert stored is not None
        assert stored.refresh_token is not None
        storage.tokens = OAuthToken("stale", refresh_token=stored.refresh_token, expires_at=time.time() - 60)
        # another process: nothing discovered yet, only the stored token and registration
        assert await echo(url, provider(url, browser, storage)) == "hi"
        assert len(browser.seen) == 1
        assert [f["grant_type"] for f in authsrv.forms("/token")] == ["authorization_code", "refresh_token"]


async def test_a_403_insufficient_scope_steps_up_with_the_union_of_scopes(authsrv: AuthServer) -> None:
    browser = Browser()
    client = ClientInfo("pub", None, "none", authsrv.url, (REDIRECT,))
    authsrv.clients["pub"] = None
    narrow = OAuthToken(authsrv.token("pub", "mcp"), scope="mcp")
    storage = InMemoryTokenStorage(narrow, client)
    async with protected(authsrv, scopes=("mcp", "admin")) as url:
        assert await echo(url, provider(url, browser, storage)) == "hi"
        [asked] = [parse_qs(urlsplit(u).query) for u in browser.seen]
        assert asked["scope"][0].split() == ["mcp", "admin"]


async def test_a_scope_the_server_never_grants_ends_after_one_step_up(authsrv: AuthServer) -> None:
    browser = Browser()
    authsrv.grantable = {"mcp"}
    async with protected(authsrv, scopes=("mcp", "admin")) as url:
        with pytest.raises(JSONRPCError, match="insufficient scope"):
            await echo(url, provider(url, browser))
        assert len(browser.seen) == 1  # asked for both at once; the answer lacked admin: no loop


async def test_client_credentials_with_a_secret(authsrv: AuthServer) -> None:
    async with protected(authsrv) as url:
        auth = ClientCredentialsProvider(url, client_id=SERVICE[0], client_secret=SERVICE[1])
        assert await echo(url, auth) == "hi"
        [grant] = authsrv.forms("/token")
        assert grant["grant_type"] == "client_credentials"
        assert grant["scope"] == "mcp"
        assert "client_secret" not in grant  # client_secret_basic: in the header


async def test_client_credentials_renew_an_expired_token_before_the_request(authsrv: AuthServer) -> None:
    authsrv.expires_in = 5  # inside the 30 s margin: every token counts as expired at once
    statuses: list[int] = []

    async def seen(response: httpx.Response) -> None:
        statuses.append(response.status_code)

    async with protected(authsrv) as url:
        auth = ClientCredentialsProvider(url, client_id=SERVICE[0], client_secret=SERVICE[1])
        async with httpx.AsyncClient(auth=auth, event_hooks={"response": [seen]}) as http:
            for _ in range(3):
                await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert statuses.count(401) == 1  # the first request only, before any token
    assert authsrv.count("/token") == 3


def test_client_credentials_needs_exactly_one_credential() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        ClientCredentialsProvider("http://x/mcp", client_id="a")


def test_auth_and_a_callers_http_client_do_not_mix() -> None:
    from mcpframe.http.client import StreamableHTTPTransport  # noqa: PLC0415

    auth = ClientCredentialsProvider("http://x/mcp", client_id="a", client_secret="b")
    with pytest.raises(ValueError, match="auth"):
        StreamableHTTPTransport("http://x/mcp", http_client=httpx.AsyncClient(), auth=auth)


async def test_the_loopback_helper_catches_the_redirect() -> None:
    opened: list[str] = []
    async with LoopbackCallback(open_browser=opened.append, timeout=10) as loopback:
        assert loopback.redirect_uri.startswith("http://127.0.0.1:")
        await loopback.redirect_handler("https://as.example/authorize?x=1")
        assert opened == ["https://as.example/authorize?x=1"]
        async with anyio.create_task_group() as tg:

            async def browse() -> None:
                async with httpx.AsyncClient() as http:
                    missed = await http.get(loopback.redirect_uri.replace("/callback", "/favicon.ico"))
                    assert missed.status_code == 404
                    done = await http.get(loopback.redirect_uri, params={"code": "c0de", "state": "s"})
                    assert done.status_code == 200

            tg.start_soon(browse)
            assert await loopback.callback_handler() == ("c0de", "s")


async def test_the_loopback_helper_reports_a_refusal() -> None:
    async with (
        LoopbackCallback(open_browser=lambda url: None, timeout=10) as loopback,
        anyio.create_task_group() as tg,
    ):

        async def browse() -> None:
            async with httpx.AsyncClient() as http:
                await http.get(loopback.redirect_uri, params={"error": "access_denied"})

        tg.start_soon(browse)
        with pytest.raises(OAuthFlowError, match="access_denied"):
            await loopback.callback_handler()


async def test_concurrent_401s_share_one_authorization(authsrv: AuthServer) -> None:
    browser = Browser()
    async with protected(authsrv) as url:
        auth = provider(url, browser)
        async with httpx.AsyncClient(auth=auth) as http:
            statuses: list[int] = []

            async def post() -> None:
                response = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
                statuses.append(response.status_code)

            with anyio.fail_after(10):
                async with anyio.create_task_group() as tg:
                    for _ in range(5):
                        tg.start_soon(post)
        assert len(statuses) == 5
        assert 401 not in statuses
        assert len(browser.seen) == 1
        assert authsrv.count("/register") == 1


async def test_the_loopback_helper_gives_up_after_its_timeout() -> None:
    async with LoopbackCallback(open_browser=lambda url: None, timeout=0.05) as loopback:
        with pytest.raises(OAuthFlowError, match="no authorization redirect"):
            await loopback.callback_handler()
