"""``modelwire chat``: one prompt, or an interactive session, through the agent."""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import Any, Iterator

from ._common import ENVIRONMENT, UsageError, _agent_flags, _chat_options, _shown_thinking, _tools, _view, _view_flags


def _chat_command(chat: argparse.ArgumentParser) -> None:
    chat.epilog = ENVIRONMENT
    chat.add_argument(
        "prompt", nargs="*", help="the prompt; without one (and nothing piped in), an interactive session starts"
    )
    chat.add_argument(
        "-m",
        "--model",
        help=(
            "PROVIDER:MODEL (anthropic:claude-sonnet-4-5, openai:gpt-4.1 ...) or a profile name; "
            "default: MODELWIRE_MODEL, then modelwire.toml"
        ),
    )
    _agent_flags(chat)
    chat.add_argument(
        "--show-thinking",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="show thinking (dimmed) or collapse it to one line",
    )
    _view_flags(chat)
    chat.set_defaults(func=_cmd_chat)


def _costed(model: Any) -> Any:
    """The model, its calls priced: the chat's closing line shows what each reply cost."""
    if hasattr(model, "ask_for_cost"):
        model.ask_for_cost()
    return model


class _Waiting:
    """A small indicator on a terminal's stderr until the first token (nothing otherwise)."""

    def __init__(self) -> None:
        self.on = sys.stderr.isatty()
        self.shown = False

    def start(self) -> None:
        if self.on:
            from .._render import no_color

            sys.stderr.write("…" if no_color() else "\x1b[2m…\x1b[0m")
            sys.stderr.flush()
            self.shown = True

    def stop(self) -> None:
        if self.shown:
            sys.stderr.write("\b \b")
            sys.stderr.flush()
            self.shown = False


@contextlib.contextmanager
def _on_ctrl_c(loop: Any, stop: Any) -> Iterator[None]:
    """Inside, Ctrl-C calls ``stop`` instead of raising KeyboardInterrupt."""
    import signal

    try:
        loop.add_signal_handler(signal.SIGINT, stop)
    except (NotImplementedError, RuntimeError):  # pragma: no cover - not on this platform
        pass
    try:
        yield
    finally:
        try:
            loop.remove_signal_handler(signal.SIGINT)
        except (NotImplementedError, RuntimeError):  # pragma: no cover
            pass


def _cmd_chat(args: argparse.Namespace) -> int:
    import asyncio

    from .._render import renderer
    from ..agent import Agent
    from ..message import UserMsg
    from ..models import load_model

    model = _costed(_shown_thinking(load_model(args.model, **_chat_options(args)), args))
    agent = Agent("assistant", model, args.system, tools=_tools(args), max_iters=args.max_iters)
    view = _view(args)
    interrupted = False

    async def one(prompt: str) -> str | None:
        nonlocal interrupted
        # Piped or redirected, stdout gets the answer only; the rest goes to stderr.
        side = sys.stdout if sys.stdout.isatty() else sys.stderr
        render = (
            renderer(view, sys.stdout, show_thinking=args.show_thinking, stats=sys.stderr, side=side)
            if view == "pretty"
            else renderer(view, sys.stdout)
        )
        loop = asyncio.get_running_loop()
        waiting = _Waiting() if view == "pretty" else None

        def stop() -> None:
            nonlocal interrupted
            interrupted = True
            agent.interrupt()

        with _on_ctrl_c(loop, stop):  # Ctrl-C stops the reply, not the program
            try:
                if waiting:
                    waiting.start()
                # aclosing: when rendering fails (a reader gone: BrokenPipeError), the reply's
                # stream and its HTTP response are closed here, in the loop, not left for the
                # interpreter's exit, where closing them prints a traceback.
                async with contextlib.aclosing(
                    agent.reply_stream(UserMsg("user", prompt), raise_errors=False)
                ) as events:  # said from the reply below
                    async for event in events:
                        if waiting and event.type not in ("REPLY_START", "MODEL_CALL_START"):
                            waiting.stop()
                        render(event)
            finally:
                if waiting:
                    waiting.stop()
        render.close()
        reply = agent.context[-1]
        if reply.error is not None and view != "pretty":
            print(f"modelwire: error ({reply.error.type}): {reply.error.message}", file=sys.stderr)
        return reply.error.type if reply.error is not None else None

    with asyncio.Runner() as runner:  # one event loop for the session: one connection pool
        try:
            return _chat_session(args, runner, one, model, lambda: interrupted)
        finally:
            if agent.toolsets:
                runner.run(agent.aclose())  # the MCP servers' processes end with the session


def _chat_session(args: argparse.Namespace, runner: Any, one: Any, model: Any, interrupted: Any) -> int:
    """One prompt (given or piped), or the interactive loop, on the session's event loop."""
    piped = not sys.stdin.isatty()
    if args.prompt or piped:
        # Piped text and a prompt together (llm's habit): the text, then the prompt about it.
        stdin = sys.stdin.read().strip() if piped else ""
        prompt = "\n\n".join(p for p in (stdin, " ".join(args.prompt or ())) if p)
        if not prompt:
            raise UsageError('the prompt is empty; give one (modelwire chat "Hi") or pipe one in')
        failed = runner.run(one(prompt))
        if interrupted():
            return 130
        return _provider_exit(failed)
    try:
        import readline  # noqa: F401 - line editing and history at the prompt
    except ImportError:  # pragma: no cover - not on this platform
        pass
    print(
        f"modelwire chat with {model.provider}:{model.name} (Ctrl-C stops a reply, Ctrl-D or 'exit' quits)",
        file=sys.stderr,
    )
    while True:
        try:
            prompt = input("you> ")
        except EOFError:
            print(file=sys.stderr)
            return 0
        except KeyboardInterrupt:
            print(file=sys.stderr)
            continue
        if prompt.strip() in ("exit", "quit"):
            return 0
        if prompt.strip():
            runner.run(one(prompt))


def _provider_exit(failed: str | None) -> int:
    return 1 if failed else 0
