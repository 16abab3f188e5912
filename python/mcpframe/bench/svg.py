"""A hand-written SVG bar chart of a benchmark run: throughput per contender, one panel per corpus.

Bars are MB/s on a logarithmic axis (the contenders span two or three orders of magnitude); unavailable
or failed contenders appear as a note instead of a bar.
"""

from __future__ import annotations

import math
from xml.sax.saxutils import escape

from mcpframe.bench.runner import MIB, FrameRow, Results, Row

__all__ = ["chart"]

_WIDTH = 1000
_LABEL_W = 270
_BAR_W = 480
_BAR_H = 18
_GAP = 6
_HEAD = 30
_COLORS = {
    "native": "#e8590c",
    "python": "#f6a35c",
    "orjson": "#868e96",
    "msgspec": "#1c7ed6",
    "mcp": "#7048e8",
}


def _color(key: str) -> str:
    return next((c for prefix, c in _COLORS.items() if key.startswith(prefix)), "#495057")


def _domain(rows: list[Row]) -> tuple[float, float]:
    values = [r.mb_per_s for r in rows if r.mb_per_s]
    if not values:
        return 0.0, 1.0
    return math.floor(math.log10(min(values))), math.ceil(math.log10(max(values))) + 0.0001


def _x(value: float, lo: float, hi: float) -> float:
    return _LABEL_W + (math.log10(value) - lo) / (hi - lo) * _BAR_W


def _text(x: float, y: float, body: str, **attrs: str) -> str:
    extra = "".join(f' {k.replace("_", "-")}="{v}"' for k, v in attrs.items())
    return f'<text x="{x:.1f}" y="{y:.1f}"{extra}>{escape(body)}</text>'


def _grid(lo: float, hi: float, top: float, bottom: float) -> list[str]:
    parts: list[str] = []
    for power in range(int(lo), math.ceil(hi)):
        x = _x(10.0**power, lo, hi)
        parts.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{bottom}" stroke="#dee2e6"/>')
        parts.append(_text(x, bottom + 14, f"{10.0**power:g}", text_anchor="middle", fill="#868e96"))
    return parts


def _bar(row: Row, y: float, lo: float, hi: float) -> list[str]:
    parts = [_text(_LABEL_W - 8, y + 13, row.label, text_anchor="end")]
    if row.mb_per_s is None:
        parts.append(_text(_LABEL_W + 4, y + 13, row.status, fill="#adb5bd", font_style="italic"))
        return parts
    end = _x(row.mb_per_s, lo, hi)
    width = max(1.0, end - _LABEL_W)
    parts.append(
        f'<rect x="{_LABEL_W}" y="{y:.1f}" width="{width:.1f}" height="{_BAR_H}" '
        f'fill="{_color(row.key)}"><title>{escape(row.label)}</title></rect>'
    )
    ratio = f" (time {row.ratio:.2f}x orjson)" if row.ratio is not None else ""
    parts.append(_text(end + 6, y + 13, f"{row.mb_per_s:,.1f} MB/s{ratio}"))
    return parts


def _frame_rows(frames: list[FrameRow], chunk: int) -> list[Row]:
    rows: list[Row] = []
    for frame in frames:
        name = f"{frame.size // MIB} MiB (mcpframe fed {chunk // 1024} KiB chunks, orjson whole)"
        row = Row(
            "frame", name, frame.key, frame.label, frame.status, frame.reason, 1, frame.size, frame.best_s
        )
        base = next((f.best_s for f in frames if f.size == frame.size and f.key == "orjson"), None)
        row.ratio = frame.best_s / base if frame.best_s and base else None
        rows.append(row)
    return rows


def chart(results: Results, title: str = "mcpframe benchmark", subtitle: str = "", method: str = "") -> str:
    """The SVG document for ``results``: the corpora, then the big frames.

    ``method`` (how it was measured: clock, rounds, a ``--quick`` smoke run) goes under the title, in red
    for a smoke run, so a chart of a smoke run is never taken for a measurement.
    """
    rows = results.rows + _frame_rows(results.frames, results.settings.chunk)
    lo, hi = _domain(rows)
    parts: list[str] = [_text(12, 22, title, font_size="16", font_weight="bold")]
    y = 40.0
    if subtitle:
        parts.append(_text(12, 40, subtitle, fill="#495057"))
        y += 12
    if method:
        smoke = results.settings.quick
        y += 16
        parts.append(
            _text(
                12,
                y,
                method,
                fill="#c92a2a" if smoke else "#495057",
                font_weight="bold" if smoke else "normal",
            )
        )
    for op, corpus in dict.fromkeys((r.op, r.corpus) for r in rows):
        group = [r for r in rows if (r.op, r.corpus) == (op, corpus)]
        parts.append(_text(12, y + 18, f"{op} {corpus}", font_weight="bold"))
        top = y + _HEAD - 4
        y += _HEAD
        for row in group:
            parts += _bar(row, y, lo, hi)
            y += _BAR_H + _GAP
        parts = parts[:1] + _grid(lo, hi, top, y) + parts[1:]
        y += 24
    parts.append(_text(12, y + 4, "throughput in MB/s, logarithmic axis; higher is better", fill="#868e96"))
    height = y + 16
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{height:.0f}" '
        f'viewBox="0 0 {_WIDTH} {height:.0f}" font-family="sans-serif" font-size="12">'
    )
    background = f'<rect width="{_WIDTH}" height="{height:.0f}" fill="white"/>'
    return "\n".join([head, background, *parts, "</svg>"]) + "\n"
