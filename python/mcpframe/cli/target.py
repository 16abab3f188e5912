"""What `mcpframe serve TARGET` serves: find the user's module, import it, pick the server object.

A target is a *source* and an optional *name*, `SOURCE[:NAME]`:

- `server.py`, `path/to/server.py`, `path/to/package/` (a file, or a directory with `__init__.py`): its
  directory goes first on `sys.path`, as `python server.py` does, so its neighbours import;
- `package.module`: a module importable from the current directory (put first on `sys.path`, as
  `python -m` does) or from the installed packages.

`NAME` is an attribute, or a dotted path (`holder.server`). Without it, the first of `server`, `mcp`,
`app` that holds a server instance is taken (FastMCP's `fastmcp run` looks for the same names); failing
that, the module's one server instance at module level, whatever its name (two or more: name one).

The object is an mcpframe `Server`, an official-SDK `MCPServer` (or low-level `Server`), a FastMCP app,
or a factory: a function called with no arguments (awaited when it is async) that returns one of them.
A factory is only called when named: `server.py:create_server`.

Everything that goes wrong is a `TargetError`: one line for the user (see `failures`), and the exit
status (2 when the command line names something that is not there, 1 when the user's code failed).
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import inspect
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio

from mcpframe.server import Server

from .failures import TargetError, describe, shown

__all__ = ["DEFAULT_NAMES", "Target", "TargetError", "load_target", "server_kind"]

DEFAULT_NAMES = ("server", "mcp", "app")
"""The attribute names tried, in order, when the target names none."""

_SERVER = "a server (an mcpframe Server, an SDK MCPServer or a FastMCP app, or a function returning one)"


@dataclasses.dataclass(frozen=True, slots=True)
class Target:
    """A server found by `load_target`: the object, what kind it is, and how to name it in messages."""

    obj: Any
    kind: str
    """`"Server"` (mcpframe's own), `"MCPServer"`, `"FastMCP"` or `"low-level Server"` (the SDK's)."""
    where: str
    """`server.py:app`: the target as the user would write it."""

    @property
    def sdk(self) -> bool:
        """Whether it is an official-SDK or FastMCP app, served on the engine drop-in."""
        return self.kind != "Server"


def server_kind(obj: object) -> str | None:
    """What kind of server `obj` is (see `Target.kind`), `None` when it is none.

    SDK classes are recognised by name and module, so neither `mcp` nor `fastmcp` is imported here: a
    module that made such an app has imported them already.
    """
    if isinstance(obj, Server):
        return "Server"
    for cls in type(obj).__mro__:
        package = (cls.__module__ or "").partition(".")[0]
        if package == "fastmcp" and cls.__name__ == "FastMCP":
            return "FastMCP"
        if package == "mcp" and cls.__name__ in ("MCPServer", "FastMCP"):
            return "MCPServer"
        if cls.__module__ == "mcp.server.lowlevel.server" and cls.__name__ == "Server":
            return "low-level Server"
    return None


def _split(spec: str) -> tuple[str, str]:
    """`SOURCE[:NAME]` -> (source, name); a colon not followed by a dotted name belongs to the source."""
    source, colon, name = spec.rpartition(":")
    if not colon or (name and not all(part.isidentifier() for part in name.split("."))):
        source, name = spec, ""
    if not source:
        raise TargetError(f"mcpframe serve: expected FILE.py[:NAME] or MODULE[:NAME], got {spec!r}")
    return source, name


def _is_path(source: str) -> bool:
    return source.endswith(".py") or os.sep in source or "/" in source or os.path.isdir(source)


def _import_file(source: str) -> ModuleType:
    """Import `source` (a .py file or a package directory) with its directory first on `sys.path`."""
    path = Path(source).expanduser()
    if path.is_dir():
        if not (path / "__init__.py").is_file():
            raise TargetError(f"mcpframe serve: {source} is a directory without __init__.py; name a .py file")
        return _import_module(path.resolve().name, source, search=path.resolve().parent)
    if not path.is_file():
        raise TargetError(f"mcpframe serve: no such file: {source} (looked for {path.resolve()})")
    path = path.resolve()
    sys.path.insert(0, str(path.parent))
    name = path.stem
    loaded = sys.modules.get(name)
    if not name.isidentifier() or (loaded is not None and getattr(loaded, "__file__", None) != str(path)):
        name = "_mcpframe_target"  # keep `json.py` or `my-server.py` from shadowing or failing
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TargetError(f"mcpframe serve: {source} cannot be imported as Python (is it a .py file?)")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # before running it: dataclasses and typing look their module up there
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        context = f"raised while importing {shown(str(path))}"
        line = describe(exc, context)
        if isinstance(exc, ImportError) and "relative import" in str(exc):
            line += f"; serve it as a module instead: mcpframe serve {_dotted(path)}"
        raise TargetError(line, status=1, cause=exc) from exc
    return module


def _dotted(path: Path) -> str:
    """`pkg.sub.mod` for `pkg/sub/mod.py`: the module name of a file inside packages."""
    parts = [path.stem]
    folder = path.parent
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    return ".".join(parts)


def _missing(exc: ModuleNotFoundError, name: str) -> bool:
    """Whether `exc` says the target module itself (or a parent package of it) does not exist."""
    return exc.name is not None and (name == exc.name or name.startswith(exc.name + "."))


def _import_module(name: str, source: str, *, search: Path | None = None) -> ModuleType:
    """Import the module `name`, looking in `search` (default: the current directory) first."""
    if not all(part.isidentifier() for part in name.split(".")):
        raise TargetError(
            f"mcpframe serve: {source!r} is neither a .py file nor a module name (like package.module)"
        )
    where = search if search is not None else Path.cwd()
    sys.path.insert(0, str(where))
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if _missing(exc, name):
            raise TargetError(
                f"mcpframe serve: no module named {exc.name!r} (looked in {where} and on the Python path; "
                f"a file needs its .py, e.g. {name.replace('.', '/')}.py)"
            ) from None
        raise TargetError(describe(exc, f"raised while importing {name}"), status=1, cause=exc) from exc
    except Exception as exc:
        raise TargetError(describe(exc, f"raised while importing {name}"), status=1, cause=exc) from exc


def _offer(module: ModuleType) -> str:
    """What the module has that could be served: its server instances and its own public functions."""
    found = []
    for attr, value in vars(module).items():
        kind = server_kind(value)
        if kind is not None:
            found.append(f"{attr} ({kind})")
        elif inspect.isfunction(value) and value.__module__ == module.__name__ and not attr.startswith("_"):
            found.append(f"{attr}() (function)")
    return "it has " + ", ".join(found) if found else "it defines no server and no function"


def _default(module: ModuleType, label: str) -> Target:
    """The first of `DEFAULT_NAMES` holding a server, else the module's one server instance."""
    for attr in DEFAULT_NAMES:
        value = getattr(module, attr, None)
        kind = server_kind(value)
        if kind is not None:
            return Target(value, kind, f"{label}:{attr}")
    instances: dict[int, tuple[str, Any, str]] = {}
    for attr, value in vars(module).items():
        kind = server_kind(value)
        if kind is not None and id(value) not in instances:
            instances[id(value)] = (attr, value, kind)
    if len(instances) == 1:
        attr, value, kind = next(iter(instances.values()))
        return Target(value, kind, f"{label}:{attr}")
    names = ", ".join(attr for attr, _, _ in instances.values())
    if instances:
        first = next(iter(instances.values()))[0]
        raise TargetError(
            f"mcpframe serve: {label} has several servers ({names}): name one, e.g. {label}:{first}"
        )
    raise TargetError(
        f"mcpframe serve: {label} has no server instance (looked for {', '.join(DEFAULT_NAMES)}, then any "
        f"module-level name); name one as {label}:NAME ({_offer(module)})"
    )


