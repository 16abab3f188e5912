"""MCP protocol facts: the revisions, the method names and the `_meta` keys, each listed once.

These are facts of the specification, not of this implementation, and every layer needs some of them: the
server and the client negotiate revisions, the HTTP host reads the version key from `_meta`, the session
stamps progress tokens. They live at the bottom of the import graph (beside `jsonrpc` and `errors`) so no
layer has to reach up or sideways for them, and so a revision is added in exactly one place.

Names follow one rule: the method string upper-cased, `/` as `_`, camelCase split with `_`
(`"notifications/tools/list_changed"` is `NOTIFICATIONS_TOOLS_LIST_CHANGED`, `"logging/setLevel"` is
`LOGGING_SET_LEVEL`). This module imports nothing from mcpframe.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

__all__ = [
    "BATCH_VERSIONS",
    "CLIENT_CAPABILITIES_KEY",
    "CLIENT_INFO_KEY",
    "CLIENT_METHODS",
    "COMPLETION_COMPLETE",
    "ELICITATION_CREATE",
    "INITIALIZE",
    "LATEST_LEGACY",
    "LATEST_MODERN",
    "LEGACY_VERSIONS",
    "LIST_CHANGED_NOTIFICATIONS",
    "LOGGING_LEVELS",
    "LOGGING_SET_LEVEL",
    "LOG_LEVEL_KEY",
    "META_KEY_PREFIX",
    "MODERN_META_KEYS",
    "MODERN_VERSIONS",
    "NOTIFICATIONS",
    "NOTIFICATIONS_CANCELLED",
    "NOTIFICATIONS_INITIALIZED",
    "NOTIFICATIONS_MESSAGE",
    "NOTIFICATIONS_PROGRESS",
    "NOTIFICATIONS_PROMPTS_LIST_CHANGED",
    "NOTIFICATIONS_RESOURCES_LIST_CHANGED",
    "NOTIFICATIONS_RESOURCES_UPDATED",
    "NOTIFICATIONS_ROOTS_LIST_CHANGED",
    "NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED",
    "NOTIFICATIONS_TASKS",
    "NOTIFICATIONS_TASKS_STATUS",
    "NOTIFICATIONS_TOOLS_LIST_CHANGED",
    "PING",
    "PROGRESS_TOKEN",
    "PROMPTS_GET",
    "PROMPTS_LIST",
    "PROTOCOL_VERSION_KEY",
    "REF_PROMPT",
    "REF_RESOURCE",
    "RELATED_TASK_KEY",
    "RESOURCES_LIST",
    "RESOURCES_READ",
    "RESOURCES_SUBSCRIBE",
    "RESOURCES_TEMPLATES_LIST",
    "RESOURCES_UNSUBSCRIBE",
    "ROOTS_LIST",
    "SAMPLING_CREATE_MESSAGE",
    "SERVER_DISCOVER",
    "SERVER_INFO_KEY",
    "SERVER_METHODS",
    "SUBSCRIPTIONS_LISTEN",
    "SUBSCRIPTION_ID_KEY",
    "SUPPORTED_VERSIONS",
    "TASKS_CANCEL",
    "TASKS_EXTENSION",
    "TASKS_GET",
    "TASKS_LIST",
    "TASKS_RESULT",
    "TASKS_UPDATE",
    "TOOLS_CALL",
    "TOOLS_LIST",
    "V2024_11_05",
    "V2025_03_26",
    "V2025_06_18",
    "V2025_11_25",
    "V2026_07_28",
    "LoggingLevel",
    "batches_allowed",
]

# ---------------------------------------------------------------------------------------------- revisions

V2024_11_05: Final = "2024-11-05"
V2025_03_26: Final = "2025-03-26"
"""The only revision with JSON-RPC batches (added here, removed in 2025-06-18)."""
V2025_06_18: Final = "2025-06-18"
"""Added tool `title` and `outputSchema`, and `structuredContent` in tool results."""
V2025_11_25: Final = "2025-11-25"
"""Added `icons` and SSE `retry` hints; the last legacy (handshake) revision."""
V2026_07_28: Final = "2026-07-28"
"""The first modern revision: stateless, the version and client capabilities travel in each `_meta`."""

LEGACY_VERSIONS: Final = (V2025_11_25, V2025_06_18, V2025_03_26, V2024_11_05)
"""Revisions negotiated once with `initialize`, newest first (a client offers the first)."""
MODERN_VERSIONS: Final = (V2026_07_28,)
"""Revisions that name themselves in every request's `_meta` (no handshake), newest first."""
SUPPORTED_VERSIONS: Final = MODERN_VERSIONS + LEGACY_VERSIONS
LATEST_LEGACY: Final = LEGACY_VERSIONS[0]
LATEST_MODERN: Final = MODERN_VERSIONS[0]

