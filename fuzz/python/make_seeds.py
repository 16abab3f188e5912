"""Write the committed seed corpus, ``fuzz/seeds/``: realistic MCP traffic and hostile frames.

Every seed is a byte stream (one or more NDJSON frames) that all three targets start from; the
cargo-fuzz ``frame`` target reads the same bytes as one frame. Run ``python fuzz/python/make_seeds.py``
after editing the list; the files are committed, so the corpus does not depend on this script's
environment. Integers are written from digit strings, never through ``int``/``str`` conversions, so
the 4,301-digit ones need no change to ``sys.set_int_max_str_digits``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

SEEDS = Path(__file__).resolve().parent.parent / "seeds"
BOM = b"\xef\xbb\xbf"


def line(value: Any) -> bytes:
    """``value`` as one compact NDJSON line (raw UTF-8)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def digits(n: int, sign: str = "") -> bytes:
    """An integer literal of exactly ``n`` digits (``n`` >= 1), built as text."""
    return (sign + "9" + "1234567890" * (n // 10 + 1))[: n + len(sign)].encode()


def frame(template: bytes, literal: bytes) -> bytes:
    """``template`` with ``@`` replaced by ``literal``, as one line."""
    return template.replace(b"@", literal) + b"\n"


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {"roots": {"listChanged": True}, "sampling": {}, "elicitation": {}},
        "clientInfo": {"name": "fuzz-client", "version": "1.0.0"},
    },
}
TOOLS_CALL = {
    "jsonrpc": "2.0",
    "id": "call-7",
    "method": "tools/call",
    "params": {
        "name": "search",
        "arguments": {
            "query": 'a "quoted" \\ path\tand\nnewline',
            "filters": [{"field": "size", "op": ">=", "value": 1.5e3}, {"tags": ["a", "b", []]}],
            "limit": 10,
            "deep": {"a": {"b": {"c": [None, True, False, -0.0, 12345678901234567890]}}},
        },
        "_meta": {"progressToken": 42},
    },
}
BIG_TEXT = 'Lorem ipsum \u00e9\u4e2d\u6587 \U0001f600 \u2028 line\nbreak "q" ' * 60
RESULT = {
    "jsonrpc": "2.0",
    "id": 7,
    "result": {"content": [{"type": "text", "text": BIG_TEXT}], "isError": False},
}
ERROR = {
    "jsonrpc": "2.0",
    "id": 3,
    "error": {"code": -32602, "message": "Invalid params", "data": {"field": "name", "why": ["missing"]}},
}
NOTIFICATIONS = [
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 42, "progress": 0.5}},
    {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7, "reason": "user"}},
]


def realistic() -> dict[str, bytes]:
    """Ordinary traffic of both eras, the way a client and a server write it."""
    tools_list_result = {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {
            "tools": [
                {
                    "name": "add",
                    "description": "Add two numbers.",
                    "inputSchema": {
                        "type": "object",
                        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                        "required": ["a", "b"],
                    },
                }
            ],
            "nextCursor": "c1",
        },
    }
    session = [INITIALIZE, NOTIFICATIONS[0], {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}]
    return {
        "initialize.ndjson": line(INITIALIZE),
        "session.ndjson": b"".join(line(m) for m in session),
        "tools_call_nested.ndjson": line(TOOLS_CALL),
        "tools_list_result.ndjson": line(tools_list_result),
        "result_big_text.ndjson": line(RESULT),
        "error_with_data.ndjson": line(ERROR),
        "error_null_id.ndjson": b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}'
        b"\n",
        "notifications.ndjson": b"".join(line(m) for m in NOTIFICATIONS),
        "batch_mixed.ndjson": line(
            [INITIALIZE, NOTIFICATIONS[1], ERROR, {"jsonrpc": "2.0", "id": 9, "result": []}, {"x": 1}, 3]
        ),
        "non_ascii.ndjson": line(
            {"jsonrpc": "2.0", "id": "\u00e9\u4e2d", "method": "m\u00e9thode/\U0001f600"}
        ),
        "escaped_non_ascii.ndjson": json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "\u00e9\U0001f600", "params": ["\u2028\x00\x1f"]},
            separators=(", ", ": "),
        ).encode()
        + b"\n",
        "escaped_keys.ndjson": b'{"\\u006asonrpc":"2.0","\\u0069d":"\\u0031","method":"a\\/b","params":{}}\n',
        "pretty_spacing.ndjson": b' { "jsonrpc" : "2.0" ,\t"id" : 1 , "result" : [ ] } \t\n',
        "ids_small_and_big.ndjson": b"".join(
            frame(b'{"jsonrpc":"2.0","id":@,"result":null}', literal)
            for literal in [
                b"0",
                b"-0",
                b"-1",
                b"9007199254740991",
                b"9007199254740993",
                b"9223372036854775807",
                b"9223372036854775808",
                b"-9223372036854775808",
                b"-9223372036854775809",
                b"18446744073709551615",
                b"18446744073709551616",
                b"18446744073709551618",
                b'""',
                b'"1"',
                b"1180591620717411303424",
            ]
        ),
    }


