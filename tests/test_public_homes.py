"""One public home per class: each class a public module exports is exported by one of them
(its home), or is a re-export named below with its reason; its ``__module__`` is its home or a
module inside that package, so ``repr``, pickles and the API reference name a place a user can
import it from. Exceptions still pickle, whatever ``__module__`` says."""

from __future__ import annotations

import ast
import importlib
import inspect
import pickle
import pkgutil
from pathlib import Path
from typing import Any

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "modelwire"

# The packages a user imports from, the layers' kits a plugin author imports from among them.
PUBLIC = [
    "modelwire",
    "modelwire.message",
    "modelwire.event",
    "modelwire.models",
    "modelwire.errors",
    "modelwire.agent",
    "modelwire.cassettes",
    "modelwire.serve",
    "modelwire.testing",
    "modelwire.sources",
    "modelwire.conform",
    "modelwire.cost",
    "modelwire.telemetry",
    "modelwire.protocols",
    "modelwire.adapters",
    "modelwire.formatters",
]
INTEGRATIONS = sorted(
    f"modelwire.integrations.{info.name}"
    for info in pkgutil.iter_modules([str(SRC / "integrations")])
    if not info.name.startswith("_")
)

# (module, name): why a second public module exports a name whose home is elsewhere.
ROOT = "the root's shortcut: `from modelwire import ...` for the first hour"
RE_EXPORTS = {
    **{
        ("modelwire", name): ROOT
        for name in (
            "Msg",
            "UserMsg",
            "AssistantMsg",
            "SystemMsg",
            "check_stream",
            "load_model",
            "ModelOptions",
            "wrap",
            "Middleware",
            "Agent",
            "tool",
        )
    },
    ("modelwire.models", "ModelOptions"): "what load_model takes, beside it (its home is the layer below, protocols)",
    ("modelwire.models", "Preset"): "what load_model's presets are, beside them (home: protocols)",
    ("modelwire.models", "find_preset"): "load_model's presets, looked up beside it (home: protocols)",
    ("modelwire.models", "all_presets"): "load_model's presets, listed beside it (home: protocols)",
    ("modelwire.agent", "ServerTool"): "the server tools an agent takes (home: formatters, which send them)",
    ("modelwire.event", "ReplyFinishedReason"): "the reply's finished reason, among the events that carry it",
}


# Classes whose __module__ stays where their code is, with the reason.
OWN_MODULE = {
    "Record": "the base of every record class, below message (events and errors are records too); a "
    "record class resolves its annotations in its __module__, so it names the module that defines them",
}


def _exports_read_from_source(module: str) -> dict[str, str]:
    """``__all__`` of a module whose optional dependency is not installed, read from its
    source: each name with the module it is defined in (itself, or where it is imported from)."""
    path = SRC.joinpath(*module.split(".")[1:]).with_suffix(".py")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: list[str] = []
    origin: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            names = list(ast.literal_eval(node.value))
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                origin[alias.asname or alias.name] = "." * node.level + (node.module or "")
    return {name: origin.get(name, module) for name in names}


def _homes() -> tuple[dict[int, list[tuple[str, str]]], dict[int, Any], list[str]]:
    """Each exported class or function (by identity) with the (module, name) pairs exporting it."""
    places: dict[int, list[tuple[str, str]]] = {}
    values: dict[int, Any] = {}
    unimported = []
    for module_name in PUBLIC + INTEGRATIONS:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            unimported.append(module_name)
            continue
        for name in module.__all__:
            value = getattr(module, name)  # a lazy name through the package's __getattr__
            if not (isinstance(value, type) or inspect.isfunction(value)):
                continue
            if not getattr(value, "__module__", "").startswith("modelwire"):
                continue  # a builtin under a name of the kit's (OPTIONAL is type(None))
            places.setdefault(id(value), []).append((module_name, name))
            values[id(value)] = value
    return places, values, unimported


def test_each_public_class_and_function_has_one_home():
    places, values, _ = _homes()
    problems = []
    for key, exported in places.items():
        homes = [place for place in exported if place not in RE_EXPORTS]
        if len(homes) != 1:
            problems.append(f"{values[key].__qualname__}: exported by {exported}, of which homes {homes}")
    assert problems == [], "\n".join(problems)


def test_each_public_class_names_its_home_as_its_module():
    """A class's ``__module__`` is its home or a module inside it (``modelwire.agent._agent``
    for ``modelwire.agent.Agent``); one whose code lives elsewhere says its home itself."""
    places, values, _ = _homes()
    problems = []
    for key, exported in places.items():
        value = values[key]
        if not isinstance(value, type):
            continue
        (home,) = [module for module, name in exported if (module, name) not in RE_EXPORTS]
        if value.__qualname__ in OWN_MODULE:
            continue
        if value.__module__ != home and not value.__module__.startswith(home + "."):
            problems.append(f"{home}.{value.__qualname__} says its module is {value.__module__}")
    assert problems == [], "\n".join(problems)


def test_a_stale_re_export_entry_fails():
    """Every entry above still names a name its module exports."""
    stale = []
    for module_name, name in RE_EXPORTS:
        if name not in importlib.import_module(module_name).__all__:
            stale.append((module_name, name))
    assert stale == []


def test_an_integration_that_cannot_be_imported_here_defines_what_it_exports():
    """An integration for a framework not installed here (AgentScope 1.x beside 2.x) is read
    from its source: every name it exports it defines, or takes from a module of modelwire."""
    _, _, unimported = _homes()
    assert set(unimported) <= set(INTEGRATIONS), unimported
    for module_name in unimported:
        for name, where in _exports_read_from_source(module_name).items():
            assert where == module_name, f"{module_name} exports {name}, made in {where}"


def _an_instance(cls: type[BaseException]) -> BaseException:
    """``cls`` made with a plain value for each required parameter, by its annotation."""
    plain = {"str": "x", "int": 1, "float": 1.0, "list": [], "dict": {}}
    args = []
    for param in list(inspect.signature(cls.__init__).parameters.values())[1:]:
        if param.default is not param.empty or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        annotation = str(param.annotation).split("[")[0].split(" |")[0].strip("'")
        args.append(plain.get(annotation, "x"))
    return cls(*args)


def _exceptions() -> list[type[BaseException]]:
    places, values, _ = _homes()
    found = {key: value for key, value in values.items() if isinstance(value, type)}
    return sorted(
        (value for value in found.values() if issubclass(value, BaseException)), key=lambda cls: cls.__qualname__
    )


@pytest.mark.parametrize("cls", _exceptions(), ids=lambda cls: cls.__qualname__)
def test_every_public_exception_pickles(cls):
    err = _an_instance(cls)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is cls and str(back) == str(err) and back.args == err.args
    assert vars(back) == vars(err)
