"""Hostile JSON-RPC frames, seeded: a catalogue of known-nasty shapes plus random mutations of valid traffic.

``hostile_frame(rng)`` returns the bytes of one frame (no trailing newline; the caller adds the framing). The
same ``random.Random`` seed gives the same sequence, so any finding replays from its seed and step number.
"""

from __future__ import annotations

import json
import random

# Valid traffic the mutations start from. Ids here live far from the driver's own ids ("ok-N").
VALID: tuple[bytes, ...] = (
    b'{"jsonrpc":"2.0","id":900001,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}',
    b'{"jsonrpc":"2.0","id":"h-1","method":"tools/list","params":{}}',
    b'{"jsonrpc":"2.0","id":900002,"method":"ping"}',
    b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":0.5}}',
    b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":900009}}',
    b'{"jsonrpc":"2.0","id":900003,"result":{}}',
    b'{"jsonrpc":"2.0","id":900004,"error":{"code":-32601,"message":"no"}}',
    b'{"jsonrpc":"2.0","id":900005,"method":"resources/read","params":{"uri":"notes://todo"}}',
    b'{"jsonrpc":"2.0","id":900006,"method":"prompts/get","params":{"name":"summarize",'
    b'"arguments":{"topic":"x"}}}',
    b'[{"jsonrpc":"2.0","id":900007,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"}]',
)

_IDS = (
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",
    "-18446744073709551616",
    "1e400",
    "-1e400",
    "-0",
    "0.0",
    "-0.0",
    "1.0",
    "1.5",
    "1e2",
    "null",
    "true",
    "false",
    "[]",
    "{}",
    '""',
    '"\\ud800"',
    '"\\u0000"',
    "9" * 4301,
    "-" + "9" * 5000,
    "0." + "1" * 5000,
)

_MEMBERS = ("jsonrpc", "id", "method", "params", "result", "error")
_WRONG = ("null", "1", "-1", "1.5", "true", '"x"', '""', "[]", "{}", '[1,"a"]', '{"a":1}', '"\\ud800"')


