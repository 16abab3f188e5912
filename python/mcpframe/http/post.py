"""Classifying a POST body: what it holds, which era it belongs to, and how to feed it to a Session."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from mcpframe import core, jsonrpc, protocol
from mcpframe._api import MessageLike
from mcpframe.session.batch import error_answer, invalid_request_data

from .responses import Reply, error_response

__all__ = ["Body", "one_line"]


def one_line(data: bytes) -> bytes:
    """A validated JSON text as one NDJSON frame.

    Valid JSON cannot hold a raw CR or LF inside a string, so every CR/LF in it is whitespace and may
    become a space: a pretty-printed body is fed to a Session's line decoder unchanged in meaning.
    """
    data = data.rstrip(b" \t\r\n")
    if data.find(b"\n") >= 0 or data.find(b"\r") >= 0:  # `find`: `in` raises a TypeError inside
        data = data.replace(b"\r", b" ").replace(b"\n", b" ")
    return data + b"\n"


@dataclasses.dataclass(slots=True)
class Body:
    """A decoded POST body, sorted by what the transport does with each part."""

    items: Sequence[MessageLike | core.FrameError]
    batch: bool
    requests: list[MessageLike] = dataclasses.field(default_factory=list)
    others: list[MessageLike] = dataclasses.field(default_factory=list)  # notifications and responses
    errors: list[core.FrameError] = dataclasses.field(default_factory=list)  # invalid parts owed an answer

    @classmethod
    def decode(cls, data: bytes, *, max_frame: int, batches: bool) -> Body:
        """Decode with the core (one frame: the whole body) and sort the parts.

        The core never returns nothing: an empty or blank body is its `-32700 "Parse error: empty body"`.
        """
        items = core.decode(data, max_frame=max_frame, batches=batches)
        body = cls(items, any(getattr(item, "batch", None) is not None for item in items))
        for item in items:
            if isinstance(item, core.FrameError):
                if not item.notification:
                    body.errors.append(item)
            elif item.kind == "request":
                body.requests.append(item)
            else:
                body.others.append(item)
        return body

    @property
    def refusal(self) -> Reply | None:
        """The 400 of a body that is one invalid message (not a batch), else `None`: answered on the POST,
        so the client learns which POST was wrong; MCP gives a rejected notification or response an error
        status too. A parse error says where (`jsonrpc.parse_error_data`; the body's offset is 0)."""
        error = self.items[0]
        if self.batch or not isinstance(error, core.FrameError):
            return None
        rid = None if error.notification else error.id
        data = invalid_request_data(error)
        if error.code == jsonrpc.PARSE_ERROR:
            data = jsonrpc.parse_error_data(error.raw, error.offset)
            rid = jsonrpc.recover_id(error.raw)  # a request's id, when the broken body still shows it
        return error_response(400, error.message, code=error.code, rid=rid, data=data)

    @property
    def modern(self) -> bool:
        """A single 2026-07-28 request (its `_meta` names a protocol version)."""
        if self.batch or len(self.requests) != 1:
            return False
        params = self.requests[0].params
        meta = params.get("_meta") if isinstance(params, dict) else None
        return isinstance(meta, dict) and protocol.PROTOCOL_VERSION_KEY in meta

    @property
    def initialize(self) -> bool:
        """A single `initialize` request."""
        return not self.batch and len(self.requests) == 1 and self.requests[0].method == protocol.INITIALIZE

    def session_input(self) -> bytes:
        """What the exchange's Session reads: the requests (as a batch when the body was one)."""
        if not self.batch:
            return one_line(self.requests[0].raw)
        return one_line(b"[" + b",".join(request.raw for request in self.requests) + b"]")

    def error_frames(self) -> list[bytes]:
        """The answers to the invalid parts (without their trailing newline)."""
        return [error_answer(error).rstrip(b"\n") for error in self.errors]
