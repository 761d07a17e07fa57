"""MCP servers as agent tools, on the official ``mcp`` SDK (``pip install 'modelwire[mcp]'``).

``MCPServer.stdio("uvx", ["mcp-server-time"])`` starts a server process and talks to it
over its stdin and stdout; ``MCPServer.http("https://.../mcp")`` reaches one over
streamable HTTP. Passed in an agent's ``tools``, its tools become the agent's:

- listed before each model call, so a server that changes its tools (and says so, with a
  list-changed notification or a ``subscriptions/listen`` event) is followed at the next
  call;
- called with the model's arguments as they are (the server checks them against its own
  schema); text, images, audio and resources come back as result blocks, and a result the
  server marks ``isError`` is an error result;
- a call that outlives ``timeout`` ends as an error result with the time; a server that
  dies during a call gives that call an error result, and is started again for the next
  model call; one that cannot be started ends the reply with :class:`ToolServerError`.

The connection lives in a task of its own, so it is opened and closed in the same task
whichever task uses it, and it is closed with the agent (``await agent.aclose()`` or
``async with agent``) or by ``asyncio.run`` when its loop ends.

``MCPServer.http(...).via_provider()`` declares the same server for the provider to call
itself, where a provider can, as a :class:`ServerTool` (each protocol maps it or refuses it).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from typing import Any, Iterable, Mapping, Sequence

from ..errors import ConfigError, ToolError, ToolServerError
from ..formatters import ServerTool
from ..message import Base64Source, DataBlock
from ._tools import Tool, Toolset

__all__ = ["MCPServer"]

log = logging.getLogger("modelwire.mcp")

_PAGE_CAP = 100  # tools/list pages followed at most (a paginator that never ends cannot hang a call)


def _sdk() -> Any:
    try:
        import mcp
    except ImportError:  # pragma: no cover - exercised only without the extra
        raise ConfigError("MCP servers need the official mcp SDK: pip install 'modelwire[mcp]'") from None
    return mcp


class MCPServer(Toolset):
    """An MCP server whose tools the agent may call.

    ``target``: what ``mcp.Client`` connects to (use :meth:`stdio` or :meth:`http`; an
    ``mcp`` server object connects in-process). ``name`` names the server in errors and
    traces; ``prefix`` is put before each tool name (``prefix="fs"``: ``fs_read_file``), for
    two servers with tools of the same name; ``allowed_tools`` keeps only those tools;
    ``timeout``: seconds one call may run (None: the agent's ``tool_timeout``);
    ``connect_timeout``: seconds starting the server and its handshake may take;
    ``client_options``: more keyword arguments for ``mcp.Client`` (``mode="legacy"`` for
    the initialize handshake, a ``sampling_callback`` ...); ``defer``: its tools are left
    out of the model's context until the provider's tool search finds them (True: all of
    them; a set of names: those)."""

    def __init__(
        self,
        target: Any,
        *,
        name: str | None = None,
        prefix: str | None = None,
        allowed_tools: Iterable[str] | None = None,
        timeout: float | None = None,
        connect_timeout: float = 30.0,
        url: str | None = None,
        headers: Mapping[str, str] | None = None,
        client_options: Mapping[str, Any] | None = None,
        defer: bool | Iterable[str] = False,
    ) -> None:
        for label, value in (("timeout", timeout), ("connect_timeout", connect_timeout)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
                raise ValueError(f"{label}={value!r}: a number of seconds above 0")
        self.target = target
        self.name: str = name or "mcp"
        self.prefix = prefix
        self.allowed_tools: frozenset[str] | None = None if allowed_tools is None else frozenset(allowed_tools)
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.url = url
        self.headers: dict[str, str] = dict(headers or {})
        self.client_options: dict[str, Any] = dict(client_options or {})
        self.defer: bool | frozenset[str] = defer if isinstance(defer, bool) else frozenset(defer)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: asyncio.Task[None] | None = None
        self._client: Any = None
        self._closing: asyncio.Event | None = None
        self._connecting: asyncio.Lock | None = None
        self._broken: str | None = None  # why the connection is unusable (it is opened again)
        self._tools: list[Tool] | None = None  # the last listing, until the server says it changed
        self._names: dict[str, str] = {}  # the agent's tool name -> the server's

    @classmethod
    def stdio(
        cls,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        name: str | None = None,
        **options: Any,
    ) -> "MCPServer":
        """A server started as ``command args...``, spoken to over its stdin and stdout (its
        stderr is this process's). ``env`` is added to the SDK's safe default environment."""
        params = _sdk().StdioServerParameters(command=command, args=list(args), env=dict(env) if env else None, cwd=cwd)
        return cls(params, name=name or os.path.basename(command), **options)

    @classmethod
    def http(
        cls, url: str, *, headers: Mapping[str, str] | None = None, name: str | None = None, **options: Any
    ) -> "MCPServer":
        """A server at ``url`` over streamable HTTP; ``headers`` go with every request (an
        ``Authorization`` header, say)."""
        from urllib.parse import urlsplit

        if urlsplit(url).scheme not in ("http", "https"):
            raise ValueError(
                f"MCPServer.http({url!r}): the URL of a streamable HTTP server starts with http:// or https://"
            )
        return cls(None, name=name or urlsplit(url).hostname or "mcp", url=url, headers=headers, **options)

    def via_provider(self, **config: Any) -> ServerTool:
        """This HTTP server, for the provider to call itself: ``ServerTool("mcp", ...)``
        with its URL, name, headers and allowed tools (``config`` adds to them:
        ``require_approval``, ``authorization_token`` ...)."""
        if self.url is None:
            raise ConfigError(
                f"MCP server {self.name!r} is not an HTTP server: a provider can reach only a remote one by URL"
            )
        declared: dict[str, Any] = {"url": self.url, "name": self.name}
        if self.headers:
            declared["headers"] = dict(self.headers)
        if self.allowed_tools is not None:
            declared["allowed_tools"] = sorted(self.allowed_tools)
        return ServerTool("mcp", **{**declared, **config})

    def __repr__(self) -> str:
        return f"MCPServer({self.name!r})"

    # -- the connection ---------------------------------------------------------------------

    def _client_target(self, stack: Any) -> Any:
        """What ``mcp.Client`` connects to; an HTTP client made for the headers is entered
        on ``stack``, so it is closed with the connection."""
        if self.url is None:
            return self.target
        from mcp.client.streamable_http import streamable_http_client

        http_client = None
        if self.headers:
            import httpx2

            http_client = httpx2.AsyncClient(headers=self.headers, timeout=httpx2.Timeout(30.0, read=300.0))
            stack.push_async_callback(http_client.aclose)
        return streamable_http_client(self.url, http_client=http_client)

    async def _run(self, ready: asyncio.Future[Any], closing: asyncio.Event) -> None:
        """Owns the connection: opened and closed in this one task (anyio's rule), whatever
        tasks call the tools."""
        from contextlib import AsyncExitStack

        from mcp import Client

        try:
            async with (
                AsyncExitStack() as stack,
                Client(
                    self._client_target(stack), **{"message_handler": self._on_message, **self.client_options}
                ) as client,
            ):
                listener = asyncio.create_task(self._listen(client, closing)) if self._listens(client) else None
                ready.set_result(client)
                try:
                    await closing.wait()
                finally:
                    if listener is not None:
                        listener.cancel()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(
                    exc
                    if isinstance(exc, Exception)
                    else ToolServerError(self.name, "the connection was cancelled while it opened")
                )
            if not isinstance(exc, Exception):
                raise
            log.debug("MCP server %r: the connection ended with %s: %s", self.name, type(exc).__name__, exc)
        finally:
            self._mark_broken(closing, "the connection ended")

    def _mark_broken(self, closing: asyncio.Event, why: str) -> None:
        """The connection ``closing`` belongs to can no longer be used (one that was already
        replaced marks nothing: its successor has its own)."""
        if self._closing is closing:
            self._broken = self._broken or why

    @staticmethod
    def _listens(client: Any) -> bool:
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        tools = getattr(client.server_capabilities, "tools", None)
        return client.protocol_version in MODERN_PROTOCOL_VERSIONS and bool(getattr(tools, "list_changed", False))

    async def _listen(self, client: Any, closing: asyncio.Event) -> None:
        """Tool-list changes on a 2026-07-28 connection (``subscriptions/listen``)."""
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                async for _event in subscription:
                    self._tools = None
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a lost subscription means a lost server
            log.debug("MCP server %r: the change subscription ended: %s", self.name, exc)
            self._mark_broken(closing, f"its change subscription ended ({exc})")

    async def _on_message(self, message: Any) -> None:
        """Tool-list changes: the notification of an earlier connection, or the listen
        event of a 2026-07-28 one (the SDK passes those on here too)."""
        root = getattr(message, "root", message)
        if getattr(root, "method", None) == "notifications/tools/list_changed":
            self._tools = None

    async def _connected(self) -> Any:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # first use, or a new loop (asyncio.run ended the old one)
            self._loop, self._runner, self._client, self._broken, self._tools = loop, None, None, None, None
            self._connecting = asyncio.Lock()
        assert self._connecting is not None
        async with self._connecting:
            if self._client is not None and self._broken is None:
                return self._client
            if self._runner is not None:
                await self._stop()
            self._broken, self._tools = None, None
            ready: asyncio.Future[Any] = loop.create_future()
            self._closing = asyncio.Event()
            self._runner = asyncio.create_task(self._run(ready, self._closing), name=f"mcp:{self.name}")
            try:
                async with asyncio.timeout(self.connect_timeout):
                    self._client = await asyncio.shield(ready)
            except TimeoutError:
                await self._stop()
                raise ToolServerError(
                    self.name, f"no answer to the handshake within {self.connect_timeout:g} s"
                ) from None
            except ToolServerError:
                await self._stop()
                raise
            except Exception as exc:
                await self._stop()
                raise ToolServerError(self.name, f"could not be started or reached: {_reason(exc)}") from exc
            return self._client

    async def _stop(self) -> None:
        runner, self._runner, self._client = self._runner, None, None
        if runner is None:
            return
        if self._closing is not None:
            self._closing.set()
        try:
            async with asyncio.timeout(10):
                await asyncio.shield(runner)
        except (Exception, asyncio.CancelledError) as exc:  # noqa: BLE001 - closing is best effort
            if isinstance(exc, asyncio.CancelledError) and asyncio.current_task().cancelling():  # type: ignore[union-attr]
                raise
            runner.cancel()
            log.debug("MCP server %r: closing it ended with %s", self.name, type(exc).__name__)

    async def aclose(self) -> None:
        """Close the connection (and end the server process of a stdio server)."""
        if self._loop is asyncio.get_running_loop() and self._connecting is not None:
            async with self._connecting:
                await self._stop()
        self._tools = None

    # -- tools ------------------------------------------------------------------------------

    async def list_tools(self) -> list[Tool]:
        """The server's tools as agent tools (asked again only once the server said they
        changed, or after it was started again)."""
        client = await self._connected()
        if self._tools is not None:
            return self._tools
        listed: list[Any] = []
        cursor = None
        try:
            for _ in range(_PAGE_CAP):
                page = await client.list_tools(cursor=cursor, cache_mode="refresh")
                listed += page.tools
                cursor = page.next_cursor
                if not cursor:
                    break
        except Exception as exc:
            self._broken = f"tools/list failed ({exc})"
            raise ToolServerError(self.name, f"could not list its tools: {_reason(exc)}") from exc
        tools: list[Tool] = []
        names: dict[str, str] = {}
        for spec in listed:
            if self.allowed_tools is not None and spec.name not in self.allowed_tools:
                continue
            exposed = f"{self.prefix}_{spec.name}" if self.prefix else spec.name
            names[exposed] = spec.name
            tools.append(
                Tool(
                    _caller(self, spec.name),
                    name=exposed,
                    description=spec.description or spec.title or "",
                    parameters=dict(spec.input_schema or {"type": "object", "properties": {}}),
                    timeout=self.timeout,
                    defer=self.defer is True or (not isinstance(self.defer, bool) and spec.name in self.defer),
                )
            )
        missing = (self.allowed_tools or frozenset()) - {s.name for s in listed}
        if missing:
            log.warning("MCP server %r has no tool named %s (allowed_tools)", self.name, ", ".join(sorted(missing)))
        self._names, self._tools = names, tools
        return tools

    async def call(self, name: str, arguments: dict[str, Any]) -> list[Any]:
        """Call the server's tool ``name``: its content as result pieces (strings and data
        blocks); a result marked ``isError`` raises :class:`ToolError` with that content."""
        client = await self._connected()
        # A call is what most often changes a server's tools, and its change notification
        # may come after its result: the tools are listed again before the next model call.
        self._tools = None
        try:
            result = await client.call_tool(name, arguments)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            from mcp import MCPError
            from mcp_types import CONNECTION_CLOSED

            if isinstance(exc, MCPError) and exc.code != CONNECTION_CLOSED:
                raise ToolError(f"the MCP server refused the call: {exc.error.message}") from None
            self._broken = self._broken or f"the connection closed during a call of {name}"
            raise ToolError(
                (
                    f"the MCP server {self.name!r} closed the connection during the call ({_reason(exc)}); it "
                    "is started again for the next call"
                )
            ) from None
        output = _content(result)
        if result.is_error:
            raise ToolError(output or "the tool failed (the server said no more)")
        return output


def _caller(server: MCPServer, name: str) -> Any:
    async def call(**arguments: Any) -> list[Any]:
        return await server.call(name, arguments)

    call.__name__ = name
    return call


def _reason(exc: BaseException) -> str:
    """One line saying why: the error's type and message (an exception group's first leaf)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    error = getattr(exc, "error", None)
    message = getattr(error, "message", None) or str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _content(result: Any) -> list[Any]:
    """A CallToolResult's content as result pieces: text as strings; images, audio and blob
    resources as data blocks; text resources and resource links as text naming their URI.
    A result with structured content only gives it as JSON text."""
    out: list[Any] = []

    def text(piece: str) -> None:  # consecutive texts stay apart: one text block, one per line
        if out and isinstance(out[-1], str):
            out[-1] += "\n" + piece
        else:
            out.append(piece)

    for item in result.content or ():
        kind = getattr(item, "type", None)
        if kind == "text":
            text(item.text)
        elif kind in ("image", "audio"):
            out.append(DataBlock(source=Base64Source(data=item.data, media_type=item.mime_type)))
        elif kind == "resource":
            resource = item.resource
            if getattr(resource, "blob", None) is not None:
                out.append(
                    DataBlock(
                        source=Base64Source(
                            data=resource.blob, media_type=resource.mime_type or "application/octet-stream"
                        )
                    )
                )
            else:
                text(f"[{resource.uri}]\n{resource.text}")
        elif kind == "resource_link":
            label = item.title or item.name
            text(f"[resource {label}: {item.uri}]" + (f" {item.description}" if item.description else ""))
        else:
            text(json.dumps(item.model_dump(mode="json", by_alias=True, exclude_none=True), ensure_ascii=False))
    if not out and result.structured_content is not None:
        out.append(json.dumps(result.structured_content, ensure_ascii=False))
    return out