def _catalogue(rng: random.Random) -> bytes:  # noqa: C901, PLR0911, PLR0912 - a table of cases
    """One of the hand-written hostile shapes."""
    kind = rng.randrange(24)
    if kind == 0:  # an id at the integer edges, or not an integer at all
        return b'{"jsonrpc":"2.0","id":%s,"method":"ping"}' % rng.choice(_IDS).encode()
    if kind == 1:  # a response to a request never sent, with an edge id
        body = rng.choice(('"result":{}', '"error":{"code":1,"message":"m"}', '"result":null'))
        return b'{"jsonrpc":"2.0","id":%s,%s}' % (rng.choice(_IDS).encode(), body.encode())
    if kind == 2:  # deep nesting, in params or bare
        depth = rng.choice((64, 127, 128, 129, 1000, 100_000))
        inner = b"[" * depth + b"]" * depth if rng.random() < 0.5 else b'{"a":' * depth + b"1" + b"}" * depth
        if rng.random() < 0.3:
            return inner
        return b'{"jsonrpc":"2.0","id":900010,"method":"ping","params":{"x":%s}}' % inner
    if kind == 3:  # a huge string
        size = rng.choice((10_000, 1_000_000, 4_000_000))
        return b'{"jsonrpc":"2.0","id":900011,"method":"tools/call","params":{"name":"word_count",' + (
            b'"arguments":{"text":"' + b"a " * (size // 2) + b'"}}}'
        )
    if kind == 4:  # invalid UTF-8 in a string or a key
        junk = bytes(rng.choice((0x80, 0xC0, 0xC3, 0xED, 0xF4, 0xF8, 0xFF)) for _ in range(rng.randint(1, 4)))
        return b'{"jsonrpc":"2.0","id":900012,"method":"ping","params":{"%s":"%s"}}' % (junk, junk)
    if kind == 5:  # lone surrogates and NUL in escapes, in every member
        esc = rng.choice((b"\\ud800", b"\\udc00", b"\\ud800\\u0041", b"\\u0000", b"\\ud83d"))
        where = rng.randrange(3)
        if where == 0:
            return b'{"jsonrpc":"2.0","id":"%s","method":"ping"}' % esc
        if where == 1:
            return b'{"jsonrpc":"2.0","id":900013,"method":"p%sing"}' % esc
        return b'{"jsonrpc":"2.0","id":900013,"method":"ping","params":{"%s":1}}' % esc
    if kind == 6:  # raw control bytes, NUL, CR, BOM inside and around
        pre = rng.choice((b"", b"\xef\xbb\xbf", b"\x00", b"\r", b" \t", b"\xef\xbb\xbf\xef\xbb\xbf"))
        post = rng.choice((b"", b"\r", b"\x00", b" ", b"\r\r"))
        return pre + rng.choice(VALID) + post
    if kind == 7:  # empty and whitespace lines
        return rng.choice((b"", b" ", b"\r", b"\t", b"\x0b", b"\x0c", b"\xc2\xa0"))
    if kind == 8:  # batches: empty, nested, mixed, big
        return rng.choice(
            (
                b"[]",
                b"[[]]",
                b"[1,2,3]",
                b'[{"jsonrpc":"2.0","id":900014,"method":"ping"},[]]',
                b'[{"jsonrpc":"2.0","id":900015,"method":"ping"},1,"x",null,{}]',
                b"[" + b",".join([b'{"jsonrpc":"2.0","method":"notifications/x"}'] * 5000) + b"]",
                b'[{"jsonrpc":"2.0","id":900016,"result":{}},{"jsonrpc":"2.0","id":900017,"method":"ping"}]',
            )
        )
    if kind == 9:  # a wrong type for one envelope member
        member = rng.choice(_MEMBERS)
        value = rng.choice(_WRONG)
        base = {"jsonrpc": '"2.0"', "id": "900018", "method": '"ping"'}
        if member in ("result", "error"):
            base.pop("method")
        base[member] = value
        return ("{" + ",".join(f'"{k}":{v}' for k, v in base.items()) + "}").encode()
    if kind == 10:  # duplicate keys
        key = rng.choice(_MEMBERS)
        return b'{"jsonrpc":"2.0","id":900019,"method":"ping","%s":%s}' % (
            key.encode(),
            rng.choice(_WRONG).encode(),
        )
    if kind == 11:  # a notification that carries an id, or a notification method with a bad shape
        return rng.choice(
            (
                b'{"jsonrpc":"2.0","id":900020,"method":"notifications/initialized"}',
                b'{"jsonrpc":"2.0","id":900021,"method":"notifications/cancelled","params":{"requestId":"ok-1"}}',
                b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{}}}',
                b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":[]}',
                b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":[],"progress":"x"}}',
            )
        )
    if kind == 12:  # long integers in params
        digits = rng.choice((4300, 4301, 20_000))
        sign = rng.choice(("", "-"))
        return b'{"jsonrpc":"2.0","id":900022,"method":"tools/call","params":{"name":"add",' + (
            b'"arguments":{"a":%s%s,"b":1}}}' % (sign.encode(), b"9" * digits)
        )
    if kind == 13:  # floats that do not fit
        value = rng.choice(("1e400", "-1e400", "1e-400", "-0", "1.0", "0.1e1", "1E+2"))
        return b'{"jsonrpc":"2.0","id":900023,"method":"tools/call","params":{"name":"add",' + (
            b'"arguments":{"a":%s,"b":1}}}' % value.encode()
        )
    if kind == 14:  # truncated JSON
        frame = rng.choice(VALID)
        return frame[: rng.randrange(len(frame))]
    if kind == 15:  # trailing garbage after a complete value
        return rng.choice(VALID) + rng.choice((b"x", b"}", b"]", b",", b" {}", b"\x00", b"//c"))
    if kind == 16:  # scalar and odd top-level values
        return rng.choice((b"1", b"null", b'"x"', b"true", b"1e400", b"-", b"{", b"}", b"NaN", b"Infinity"))
    if kind == 17:  # the wrong jsonrpc version
        return b'{"jsonrpc":%s,"id":900024,"method":"ping"}' % rng.choice(
            (b'"1.0"', b'"2.00"', b'"2.0 "', b'"2"', b"2.0", b'"\\u0032.0"')
        )
    if kind == 18:  # a method name that is odd
        name = rng.choice(('""', '"a"*', '"' + "m" * 100_000 + '"', '"tools/call\\u0000"', '"rpc.x"', '"/"'))
        return ('{"jsonrpc":"2.0","id":900025,"method":' + name + "}").encode()
    if kind == 19:  # params that are not an object or array
        return (
            b'{"jsonrpc":"2.0","id":900026,"method":"tools/list","params":%s}' % rng.choice(_WRONG).encode()
        )
    if kind == 20:  # error objects with odd codes and data
        code = rng.choice(("1e400", "1.5", '"x"', "9" * 4301, "-32700", "null"))
        return b'{"jsonrpc":"2.0","id":900027,"error":{"code":%s,"message":1,"data":[[[]]]}}' % code.encode()
    if kind == 21:  # tools/call with odd arguments
        args = rng.choice(('{"a":"x","b":[]}', "[]", "null", '{"a":1}', '{"a":1,"b":2,"c":3}', "1"))
        return (
            '{"jsonrpc":"2.0","id":900028,"method":"tools/call","params":{"name":"add","arguments":'
            + args
            + "}}"
        ).encode()
    if kind == 22:  # a second initialize, or requests before/after odd lifecycle steps
        return rng.choice(
            (
                b'{"jsonrpc":"2.0","id":900029,"method":"initialize","params":{"protocolVersion":"1999-01-01",'
                b'"capabilities":{},"clientInfo":{"name":"h","version":"1"}}}',
                b'{"jsonrpc":"2.0","id":900030,"method":"initialize"}',
                b'{"jsonrpc":"2.0","id":900031,"method":"logging/setLevel","params":{"level":"nope"}}',
                b'{"jsonrpc":"2.0","id":900032,"method":"resources/read","params":{"uri":"\\u0000"}}',
            )
        )
    # kind 23: a JSON value built by json.dumps from random odd parts
    value = {"jsonrpc": "2.0", "id": rng.choice([None, 1.5, -1, "x" * 300, [], {}]), "method": "ping"}
    return json.dumps(value, ensure_ascii=rng.random() < 0.5).encode()