BATCH_VERSIONS: Final = frozenset({V2025_03_26})
"""The revisions whose peers may send JSON-RPC batches."""


def at_least(version: str, minimum: str) -> bool:
    """Whether revision ``version`` is ``minimum`` or newer: revision names are dates, so they sort as text.

    The one way to compare revisions (an unknown or empty one compares by its text too: ``""`` is older
    than every revision).
    """
    return version >= minimum


def batches_allowed(version: str | None) -> bool:
    """Whether a JSON-RPC batch is accepted on a connection that negotiated ``version``.

    One rule for every transport (stdio, Streamable HTTP): only a 2025-03-26 connection may send batches.
    Before ``initialize`` has been answered (``None``) and in every other revision a batch gets one
    ``-32600`` error with ``id: null``.
    """
    return version in BATCH_VERSIONS


# ------------------------------------------------------------------------------------------------ methods
# Requests a server answers.
INITIALIZE: Final = "initialize"
PING: Final = "ping"
"""Either side may send it."""
SERVER_DISCOVER: Final = "server/discover"
TOOLS_LIST: Final = "tools/list"
TOOLS_CALL: Final = "tools/call"
RESOURCES_LIST: Final = "resources/list"
RESOURCES_TEMPLATES_LIST: Final = "resources/templates/list"
RESOURCES_READ: Final = "resources/read"
RESOURCES_SUBSCRIBE: Final = "resources/subscribe"
RESOURCES_UNSUBSCRIBE: Final = "resources/unsubscribe"
PROMPTS_LIST: Final = "prompts/list"
PROMPTS_GET: Final = "prompts/get"
COMPLETION_COMPLETE: Final = "completion/complete"
LOGGING_SET_LEVEL: Final = "logging/setLevel"
SUBSCRIPTIONS_LISTEN: Final = "subscriptions/listen"
# 2025-11-25 experimental tasks (SEP-1686): a receiver answers them; mcpframe's server is the receiver.
TASKS_GET: Final = "tasks/get"
TASKS_RESULT: Final = "tasks/result"
TASKS_LIST: Final = "tasks/list"
TASKS_CANCEL: Final = "tasks/cancel"
TASKS_UPDATE: Final = "tasks/update"
"""2026-07-28's tasks extension: the client's answers to a task's ``inputRequests``."""

# Requests a client answers.
SAMPLING_CREATE_MESSAGE: Final = "sampling/createMessage"
ROOTS_LIST: Final = "roots/list"
ELICITATION_CREATE: Final = "elicitation/create"

# Notifications.
NOTIFICATIONS_INITIALIZED: Final = "notifications/initialized"
NOTIFICATIONS_CANCELLED: Final = "notifications/cancelled"
NOTIFICATIONS_PROGRESS: Final = "notifications/progress"
NOTIFICATIONS_MESSAGE: Final = "notifications/message"
NOTIFICATIONS_TOOLS_LIST_CHANGED: Final = "notifications/tools/list_changed"
NOTIFICATIONS_PROMPTS_LIST_CHANGED: Final = "notifications/prompts/list_changed"
NOTIFICATIONS_RESOURCES_LIST_CHANGED: Final = "notifications/resources/list_changed"
NOTIFICATIONS_RESOURCES_UPDATED: Final = "notifications/resources/updated"
NOTIFICATIONS_ROOTS_LIST_CHANGED: Final = "notifications/roots/list_changed"
NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED: Final = "notifications/subscriptions/acknowledged"
NOTIFICATIONS_TASKS_STATUS: Final = "notifications/tasks/status"
NOTIFICATIONS_TASKS: Final = "notifications/tasks"
"""2026-07-28's tasks extension: a task's status, sent on a `subscriptions/listen` naming it (`taskIds`)."""

