"""Tools from plain Python functions.

The JSON schema comes from the signature's type hints (pydantic types and models
included) and the docstring (its first paragraph describes the tool; an ``Args:`` section
describes the parameters). Arguments are validated before the function runs; invalid
JSON or arguments that fail the schema become an error result the model can read.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import re
from typing import TYPE_CHECKING, Any, Callable, get_type_hints, overload

from ..formatters import ToolSpec

from ..errors import ToolArgumentsError

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = ["Tool", "tool", "Toolset", "ToolArgumentsError"]


_ARGS_RE = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$", re.MULTILINE)


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    doc = inspect.cleandoc(doc or "")
    if not doc:
        return "", {}
    match = _ARGS_RE.search(doc)
    head = doc[: match.start()] if match else doc
    description = head.strip().split("\n\n")[0].replace("\n", " ").strip()
    params: dict[str, str] = {}
    if match:
        current = None
        for line in doc[match.end() :].splitlines():
            if line.strip() and not line.startswith((" ", "\t")):
                break  # the next section
            m = re.match(r"^\s+(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$", line)
            if m:
                current = m.group(1).lstrip("*")
                params[current] = m.group(3).strip()
            elif current and line.strip():
                params[current] += " " + line.strip()
    return description, params


class Tool:
    """A tool the model may call.

    ``requires_confirmation``: the call waits for the user's yes or no
    (``REQUIRE_USER_CONFIRM``). ``external``: the call is run outside the agent
    (``REQUIRE_EXTERNAL_EXECUTION``); ``func`` may then be None. ``defer``: left out of the
    model's context until the provider's tool search finds it (see ``ToolSpec.defer``).
    """

    def __init__(
        self,
        func: Callable[..., Any] | None = None,
        *,
        name: str | None = None,
        description: str | None = None,
        parameters: dict[str, Any] | None = None,
        requires_confirmation: bool = False,
        external: bool = False,
        timeout: float | None = None,
        defer: bool = False,
    ) -> None:
        if func is None and not external:
            raise ValueError("a tool needs a function unless it is external")
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
            raise ValueError(f"timeout={timeout!r}: a tool's timeout is a number of seconds above 0")
        self.timeout = timeout  # seconds a call may run (None: the agent's tool_timeout)
        self.defer = defer
        self.func = func
        self.requires_confirmation = requires_confirmation
        self.external = external
        named = _underlying(func)[0] if func is not None else None  # a partial's or a callable's own function
        doc_description, param_docs = _parse_docstring(getattr(named, "__doc__", "") or "")
        own = getattr(named, "__name__", None)
        qualname = getattr(named, "__qualname__", "") or ""
        self.name: str = name or (qualname.split(".")[-2] if own == "__call__" and "." in qualname else own) or "tool"
        self.description: str = description if description is not None else doc_description
        self._model: type[BaseModel] | None = None
        self.parameters: dict[str, Any]
        if parameters is not None:
            self.parameters = parameters
        elif func is not None:
            self._model = _arguments_model(func, param_docs)
            self.parameters = _clean_schema(self._model.model_json_schema())
        else:
            self.parameters = {"type": "object", "properties": {}}

    def tool_spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.parameters, defer=self.defer)

    def parse(self, raw: str) -> dict[str, Any]:
        """Decode and validate the model's arguments; raises ToolArgumentsError."""
        text = raw.strip() or "{}"
        try:
            args = json.loads(text)
        except ValueError as exc:
            raise ToolArgumentsError(f"the arguments are not valid JSON ({exc}): {text[:200]}") from None
        except RecursionError:
            raise ToolArgumentsError("the arguments are nested too deeply to be read") from None
        if not isinstance(args, dict):
            raise ToolArgumentsError(f"the arguments must be a JSON object, not {type(args).__name__}")
        if self._model is None:
            return args
        from pydantic import ValidationError  # the schema's validator, made from the signature

        try:
            validated = self._model.model_validate(args)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or '(arguments)'}: {e['msg']}"
                for e in exc.errors(include_url=False)
            )
            raise ToolArgumentsError(f"the arguments do not fit the tool's schema: {problems}") from None
        return {k: getattr(validated, k) for k in type(validated).model_fields}

    @property
    def is_async_gen(self) -> bool:
        return self.func is not None and inspect.isasyncgenfunction(_underlying(self.func)[0])

    async def call(self, args: dict[str, Any]) -> Any:
        """Run the function (a sync function runs in a worker thread)."""
        assert self.func is not None
        if inspect.iscoroutinefunction(_underlying(self.func)[0]):
            return await self.func(**args)
        return await asyncio.to_thread(self.func, **args)

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"


class Toolset:
    """A source of tools that can change while the agent runs (an MCP server, say).

    The agent asks :meth:`list_tools` before each model call, so a changed list is seen at
    the next call, and closes the toolset when it is closed itself (``await agent.aclose()``
    or ``async with agent``). Subclasses set ``name`` and implement both methods."""

    name: str = "toolset"

    async def list_tools(self) -> list[Tool]:
        raise NotImplementedError

    async def aclose(self) -> None:
        """Release what the toolset holds (a server process, a connection)."""

    async def __aenter__(self) -> "Toolset":
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.aclose()


@overload
def tool(func: Callable[..., Any], **options: Any) -> Tool: ...


@overload
def tool(func: None = None, **options: Any) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(func: Callable[..., Any] | None = None, **options: Any) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Decorator form: ``@tool`` or ``@tool(requires_confirmation=True)``."""
    if func is None:
        return lambda f: Tool(f, **options)
    return Tool(func, **options)


def _underlying(func: Callable[..., Any]) -> tuple[Callable[..., Any], set[str]]:
    """The function whose name, docstring and type hints a tool reads, and the keyword
    arguments already bound: a ``functools.partial`` is read through (what it binds is the
    application's, never shown to the model), a callable object through its ``__call__``."""
    bound: set[str] = set()
    while isinstance(func, functools.partial):
        bound |= set(func.keywords)
        func = func.func
    if not (inspect.isfunction(func) or inspect.ismethod(func) or inspect.isbuiltin(func)) and callable(func):
        call = getattr(type(func), "__call__", None)
        if inspect.isfunction(call):
            return call, bound
    return func, bound


def _arguments_model(func: Callable[..., Any], param_docs: dict[str, str]) -> type[BaseModel]:
    from pydantic import ConfigDict, Field, create_model  # only for tools made from functions

    signature = inspect.signature(func)
    named, bound = _underlying(func)
    hints = get_type_hints(named, include_extras=True)
    fields: dict[str, Any] = {}
    for pname, param in signature.parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD) or pname in bound:
            continue
        annotation = hints.get(pname, Any)
        default = ... if param.default is param.empty else param.default
        fields[pname] = (annotation, Field(default, description=param_docs.get(pname)))
    title = getattr(named, "__name__", "tool")
    return create_model(f"{title}_arguments", __config__=ConfigDict(extra="forbid"), **fields)


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)
            if prop.get("description") is None:
                prop.pop("description", None)
    return schema