def _required(fn: Any) -> list[str]:
    """The parameters `fn` cannot be called without."""
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: let the call decide
        return []
    kinds = (
        inspect.Parameter.POSITIONAL_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.KEYWORD_ONLY,
    )
    return [p.name for p in parameters if p.kind in kinds and p.default is inspect.Parameter.empty]


def _call_factory(fn: Any, where: str) -> Target:
    """Call a factory with no arguments (an async one to completion, in its own event loop)."""
    required = _required(fn)
    if required:
        raise TargetError(
            f"mcpframe serve: {where} needs arguments ({', '.join(required)}); name a server, or a function "
            "that makes one when called with none"
        )
    try:
        made = anyio.run(fn) if inspect.iscoroutinefunction(fn) else fn()
    except Exception as exc:
        raise TargetError(describe(exc, f"raised by {where}()"), status=1, cause=exc) from exc
    kind = server_kind(made)
    if kind is None:
        raise TargetError(
            f"mcpframe serve: {where}() returned {_a(made)}, not an mcpframe Server, an SDK MCPServer or a "
            "FastMCP app"
        )
    return Target(made, kind, where)


def _a(value: object) -> str:
    """`a int`, `the class Server`: what a wrong value is, for a message."""
    if isinstance(value, type):
        return f"the class {value.__name__}"
    if value is None:
        return "None"
    name = type(value).__name__
    return f"{'an' if name[0].lower() in 'aeiou' else 'a'} {name}"


def _named(module: ModuleType, label: str, name: str) -> Target:
    """The object at `name` (a dotted path), called first when it is a factory."""
    value: Any = module
    for part in name.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise TargetError(
                f"mcpframe serve: {label} has no attribute {name!r}; {_offer(module)}"
            ) from None
    where = f"{label}:{name}"
    kind = server_kind(value)
    if kind is not None:
        return Target(value, kind, where)
    if callable(value) and not isinstance(value, type):
        return _call_factory(value, where)
    raise TargetError(f"mcpframe serve: {where} is {_a(value)}, not {_SERVER}")


def load_target(spec: str) -> Target:
    """Import what `spec` names and return the server in it (see the module doc); `TargetError` if none."""
    source, name = _split(spec)
    if _is_path(source):
        module = _import_file(source)
        label = shown(str(Path(source).expanduser().resolve()))
    else:
        module = _import_module(source, source)
        label = source
    return _named(module, label, name) if name else _default(module, label)
