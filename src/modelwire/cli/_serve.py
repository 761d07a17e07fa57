"""``modelwire serve``: an agent (or the demo replay) served to browsers."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ._common import ENVIRONMENT, UsageError, _agent_flags, _chat_options, _port, _shown_thinking, _tools

SERVE_TOKEN_VARIABLE = "MODELWIRE_SERVE_TOKEN"


# A server streams one reply per provider connection: its pool is sized for the replies a
# worker serves at once, not for a script's few calls (load_model's default is 20; past it a
# reply waits for a connection, and fails after the pool timeout).
SERVE_CONNECTIONS = 1000


def _serve_command(serve: argparse.ArgumentParser) -> None:
    """The flags of ``modelwire serve``."""
    serve.epilog = ENVIRONMENT
    serve.add_argument(
        "-m",
        "--model",
        help="PROVIDER:MODEL; default: MODELWIRE_MODEL; without a model or without its key, the demo replay",
    )
    serve.add_argument("--host", default="127.0.0.1", help="the address to listen on")
    serve.add_argument("--port", type=_port, default=8000, help="the port to listen on")
    _agent_flags(serve)
    serve.add_argument(
        "--confirm-tools", action="store_true", help="ask the user before each tool call (the page shows Allow / Deny)"
    )
    serve.add_argument(
        "--allow-host",
        action="append",
        metavar="NAME",
        help="a host name clients reach this server by (besides localhost); repeatable; '*' for any",
    )
    serve.add_argument(
        "--allow-origin",
        action="append",
        metavar="ORIGIN",
        help="an origin (https://app.example) whose pages may call /reply; repeatable",
    )
    _media_flags(serve)
    serve.add_argument(
        "--token-file",
        metavar="FILE",
        help=(
            "require the bearer token FILE holds on /reply (kept out of ps, unlike --token; or set "
            f"{SERVE_TOKEN_VARIABLE})"
        ),
    )
    serve.add_argument(
        "--store",
        metavar="URL",
        help=(
            "where parked replies wait: memory (this process, the default) or redis://HOST:PORT/DB, "
            "shared by workers and kept across restarts"
        ),
    )
    serve.add_argument(
        "--max-connections",
        type=int,
        default=SERVE_CONNECTIONS,
        metavar="N",
        help=(
            f"connections to the provider at once, one per streaming reply (default {SERVE_CONNECTIONS}); "
            "replies past it wait for one"
        ),
    )
    serve.add_argument(
        "--token",
        metavar="SECRET",
        help="require 'authorization: Bearer SECRET' on /reply (the page takes it from #token=SECRET)",
    )
    serve.set_defaults(func=_cmd_serve)


def _media_flags(serve: argparse.ArgumentParser) -> None:
    """The flags of ``modelwire serve`` that say what media clients may name (``_source_policy``)."""
    serve.add_argument(
        "--media",
        choices=("public", "hosts", "none", "any"),
        default="public",
        help=(
            "which URLs clients may name for media: public (https on public addresses, and --media-host; "
            "the default), hosts (only --media-host), none (data: only), any (also this server's network); "
            "a client's file: URL is never read"
        ),
    )
    serve.add_argument(
        "--media-host",
        action="append",
        metavar="NAME",
        help="a host (or *.domain) clients may name media on, whatever it resolves to (your own); repeatable",
    )
    serve.add_argument(
        "--media-max-bytes",
        type=int,
        default=20 * 1024 * 1024,
        metavar="N",
        help="the most one fetched media source may hold (default 20 MB)",
    )


def _cmd_serve(args: argparse.Namespace) -> int:
    try:
        import uvicorn
    except ImportError:
        raise UsageError("modelwire serve needs an ASGI server: pip install 'modelwire[serve]' (uvicorn)") from None
    _check_port(args.host, args.port)
    args.token, token_from = _serve_token(args)
    app, what = _serve_app(args)
    page = f"http://{args.host}:{args.port}/"
    sys.stderr.write(f"modelwire serve: {what} on {page}  (POST /reply; Ctrl-C stops)\n")
    if args.token:  # never printed, whole or in part: a terminal's scrollback and CI logs are read by others
        sys.stderr.write(
            f"modelwire serve: /reply wants the bearer token from {token_from} ({len(args.token)} characters); "
            f"open the page as {page}#token=<that token>\n"
        )
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        guards = [
            f"host names {', '.join(sorted(app.allowed_hosts))} (add the names clients use with --allow-host)",
            "pages of this origin only"
            + (
                f" and {', '.join(sorted(app.allowed_origins))}"
                if app.allowed_origins
                else " (--allow-origin for a front end elsewhere)"
            ),
            f"a bearer token ({token_from})"
            if args.token
            else (
                "NO token: anyone who reaches this port can run the agent on your key "
                f"(set {SERVE_TOKEN_VARIABLE}, or --token-file FILE)"
            ),
        ]
        sys.stderr.write(
            f"modelwire serve: warning: {args.host} is not a loopback address; what guards it: "
            + "; ".join(guards)
            + "\n"
        )
    sys.stderr.flush()
    import logging

    logging.getLogger("modelwire.serve").setLevel(logging.INFO)
    if not logging.getLogger().handlers:
        logging.basicConfig(format="modelwire serve: %(message)s", stream=sys.stderr)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


def _serve_app(args: argparse.Namespace) -> tuple[Any, str]:
    """The app ``modelwire serve`` runs, and a line saying what it serves.

    Without a model, or without the model's key, it serves the demo replay, and says why
    on stderr and in a banner on the page."""
    from ..agent import Agent
    from ..errors import MissingKeyError
    from ..models import load_model
    from ..serve import EventStreamApp

    model_name = args.model or os.environ.get("MODELWIRE_MODEL")
    if model_name is None:
        return _demo_app(args, "no model was chosen")
    try:
        # One model for every request (its connection pool is shared); an unknown model
        # or a missing key shows here, at start.
        options = {**_chat_options(args), "max_connections": args.max_connections}
        model = _shown_thinking(load_model(model_name, **options), args)
    except MissingKeyError as exc:
        return _demo_app(args, f"{exc.variable or 'the API key'} is not set for {model_name}")

    tools = _tools(args)
    for tool in tools:
        tool.requires_confirmation = args.confirm_tools

    def make_agent() -> Any:
        return Agent("assistant", model, args.system, tools=tools, max_iters=args.max_iters)

    return EventStreamApp(
        make_agent, page_config={"model": model_name}, source_policy=_source_policy(args), **_protections(args)
    ), model_name


def _source_policy(args: argparse.Namespace) -> Any:
    """What the media clients name may be read from (``--media``, ``--media-host``)."""
    from ..sources import SourcePolicy

    return SourcePolicy(urls=args.media, hosts=tuple(args.media_host or ()), max_bytes=args.media_max_bytes)


def _protections(args: argparse.Namespace) -> dict[str, Any]:
    """What guards the served app: the host names it answers to, the other origins whose
    pages may call it, a bearer token."""
    from ..serve import LOOPBACK

    hosts = [*LOOPBACK, *(args.allow_host or ())]
    if args.host not in ("0.0.0.0", "::", ""):
        hosts.append(args.host)
    from ..serve import store_for

    return {
        "allowed_hosts": hosts,
        "allowed_origins": args.allow_origin or (),
        "auth_token": args.token,
        "store": store_for(args.store),
    }


def _demo_app(args: argparse.Namespace, why: str) -> tuple[Any, str]:
    from ..cassettes import use_cassette
    from ..demo import DEMO_QUESTION, demo_agent, demo_cassette
    from ..serve import EventStreamApp

    def make_demo() -> Any:
        agent = demo_agent()  # its own Tool objects: setting them affects this agent only
        for tool in agent.tools.values():
            tool.requires_confirmation = args.confirm_tools
        return agent

    banner = (
        f"Demo replay: {why}, so the model's side comes from a recording "
        "(whatever you ask, the recorded answer plays; the calculator really runs). "
        "Start modelwire serve --model PROVIDER:MODEL with the provider's key set to talk to a real model."
    )
    # The recording's conversation is fixed: any question (asked alone, without the page's
    # history) replays it; a confirmed or denied call resumes into its second exchange.
    wrap = lambda: use_cassette(demo_cassette(), "none", ignore_fields=("messages.*.content",), allow_unused=True)  # noqa: E731
    config = {"model": "demo replay", "banner": banner, "prompt": DEMO_QUESTION}
    return EventStreamApp(
        make_demo,
        wrap_reply=wrap,
        history=False,
        page_config=config,
        source_policy=_source_policy(args),
        **_protections(args),
    ), f"the demo replay ({why})"


def _serve_token(args: argparse.Namespace) -> tuple[str | None, str]:
    """The bearer token ``serve`` wants on /reply, and where it came from: ``--token-file``,
    ``--token`` (seen by anyone who lists the processes: said so), else
    ``MODELWIRE_SERVE_TOKEN``; none when none is given."""
    if args.token_file and args.token:
        raise UsageError("give the token once: --token-file FILE or --token, not both")
    token: str | None
    if args.token_file:
        try:
            from pathlib import Path

            token = Path(args.token_file).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"--token-file {args.token_file}: cannot read it ({exc.__class__.__name__})") from None
        where = f"--token-file {args.token_file}"
    elif args.token:
        token, where = args.token, "--token"
        sys.stderr.write(
            f"modelwire serve: note: a token given as --token is visible to anyone who lists this machine's "
            f"processes; {SERVE_TOKEN_VARIABLE} or --token-file FILE keep it out of sight\n"
        )
    else:
        token, where = os.environ.get(SERVE_TOKEN_VARIABLE) or None, SERVE_TOKEN_VARIABLE
    if token is not None and (not token or any(not (" " < c < "\x7f") for c in token)):
        raise UsageError(
            f"the token from {where} is empty or holds a space, a line break or a character outside ASCII; "
            "a bearer token is printable ASCII"
        )
    return token, where


def _check_port(host: str, port: int) -> None:
    """A port that cannot be listened on is said before anything claims to serve on it."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise UsageError(
                f"cannot listen on {host}:{port}: {exc.strerror} (another server there? choose another with --port)"
            ) from None