def _mutate(rng: random.Random, frame: bytes) -> bytes:
    """Random byte-level edits of a valid frame."""
    data = bytearray(frame)
    for _ in range(rng.randint(1, 8)):
        op = rng.randrange(6)
        pos = rng.randrange(len(data) + 1)
        if op == 0 and data:  # flip a byte to any value
            data[min(pos, len(data) - 1)] = rng.randrange(256)
        elif op == 1:  # insert a random byte
            data.insert(pos, rng.randrange(256))
        elif op == 2 and data:  # delete a run
            del data[pos : pos + rng.randint(1, 16)]
        elif op == 3:  # insert a JSON token
            token = rng.choice(
                (b"{", b"}", b"[", b"]", b",", b":", b'"', b"\\", b"\\u", b"null", b"1e999", b"-")
            )
            data[pos:pos] = token
        elif op == 4 and data:  # duplicate a run
            run = data[pos : pos + rng.randint(1, 64)]
            data[pos:pos] = run
        else:  # splice with another valid frame
            other = rng.choice(VALID)
            data[pos:] = other[rng.randrange(len(other)) :]
    return bytes(data)


def hostile_frame(rng: random.Random) -> bytes:
    """One hostile frame: a catalogue shape or a byte mutation of valid traffic, about half each."""
    if rng.random() < 0.5:
        return _catalogue(rng)
    return _mutate(rng, rng.choice(VALID))


def split_framing(rng: random.Random, frame: bytes) -> bytes:
    """``frame`` ended with LF, CRLF or CR LF mixes, sometimes with blank lines around it (stdio framing)."""
    end = rng.choice((b"\n", b"\r\n", b"\n\n", b"\r\n\r\n", b"\n\r\n"))
    return frame.replace(b"\n", b"") + end
