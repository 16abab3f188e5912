"""One line for an exception raised by the user's code while `mcpframe serve` loads it.

The line starts with the place in the user's own files (`server.py:3:`), the way compilers and Python's
own `SyntaxError` do, so an editor can jump there, and ends with what went wrong in the user's words:

    server.py:5:9: invalid syntax
    server.py:3: No module named 'foo' (imported by your module)
    server.py:12: ValueError: no API key (raised while importing server.py)

The user's place is the deepest frame of the traceback in a file that belongs to neither Python, the
installed packages, nor mcpframe; the importlib frames in between are what made a syntax error 31 lines
long. `--traceback` (or `MCPFRAME_DEBUG=1`) prints the whole traceback as well.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import traceback
from pathlib import Path

__all__ = ["TargetError", "describe", "shown", "user_frame"]

_MCPFRAME = str(Path(__file__).resolve().parents[1])
_LIBRARIES = tuple(
    {
        str(Path(p).resolve())
        for key in ("stdlib", "platstdlib", "purelib", "platlib")
        if (p := sysconfig.get_path(key))
    }
)
_NOT_USER = (_MCPFRAME, *_LIBRARIES)


class TargetError(Exception):
    """A target that cannot be served: `str(error)` is the one line to print, `status` the exit code.

    `status` is 2 when the command line names something that is not there (a usage error) and 1 when
    the user's code failed; `cause` is the user's exception, if any, for `--traceback`.
    """

    def __init__(self, message: str, *, status: int = 2, cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.cause = cause


def shown(path: str) -> str:
    """`path` as the user would type it: relative to the current directory when it is below it."""
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return path
    return path if relative.startswith("..") else relative


def _is_user(filename: str) -> bool:
    if filename.startswith("<"):  # <frozen importlib._bootstrap>, <string>
        return False
    resolved = str(Path(filename).resolve())
    return not any(resolved == root or resolved.startswith(root + os.sep) for root in _NOT_USER)


def _frames(exc: BaseException) -> list[traceback.FrameSummary]:
    """`exc`'s traceback without importlib's own frames."""
    return [frame for frame in traceback.extract_tb(exc.__traceback__) if not frame.filename.startswith("<")]


def user_frame(exc: BaseException) -> traceback.FrameSummary | None:
    """The deepest frame of `exc`'s traceback in the user's own files, if any."""
    frames = [frame for frame in _frames(exc) if _is_user(frame.filename)]
    return frames[-1] if frames else None


def _first_line(text: str) -> str:
    """One line of a message; a longer one says where the rest is."""
    lines = text.strip().splitlines() or [""]
    return lines[0] if len(lines) == 1 else f"{lines[0]} ... (--traceback shows all of it)"


def _is_definition_error(exc: BaseException) -> bool:
    """A tool, resource or prompt the server refused at decoration time: its message says it all."""
    return isinstance(exc, TypeError) and type(exc).__name__.endswith("DefinitionError")


def _import_error(exc: ImportError, frame: traceback.FrameSummary | None) -> str:
    """`No module named 'foo' (imported by your module)`, or by the library in between."""
    if "relative import" in str(exc):  # nothing is missing: a file run alone has no package
        return _first_line(str(exc))
    deepest = _frames(exc)[-1:]
    if (
        frame is not None
        and deepest
        and (deepest[0].filename, deepest[0].lineno) != (frame.filename, frame.lineno)
    ):
        who = f"{shown(deepest[0].filename)}, which your module imports"
    else:
        who = "your module"
    if isinstance(exc, ModuleNotFoundError):
        who += f"; is it installed for {sys.executable}?"
    return f"{_first_line(str(exc))} (imported by {who})"


def describe(exc: BaseException, context: str) -> str:
    """One line: where in the user's files `exc` comes from and what it says (`context` names the step)."""
    if isinstance(exc, SyntaxError):  # IndentationError and TabError too; the frames are importlib's
        place = shown(exc.filename) if exc.filename else "?"
        column = f":{exc.offset}" if exc.offset else ""
        return f"{place}:{exc.lineno}{column}: {exc.msg}"
    frame = user_frame(exc)
    place = f"{shown(frame.filename)}:{frame.lineno}: " if frame is not None else ""
    if _is_definition_error(exc):
        return f"{place}{_first_line(str(exc))}"
    if isinstance(exc, ImportError):
        return f"{place}{_import_error(exc, frame)}"
    where = "" if frame is not None else "; --traceback shows where"
    return f"{place}{type(exc).__name__}: {_first_line(str(exc))} ({context}{where})"
