"""One list of core names, two backends: the same names with the same signatures, re-exported by ``core``.

The list is the ``__all__`` of the native module's stub ``_core.pyi``. mypy holds the *types* of both
backends to it (``mcpframe._api.CoreBackend``, checked against each module); these tests hold the
*run-time* modules to it: the native module and ``_pycore`` export exactly that list, every function,
constructor and method has the same parameters (names, kinds, defaults) in both, classes have the same
public attributes of the same sort, and ``mcpframe.core`` exposes exactly the chosen backend's names.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import mcpframe
from mcpframe import _api, core

STUB = Path(mcpframe.__file__).parent / "_core.pyi"
CORE_OWN = {"BACKEND", "INVALID_REQUEST", "PARSE_ERROR", "load_backend"}
# Dunders that are part of the contract (``len(correlator)``, ``id in correlator``, ``==``).
CONTRACT_DUNDERS = ("__len__", "__contains__", "__eq__", "__hash__")


def _stub_tree() -> ast.Module:
    return ast.parse(STUB.read_text(encoding="utf-8"))


def contract_names() -> list[str]:
    """The stub's ``__all__``: the core's names, in the stub's order."""
    for node in _stub_tree().body:
        if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["__all__"]:
            names = ast.literal_eval(node.value)
            assert isinstance(names, list)
            return names
    raise AssertionError(f"{STUB} has no __all__")


def _stub_definitions() -> set[str]:
    """The public names the stub defines at top level (classes, functions, constants)."""
    defined = set()
    for node in _stub_tree().body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef):
            defined.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            defined.add(node.target.id)
    return {name for name in defined if not name.startswith("_")}


def test_the_stub_lists_what_it_defines() -> None:
    names = contract_names()
    assert len(names) == len(set(names))
    assert set(names) == _stub_definitions()
    assert len(names) == 23  # 4 constants, 7 classes, 12 functions


def test_both_backends_export_exactly_the_list(both_backends: Any) -> None:
    expected = sorted(contract_names())
    for backend in both_backends:
        assert sorted(backend.__all__) == expected, backend.__name__
        assert [name for name in expected if not hasattr(backend, name)] == []


def test_core_backend_protocol_has_a_member_per_name() -> None:
    members = {name for name in vars(_api.CoreBackend) if not name.startswith("_")}
    assert members == set(contract_names())


def _default(value: Any) -> Any:
    """A parameter default as both backends can state it: a literal as itself, anything else (the
    native text signature's ``...``, the python backend's ``MISSING``) as "a sentinel"."""
    if value is inspect.Parameter.empty or value is None or type(value) in (bool, int, str, bytes):
        return value
    return "<sentinel>"


def shape(callable_: Any, *, method: bool = False) -> list[tuple[str, Any, Any]]:
    """Parameter names, kinds and defaults of ``callable_`` (annotations are mypy's business).

    A method's ``self`` is left out: native methods take it positional-only (``(self, /)``), Python
    ones without ``/`` also by keyword, a difference no caller meets.
    """
    parameters = list(inspect.signature(callable_).parameters.values())
    if method:
        assert parameters[0].name == "self"
        parameters = parameters[1:]
    return [(p.name, p.kind, _default(p.default)) for p in parameters]


def _public(cls: type) -> dict[str, str]:
    """``cls``'s public attributes (and contract dunders), each as ``"data"`` or ``"method"``."""
    out = {}
    for name in dir(cls):
        if name.startswith("_") and name not in CONTRACT_DUNDERS:
            continue
        value = inspect.getattr_static(cls, name)
        if name in CONTRACT_DUNDERS:
            # Present (and not object's own) or not: e.g. ``__hash__`` is None on immutable values.
            out[name] = (
                "none"
                if value is None
                else "own"
                if getattr(cls, name) is not getattr(object, name, None)
                else "inherited"
            )
        else:
            out[name] = "data" if inspect.isdatadescriptor(value) else "method"
    return out


def _pairs(both_backends: Any) -> list[tuple[str, Any, Any]]:
    native, python = both_backends
    return [(name, getattr(native, name), getattr(python, name)) for name in contract_names()]


def test_constants_are_equal_ints(both_backends: Any) -> None:
    for name, native, python in _pairs(both_backends):
        if not callable(native):
            assert (type(native), native) == (type(python), python) == (int, native), name


def test_functions_have_the_same_parameters(both_backends: Any) -> None:
    compared = []
    for name, native, python in _pairs(both_backends):
        if callable(native) and not isinstance(native, type):
            assert shape(native) == shape(python), name
            compared.append(name)
    assert len(compared) == 12


def test_classes_have_the_same_constructors_and_members(both_backends: Any) -> None:
    compared = []
    for name, native, python in _pairs(both_backends):
        if not isinstance(native, type):
            continue
        assert isinstance(python, type), name
        if name == "Message":  # not constructible from Python, in either backend
            for cls in (native, python):
                with pytest.raises(TypeError):
                    cls()
        else:
            assert shape(native) == shape(python), name
        members = _public(native)
        assert members == _public(python), name
        for member, sort in members.items():
            if sort == "method":
                native_shape = shape(getattr(native, member), method=True)
                assert native_shape == shape(getattr(python, member), method=True), f"{name}.{member}"
        compared.append(name)
    classes = ["AnswerRelay", "Correlator", "Decoder", "FrameError", "IdMap", "Message", "Relay"]
    assert sorted(compared) == classes


def test_core_exposes_exactly_the_chosen_backend() -> None:
    chosen: ModuleType = core.load_backend(core.BACKEND)
    assert len(core.__all__) == len(set(core.__all__))
    assert set(core.__all__) == set(chosen.__all__) | CORE_OWN
    assert {name: getattr(core, name) is getattr(chosen, name) for name in chosen.__all__} == dict.fromkeys(
        chosen.__all__, True
    )
    star: dict[str, Any] = {}
    exec("from mcpframe.core import *", star)
    assert set(star) - {"__builtins__"} == set(core.__all__)
