"""The conformance fixtures of examples/everything.py, checked the way the suite checks them (A.2/A.3)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from examples.everything import server

from mcpframe.session import Request

from ._driver import legacy

pytestmark = pytest.mark.anyio

TOOLS = {
    "test_simple_text",
    "test_image_content",
    "test_audio_content",
    "test_embedded_resource",
    "test_multiple_content_types",
    "test_tool_with_logging",
    "test_error_handling",
    "test_tool_with_progress",
    "test_sampling",
    "test_elicitation",
    "test_elicitation_sep1034_defaults",
    "test_elicitation_sep1330_enums",
    "json_schema_2020_12_tool",
    "test_reconnection",
}
PROMPTS = {
    "test_simple_prompt",
    "test_prompt_with_arguments",
    "test_prompt_with_embedded_resource",
    "test_prompt_with_image",
}
CAPS = {"sampling": {}, "elicitation": {}}


async def _answer(request: Request) -> Any:
    if request.method == "sampling/createMessage":
        return {
            "role": "assistant",
            "content": {"type": "text", "text": "This is a test response from the client"},
            "model": "t",
        }
    return {"action": "accept", "content": {"username": "testuser", "email": "test@example.com"}}


async def test_lists_have_every_fixture_with_descriptions() -> None:
    async with legacy(server) as client:
        tools = (await client.request("tools/list"))["tools"]
        prompts = (await client.request("prompts/list"))["prompts"]
        resources = (await client.request("resources/list"))["resources"]
        templates = (await client.request("resources/templates/list"))["resourceTemplates"]
    assert {t["name"] for t in tools} == TOOLS
    assert all(t["description"] and t["inputSchema"]["type"] == "object" for t in tools)
    assert {p["name"] for p in prompts} == PROMPTS
    assert all(p["description"] for p in prompts)
    assert {r["uri"] for r in resources} == {
        "test://static-text",
        "test://static-binary",
        "test://watched-resource",
    }
    assert all(r["name"] and r["description"] for r in resources)
    assert [t["uriTemplate"] for t in templates] == ["test://template/{id}/data"]
    schema = next(t for t in tools if t["name"] == "json_schema_2020_12_tool")["inputSchema"]
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert "address" in schema["$defs"]
    assert schema["additionalProperties"] is False


@pytest.mark.parametrize(
    ("name", "kinds"),
    [
        ("test_simple_text", ["text"]),
        ("test_image_content", ["image"]),
        ("test_audio_content", ["audio"]),
        ("test_embedded_resource", ["resource"]),
        ("test_multiple_content_types", ["text", "image", "resource"]),
    ],
)
async def test_content_tools(name: str, kinds: list[str]) -> None:
    async with legacy(server) as client:
        result = await client.request("tools/call", {"name": name})
    assert [c["type"] for c in result["content"]] == kinds
    for block in result["content"]:
        if block["type"] in ("image", "audio"):
            raw = base64.b64decode(block["data"], validate=True)
            assert raw[:4] == (b"\x89PNG" if block["type"] == "image" else b"RIFF")
            assert block["mimeType"] == ("image/png" if block["type"] == "image" else "audio/wav")
        if block["type"] == "resource":
            assert block["resource"]["uri"]
            assert block["resource"]["mimeType"]
            assert block["resource"]["text"]


async def test_logging_progress_and_error_tools() -> None:
    async with legacy(server) as client:
        await client.request("logging/setLevel", {"level": "debug"})
        await client.request("tools/call", {"name": "test_tool_with_logging", "arguments": {}})
        await client.request(
            "tools/call", {"name": "test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": 7}}
        )
        error = await client.request("tools/call", {"name": "test_error_handling"})
        assert len(await client.wait_for("notifications/message", 3)) == 3
        progress = await client.wait_for("notifications/progress", 3)
    assert [p["progress"] for p in progress] == [0, 50, 100]
    assert {p["progressToken"] for p in progress} == {7}
    assert error["isError"] is True
    assert error["content"][0]["text"]


async def test_sampling_and_elicitation_tools() -> None:
    async with legacy(server, capabilities=CAPS, client_handler=_answer) as client:
        sampled = await client.request(
            "tools/call", {"name": "test_sampling", "arguments": {"prompt": "Test prompt"}}
        )
        elicited = await client.request(
            "tools/call", {"name": "test_elicitation", "arguments": {"message": "Info?"}}
        )
        defaults = await client.request(
            "tools/call", {"name": "test_elicitation_sep1034_defaults", "arguments": {}}
        )
        enums = await client.request(
            "tools/call", {"name": "test_elicitation_sep1330_enums", "arguments": {}}
        )
    assert sampled["content"][0]["text"] == "LLM response: This is a test response from the client"
    assert "testuser" in elicited["content"][0]["text"]
    assert defaults["content"][0]["text"].startswith("Elicitation completed: action=accept")
    assert "isError" not in enums


async def test_resources_and_template() -> None:
    async with legacy(server) as client:
        text = await client.request("resources/read", {"uri": "test://static-text"})
        binary = await client.request("resources/read", {"uri": "test://static-binary"})
        templ = await client.request("resources/read", {"uri": "test://template/123/data"})
        assert await client.request("resources/subscribe", {"uri": "test://watched-resource"}) == {}
        assert await client.request("resources/unsubscribe", {"uri": "test://watched-resource"}) == {}
    assert text["contents"][0]["text"]
    assert text["contents"][0]["mimeType"] == "text/plain"
    assert base64.b64decode(binary["contents"][0]["blob"], validate=True)[:4] == b"\x89PNG"
    assert templ["contents"][0]["uri"] == "test://template/123/data"
    assert json.loads(templ["contents"][0]["text"])["id"] == "123"


async def test_prompts_and_completion() -> None:
    async with legacy(server) as client:
        simple = await client.request("prompts/get", {"name": "test_simple_prompt"})
        args = await client.request(
            "prompts/get",
            {"name": "test_prompt_with_arguments", "arguments": {"arg1": "testValue1", "arg2": "testValue2"}},
        )
        embedded = await client.request(
            "prompts/get",
            {
                "name": "test_prompt_with_embedded_resource",
                "arguments": {"resourceUri": "test://example-resource"},
            },
        )
        image = await client.request("prompts/get", {"name": "test_prompt_with_image"})
        completion = await client.request(
            "completion/complete",
            {
                "ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                "argument": {"name": "arg1", "value": "test"},
            },
        )
    assert simple["messages"][0] == {
        "role": "user",
        "content": {"type": "text", "text": "This is a simple prompt for testing."},
    }
    assert "testValue1" in json.dumps(args)
    assert "testValue2" in json.dumps(args)
    assert any(m["content"]["type"] == "resource" for m in embedded["messages"])
    assert embedded["messages"][0]["content"]["resource"]["uri"] == "test://example-resource"
    assert any(m["content"]["type"] == "image" and m["content"]["data"] for m in image["messages"])
    assert completion["completion"]["values"] == ["test", "testValue1", "testing"]