SERVER_METHODS: Final = frozenset(
    {
        INITIALIZE,
        PING,
        SERVER_DISCOVER,
        TOOLS_LIST,
        TOOLS_CALL,
        RESOURCES_LIST,
        RESOURCES_TEMPLATES_LIST,
        RESOURCES_READ,
        RESOURCES_SUBSCRIBE,
        RESOURCES_UNSUBSCRIBE,
        PROMPTS_LIST,
        PROMPTS_GET,
        COMPLETION_COMPLETE,
        LOGGING_SET_LEVEL,
        SUBSCRIPTIONS_LISTEN,
        TASKS_GET,
        TASKS_RESULT,
        TASKS_LIST,
        TASKS_CANCEL,
        TASKS_UPDATE,
    }
)
"""Every request method a server answers."""
CLIENT_METHODS: Final = frozenset({PING, SAMPLING_CREATE_MESSAGE, ROOTS_LIST, ELICITATION_CREATE})
"""Every request method a client answers."""
NOTIFICATIONS: Final = frozenset(
    {
        NOTIFICATIONS_INITIALIZED,
        NOTIFICATIONS_CANCELLED,
        NOTIFICATIONS_PROGRESS,
        NOTIFICATIONS_MESSAGE,
        NOTIFICATIONS_TOOLS_LIST_CHANGED,
        NOTIFICATIONS_PROMPTS_LIST_CHANGED,
        NOTIFICATIONS_RESOURCES_LIST_CHANGED,
        NOTIFICATIONS_RESOURCES_UPDATED,
        NOTIFICATIONS_ROOTS_LIST_CHANGED,
        NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED,
        NOTIFICATIONS_TASKS_STATUS,
        NOTIFICATIONS_TASKS,
    }
)
"""Every notification method either side sends."""
LIST_CHANGED_NOTIFICATIONS: Final = (
    ("tools", NOTIFICATIONS_TOOLS_LIST_CHANGED),
    ("prompts", NOTIFICATIONS_PROMPTS_LIST_CHANGED),
    ("resources", NOTIFICATIONS_RESOURCES_LIST_CHANGED),
)
"""(list kind, its `list_changed` notification) for each list a server may announce changes of."""

# Completion reference types (`params.ref.type` of `completion/complete`).
REF_PROMPT: Final = "ref/prompt"
REF_RESOURCE: Final = "ref/resource"

# ---------------------------------------------------------------------------------------------- _meta keys

PROGRESS_TOKEN: Final = "progressToken"
"""In a request's `_meta`: the token its `notifications/progress` will carry (also a param there)."""

META_KEY_PREFIX: Final = "io.modelcontextprotocol/"
"""The prefix the specification reserves for its own `_meta` keys."""
PROTOCOL_VERSION_KEY: Final = "io.modelcontextprotocol/protocolVersion"
"""In a request's `_meta`: the modern revision it speaks; its presence makes the request modern."""
CLIENT_CAPABILITIES_KEY: Final = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY: Final = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL_KEY: Final = "io.modelcontextprotocol/logLevel"
"""In a modern request's `_meta`: the lowest log level the client wants (replaces `logging/setLevel`)."""
SERVER_INFO_KEY: Final = "io.modelcontextprotocol/serverInfo"
"""In a modern result's `_meta`: the server's name and version."""
SUBSCRIPTION_ID_KEY: Final = "io.modelcontextprotocol/subscriptionId"
"""In the `_meta` of what a `subscriptions/listen` stream carries: the id of that listen request."""
TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"
"""2026-07-28: the tasks extension's name in ``capabilities.extensions`` (both sides declare it)."""
RELATED_TASK_KEY: Final = "io.modelcontextprotocol/related-task"
"""In the `_meta` of a message that belongs to a task (2025-11-25): `{"taskId": ...}`."""
MODERN_META_KEYS: Final = frozenset(
    {
        PROTOCOL_VERSION_KEY,
        CLIENT_CAPABILITIES_KEY,
        CLIENT_INFO_KEY,
        LOG_LEVEL_KEY,
        SERVER_INFO_KEY,
        SUBSCRIPTION_ID_KEY,
    }
)

LoggingLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
"""A log level's name, for type checkers (what `logging/setLevel` and `notifications/message` carry)."""
LOGGING_LEVELS: Final[tuple[LoggingLevel, ...]] = get_args(LoggingLevel)
"""The log levels, least severe first (syslog's order): the same list as `LoggingLevel`, at run time."""
