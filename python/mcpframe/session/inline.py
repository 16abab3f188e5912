"""Answering one request outside a Session's reader: for a transport that already decoded it.

Streamable HTTP decodes each POST body itself (it must, to route it). Feeding the request to a running
Session would encode nothing new but cost a pipe hop, a second decode, the outbox and a third (lazy) decode
of the answer to learn its id. ``answer_inline`` runs the Session's request handler on the message as the
Session would (a ``Request`` registered among its incoming ones, so ``notifications/cancelled`` fed to the
Session and ``Session.aclose()`` reach it; the same error answers) and hands the answer's frame to the
caller's ``deliver`` instead of writing it. Whatever the handler sent meanwhile (notifications, requests to
the client) went through the Session and is handed to its transport first, so the caller's answer comes
after it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any

from mcpframe import jsonrpc
from mcpframe._api import Id, MessageLike
from mcpframe.session.errors import JSONRPCError
from mcpframe.session.frames import error_frame, failure_frame, result_frame
from mcpframe.session.request import IN_SCOPE, Request

if TYPE_CHECKING:
    from mcpframe.session.peer import Session

__all__ = ["Deliver", "answer_inline", "start_inline"]

Deliver = Callable[[Id, bytes], Awaitable[None] | None]
"""``deliver(id, frame)``: takes a request's answer frame. It may return an awaitable (awaited before the
answer counts as delivered) or ``None`` when it took the frame at once: a plain function that hands the
frame over in the common case makes no coroutine per answer, returning one only when it must wait."""


def start_inline(session: Session, message: MessageLike, deliver: Deliver) -> asyncio.Task[None] | None:
    """Start answering ``message`` as ``answer_inline`` would, the way ``session`` starts its handlers
    (eagerly where it can: most handlers have answered when this returns), then ``deliver(id, frame)``.

    The request is registered among the Session's incoming ones at once, as the Session registers those it
    reads. One that starts in a task of its own (no eager start, a notification job queued first, or a
    handler that surely suspends: ``Session.suspends``) is then found by a cancel that comes before its
    task runs, and its handler never runs. Returns the task of a handler that surely suspends, not run yet
    (a caller that has made ready what that handler's first step may reach can run the step at once:
    ``_unstable.asyncio_tasks.step_now``), else ``None``. Call it only while ``session`` runs
    (``Session.run()`` started).
    """
    request, answering = _begin(session, message, deliver)
    return session._start(request, answering)


async def answer_inline(session: Session, message: MessageLike, deliver: Deliver) -> None:
    """Run ``session``'s request handler for ``message`` in this task, then ``deliver(id, frame)`` its
    answer frame (no newline).

    Nothing is delivered when the request was cancelled (``notifications/cancelled``, or the Session
    closing): a cancelled request gets no answer. Run it in a task of its own: that task is what a cancel
    cancels.
    """
    request, answering = _begin(session, message, deliver)
    if request is not None:
        request._task = asyncio.current_task()
    await answering


def _begin(
    session: Session, message: MessageLike, deliver: Deliver
) -> tuple[Request | None, Coroutine[Any, Any, None]]:
    """``message``'s ``Request``, registered among ``session``'s incoming ones, and the coroutine that
    answers it; or ``None`` and the one that delivers the error frame answering it instead (its id in
    flight, no handler, or params that cannot be built), as the Session answers."""
    rid = message.id
    assert rid is not None
    incoming = session._incoming
    if rid in incoming or session.request_handler is None:
        return None, _refuse(rid, error_frame(rid, session._refusal(message)), deliver)
    try:
        request = Request(session, message)
    except Exception as exc:  # e.g. params that cannot be built: answered, as the Session does
        failure = JSONRPCError(jsonrpc.INTERNAL_ERROR, f"Internal error ({type(exc).__name__})")
        return None, _refuse(rid, error_frame(rid, failure), deliver)
    incoming[rid] = request
    return request, _answer(session, request, deliver)


async def _refuse(rid: Id, frame: bytes, deliver: Deliver) -> None:
    waiting = deliver(rid, frame.rstrip(b"\n"))
    if waiting is not None:
        await waiting


async def _answer(session: Session, request: Request, deliver: Deliver) -> None:
    """Run the handler for the registered ``request`` (not if it was cancelled before), then deliver."""
    rid = request.id
    incoming = session._incoming
    frame: bytes | None = None
    try:
        if not request._cancelled:  # cancelled before its task ran: the handler never runs
            request._started = True
            handler = session.request_handler
            assert handler is not None
            try:
                result = await (request._call_in_scope(handler) if IN_SCOPE else handler(request))
            except (JSONRPCError, Exception) as exc:
                frame = failure_frame(request, exc)
            else:
                frame = result_frame(request, result)
    except asyncio.CancelledError as cancel:
        frame = request._cancelled_answer(cancel)  # the loop's or the Session's cancel is raised again
    finally:
        request._done = True
        if request._waiter is not None:
            request._waiter.set()
        if incoming.get(rid) is request:
            del incoming[rid]
    if request._cancelled or frame is None:
        return
    if session._outbox.busy:  # what the handler sent (queued, or being written) goes first
        await session._flush()
    waiting = deliver(rid, frame.rstrip(b"\n"))
    if waiting is not None:
        await waiting