def hostile() -> dict[str, bytes]:
    """Frames that have broken parsers: limits, invalid bytes, spec edge cases, odd framing."""
    deep_128 = b'{"jsonrpc":"2.0","id":1,"method":"m","params":' + b"[" * 127 + b"]" * 127 + b"}\n"
    deep_129 = b'{"jsonrpc":"2.0","id":1,"method":"m","params":' + b"[" * 128 + b"]" * 128 + b"}\n"
    return {
        "int_4300_digits_params.ndjson": frame(
            b'{"jsonrpc":"2.0","id":1,"method":"m","params":[@]}', digits(4300)
        ),
        "int_4301_digits_params.ndjson": frame(
            b'{"jsonrpc":"2.0","id":1,"method":"m","params":[@]}', digits(4301)
        ),
        "int_4301_digits_id.ndjson": frame(b'{"jsonrpc":"2.0","id":@,"method":"m"}', digits(4301, "-")),
        "int_4301_digits_result.ndjson": frame(b'{"jsonrpc":"2.0","id":"r","result":{"n":@}}', digits(4301)),
        "int_4301_digits_error_data.ndjson": frame(
            b'{"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"m","data":@}}', digits(4301)
        ),
        "int_4301_in_notification_and_batch.ndjson": frame(
            b'[{"jsonrpc":"2.0","method":"n","params":[@]},{"jsonrpc":"2.0","id":1,"result":0}]', digits(4301)
        ),
        "int_4301_digits_batch_element.ndjson": b"[" + digits(4301) + b", 2]\n[" + digits(4301, "-") + b"]\n",
        "float_long_mantissa.ndjson": frame(b'{"jsonrpc":"2.0","id":1,"result":@.5e-3}', digits(4400)),
        "ids_2_64.ndjson": b'{"jsonrpc":"2.0","id":18446744073709551616,"method":"m"}\n'
        b'{"jsonrpc":"2.0","id":-18446744073709551616,"result":1}\n',
        "invalid_utf8.ndjson": b'{"jsonrpc":"2.0","id":1,"method":"\xff"}\n'
        b'{"jsonrpc":"2.0","id":1,"method":"\xc0\x80"}\n'
        b'{"jsonrpc":"2.0","id":1,"method":"\xed\xa0\x80"}\n'
        b'{"jsonrpc":"2.0","id":1,"method":"\xe2\x82"}\n\xf4\x90\x80\x80\n',
        "lone_surrogate_escape.ndjson": b'{"jsonrpc":"2.0","id":1,"method":"\\ud800"}\n'
        b'{"jsonrpc":"2.0","id":1,"method":"\\ud83d\\ude00"}\n',
        "nesting_128.ndjson": deep_128,
        "nesting_129.ndjson": deep_129,
        "nesting_in_strings.ndjson": b'{"jsonrpc":"2.0","id":1,"method":"' + b'[\\"' * 200 + b'"}\n',
        "spec_invalid_notification.ndjson": b'{"jsonrpc": "2.0", "method": 1, "params": "bar"}\n',
        "spec_examples.ndjson": b'{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]\n'
        b"[]\n[1]\n[1,2,3]\n"
        b'[{"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},{"jsonrpc": "2.0", "method"]\n',
        "invalid_notifications.ndjson": b'{"method":"n"}\n{"jsonrpc":"1.0","method":"n"}\n'
        b'{"jsonrpc":"2.0","method":"n","params":3}\n{"jsonrpc":"2.0","method":"n","result":1}\n',
        "empty.ndjson": b"",
        "whitespace_only.ndjson": b" \t\r\n\n \r\n\t",
        "crlf.ndjson": b'{"jsonrpc":"2.0","id":1,"method":"ping"}\r\n\r\n'
        b'{"jsonrpc":"2.0","id":1,"result":{}}\r\n',
        "content_cr.ndjson": b'{"jsonrpc":"2.0",\r"id":1,"method":"ping"}\r\r\n\r',
        "bom_first.ndjson": BOM + line(INITIALIZE),
        "bom_twice_and_partial.ndjson": BOM + BOM + b'{"jsonrpc":"2.0","method":"n"}\n\xef\xbb{}\n',
        "partial_bom_only.ndjson": b"\xef\xbb",
        "unterminated_final.ndjson": b'{"jsonrpc":"2.0","method":"n"}\n'
        b'{"jsonrpc":"2.0","id":1,"method":"x"}\r',
        "duplicate_keys.ndjson": b'{"jsonrpc":"2.0","id":1,"id":"b","method":1,"method":"m","result":1}\n',
        "bad_ids_and_codes.ndjson": b'{"jsonrpc":"2.0","id":1.0,"method":"m"}\n'
        b'{"jsonrpc":"2.0","id":true,"result":1}\n'
        b'{"jsonrpc":"2.0","id":null,"result":1}\n{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"m"}}\n'
        b'{"jsonrpc":"2.0","id":1,"error":{"code":1e400,"message":"m"}}\n{"jsonrpc":2.0,"id":1,"result":1}\n',
        "invalid_json.ndjson": b'{"jsonrpc":"2.0","id":1,"result":NaN}\n'
        b'{"a":1,}\n[1,]\n{"a" 1}\n-\n1e400\n"\x01"\n',
        "scalars.ndjson": b'null\ntrue\n1\n"s"\n-0\n',
    }


def main() -> int:
    """Rewrite ``fuzz/seeds/`` from the lists above."""
    SEEDS.mkdir(exist_ok=True)
    for old in SEEDS.glob("*.ndjson"):
        old.unlink()
    seeds = {**realistic(), **hostile()}
    for name, data in sorted(seeds.items()):
        (SEEDS / name).write_bytes(data)
    print(f"wrote {len(seeds)} seeds, {sum(map(len, seeds.values()))} bytes, into {SEEDS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
