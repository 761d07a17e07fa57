"""The pre-flight check: every reason the next request to a model would be refused or would
lose something, found offline, before anything is sent.

Each :class:`Finding` has a stable ``rule`` id, the index of the message it is about, what
is wrong, and the fix modelwire applies (or ``None`` when the conversation itself must
change). :func:`repair` writes the conversation as modelwire would send it, for the rules
that have a fix. ``modelwire check`` is the command line around both.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Sequence

from .. import errors as E
from .._record import extras_of

__all__ = ["Finding", "RULES", "preflight", "repair"]

# rule id -> what it means (the ids are stable: tools and CI configurations may name them)
RULES = {
    "tool-id": "a tool-call id the target refuses; it is rewritten, the same for the call and its result",
    "tool-name": "a tool name the target refuses; it is rewritten, and mapped back when the model calls it",
    "foreign-thinking": (
        "signed thinking or encrypted reasoning another endpoint minted; the target cannot check it, so it is not sent"
    ),
    "forced-tool-with-thinking": "a forced tool choice the model refuses while it thinks (or at all)",
    "unsupported-media": "media the model does not take in",
    "bad-data": (
        "inline data that is not base64, or a media type that is none (taken when built, as AgentScope takes them)"
    ),
    "non-strict-schema": "a json_schema the provider's strict mode cannot express; it is sent unenforced",
    "cache-breakpoints": "more prompt-cache breakpoints than the provider allows",
    "empty-text": "an empty text block in a user or system message, which providers refuse; it is left out",
    "orphan-result": "a tool result without its call before it",
    "unanswered-call": "a tool call without its result before the conversation goes on",
    "unsupported-option": "an option the model does not take",
    "tool-use": "tools the model does not take: at all, in a streamed request, or while it reasons on this endpoint",
    "strict-schema": "a strict tool schema holding a keyword the model's strict mode refuses",
    "tool-schema": "a tool schema the provider refuses in any mode (Claude: anyOf, oneOf or allOf at its top)",
    "context-window": "a conversation larger than the model's context window (estimated from its text)",
    "file-elsewhere": (
        "a file uploaded to another provider's Files API (model.upload_file), which the target cannot read by id"
    ),
    "foreign-compaction": (
        "a compaction window another provider made, which only it can read; its summary is sent as text where it "
        "carries one, else it is left out"
    ),
    "system-moved": (
        "a system message in mid-conversation, which a target with one system prompt (at the top) merges into it"
    ),
    "effort-change": (
        "an effort change in mid-conversation (a system message's metadata reasoning_effort) the model does not take"
    ),
    "format": "a conversation the provider's format cannot express",
    "retired": "a model its provider retired (or retires on a day to come); the finding names the one it gives instead",
}


@dataclass(frozen=True)
class Finding:
    rule: str
    index: int | None
    message: str
    fix: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        where = f"message [{self.index}]" if self.index is not None else "request"
        return f"[{self.rule}] {where}: {self.message}" + (f" (fix: {self.fix})" if self.fix else "")


def preflight(
    model: Any,
    messages: Sequence[Any],
    tools: Sequence[Any] | None = None,
    tool_choice: Any = None,
    options: Any = None,
) -> list[Finding]:
    """What would go wrong with the next request of ``model`` (an ``HTTPModel``) for these
    messages: an empty list when nothing would."""
    seen_names: set[str] = set()  # tool names already reported
    caps = model.capabilities  # first: what was learned sets the id and name rules too
    findings = _retired_findings(model, caps) + _history_findings(model, messages, seen_names)
    findings += _context_findings(model, messages)
    findings += _tool_findings(model, tools, seen_names)
    try:
        opts = model.options.merged(options)
    except E.ModelwireError as exc:
        return findings + [Finding("unsupported-option", None, str(exc))]
    if opts.json_schema is not None:
        for problem in model.wire.schema_problems(opts.json_schema):
            findings.append(
                Finding(
                    "non-strict-schema",
                    None,
                    f"json_schema: {problem}",
                    "sent with strict: false (the model may not follow it)",
                )
            )
    files, messages = _file_findings(model, messages)
    return findings + files + _request_findings(model, messages, tools, tool_choice, opts, caps)


def _retired_findings(model: Any, caps: Any) -> list[Finding]:
    """A model its provider retired, or retires on a day to come, and the one it names instead."""
    if caps.retired is None:
        return []
    return [Finding("retired", None, retirement(model.provider, model.name, caps), None)]


def retirement(provider: str, name: str, caps: Any) -> str:
    """What the table says of the retirement of ``provider:name`` (``caps.retired`` is set):
    retired, or deprecated where the day is still to come (read against
    :data:`~modelwire.models.capabilities.TODAY`), and the model the provider names instead."""
    from .capabilities import has_come

    if has_come(caps.retired):
        when = f"was retired on {caps.retired}: its calls may be refused, or answered by another model"
    else:
        when = f"is deprecated: its provider retires it on {caps.retired}"
    instead = f"; the provider names {provider}:{caps.successor} in its place" if caps.successor else ""
    return f"{provider}:{name} {when}{instead}"


def _file_findings(model: Any, messages: Sequence[Any]) -> tuple[list[Finding], Sequence[Any]]:
    """Uploaded files the target cannot read by id: each a finding, and where the block keeps
    a local copy (whose bytes are then sent), the messages with the block standing for those
    bytes, so the request is checked as it would be sent."""
    from ..message import Base64Source, DataBlock, origin

    from ._media import by_reference

    findings: list[Finding] = []
    out = list(messages)
    target = f"{model.provider}:{model.name}"
    for index, msg in enumerate(messages):
        for n, block in enumerate(msg.content):
            extras = extras_of(block) if block.type == "data" else {}
            if not extras.get("file_id"):
                continue
            if by_reference(block, model.wire, model.endpoint):
                continue
            local = extras.get("local_copy")
            if not isinstance(local, str):
                continue  # the formatter refuses it, saying what to do
            held = origin(block)
            holder = held.provider if held is not None else "another provider"
            findings.append(
                Finding(
                    "file-elsewhere",
                    index,
                    f"{target} cannot read the file {extras['file_id']} that {holder} holds",
                    f"its bytes are sent, read from {local}",
                )
            )
            content = list(out[index].content)
            content[n] = DataBlock(
                id=block.id, source=Base64Source(data="AAAA", media_type=block.source.media_type), name=block.name
            )
            out[index] = out[index].replace(content=content)
    return findings, out


def _request_findings(
    model: Any, messages: Sequence[Any], tools: Sequence[Any] | None, tool_choice: Any, opts: Any, caps: Any
) -> list[Finding]:
    """What building the request refuses: every option the model does not take, every tool
    schema it refuses, what the conversation itself breaks, then its size. Each found, the
    request is built again without it (an option left out, the tools made plain, a one-line
    conversation in place of one the format cannot express), so one check reports them all."""
    from dataclasses import fields, replace

    from ..message import UserMsg

    findings: list[Finding] = []
    names = {f.name for f in fields(opts)}
    kept = model.options
    checked = list(messages)
    probe = [UserMsg("user", "probe")]
    given, plain = tools, None  # the tools as given; the same made plain, once they were
    try:
        for _ in range(len(names) + 6):
            model.options = opts  # the call's options, with what was already reported taken out
            try:
                model.build_request(checked, tools, tool_choice, None)
            except E.UnsupportedOptionError as exc:
                found = _option_finding(exc)
                if found not in findings:  # (plain tools refused for the same reason: said once)
                    findings.append(found)
                if exc.option == "tool_choice":
                    tool_choice = "auto"
                elif exc.option == "tools" and tools:
                    tools = None if tools is plain else _plain_tools(tools)  # plain and still refused: none
                    plain = tools
                elif exc.option == "stream" and opts.stream is not False:
                    opts = replace(opts, stream=False)  # the fix it names: the rest is checked unstreamed
                elif exc.option in names and getattr(opts, exc.option) is not None:
                    opts = replace(opts, **{exc.option: None})
                else:
                    return findings  # nothing to take out (a field of the request)
            except E.FormatError as exc:
                findings.append(_format_finding(exc))
                if exc.code == "tool-schema" and tools and tools is not plain:
                    tools = plain = _plain_tools(tools)
                elif checked is not probe:
                    checked = probe  # the options are still checked, on a conversation that formats
                else:
                    return findings
            else:
                return findings + _size_findings(messages, given, caps)
    finally:
        model.options = kept
    return findings


def _plain_tools(tools: Sequence[Any]) -> list[Any]:
    """The tools with nothing in their schemas and no strict mode: their names only, so what
    else the request holds is still checked."""
    from ..formatters import ToolSpec

    out = []
    for given in tools:
        try:
            spec = ToolSpec.coerce(given)
        except E.FormatError:
            continue
        out.append(ToolSpec(spec.name, spec.description))
    return out


def _option_finding(exc: E.UnsupportedOptionError) -> Finding:
    rule = {"tool_choice": "forced-tool-with-thinking", "tools": "tool-use"}.get(exc.option, "unsupported-option")
    if rule == "tool-use" and "strict mode" in str(exc):
        rule = "strict-schema"  # a keyword of a strict tool's schema (check_strict_tools)
    return Finding(rule, None, str(exc), "tool_choice='auto'" if rule == "forced-tool-with-thinking" else None)


def _format_finding(exc: E.FormatError) -> Finding:
    code = exc.code if exc.code in RULES else "format"
    fix = {
        "unsupported-media": "on_unsupported_media='note' puts a note in its place",
        "orphan-result": "dropped",
        "unanswered-call": "answered with an interrupted result",
        "effort-change": "set reasoning_effort for the call",
    }.get(code)
    return Finding(code, exc.index, exc.rule, fix)


# Characters of text per token, for the estimate: English prose runs near 4, code fewer.
_CHARS_PER_TOKEN = 4


def _size_findings(messages: Sequence[Any], tools: Sequence[Any] | None, caps: Any) -> list[Finding]:
    """A conversation whose text alone cannot fit the model's context window, where that is
    known (media is left out of the estimate: what it costs differs by provider)."""
    import json

    window = caps.context_window
    if window is None:
        return []
    chars = len(json.dumps([getattr(t, "parameters", t) for t in tools or ()], default=str))
    for msg in messages:
        for block in msg.content:
            for name in ("text", "thinking", "input", "output"):
                value = getattr(block, name, None)
                if isinstance(value, str):
                    chars += len(value)
                elif isinstance(value, dict):  # a call's arguments
                    chars += len(json.dumps(value, default=str))
                elif isinstance(value, list):  # a result's blocks: their text
                    chars += sum(len(t) for t in (getattr(item, "text", None) for item in value) if isinstance(t, str))
    estimate = chars // _CHARS_PER_TOKEN
    if estimate <= window:
        return []
    return [
        Finding(
            "context-window",
            None,
            (
                f"does not fit the model's context window: about {estimate:,} tokens (an estimate from "
                f"its text) against {window:,}"
            ),
            None,
        )
    ]


def counted_finding(counted: Any, window: int | None, target: str) -> Finding | None:
    """The context-window finding from a count (:meth:`HTTPModel.count_tokens`): the
    provider's own, or an estimate marked as one."""
    if window is None or counted.input_tokens <= window:
        return None
    how = "an estimate from the request's size" if counted.estimated else "counted by the provider"
    return Finding(
        "context-window",
        None,
        f"does not fit {target}'s context window: {counted.input_tokens:,} input tokens ({how}) against {window:,}",
        None,
    )


def _history_findings(model: Any, messages: Sequence[Any], seen_names: set[str]) -> list[Finding]:
    """What the target would refuse or drop in the messages: empty text, tool ids and names
    it does not take, thinking signed elsewhere."""
    from ..protocols import replay_keys

    signed = replay_keys()  # block fields that carry what only the endpoint that minted them can check
    findings: list[Finding] = []
    ids, names = getattr(model.formatter, "tool_id_rules", None), getattr(model.formatter, "tool_name_rules", None)
    target = f"{model.provider}:{model.name}"
    seen_ids: set[str] = set()
    server: set[str] = set()
    for index, msg in enumerate(messages):
        for block in msg.content:
            btype = block.type
            extras = extras_of(block)
            if btype == "text" and not block.text and msg.role != "assistant":
                # (Empty text a provider itself sent in a reply is its own habit, and dropped.)
                findings.append(
                    Finding("empty-text", index, f"an empty text block in a {msg.role} message", "left out")
                )
            elif btype in ("tool_call", "tool_result"):
                if btype == "tool_call" and extras.get("server_side"):
                    server.add(block.id)
                    continue
                if btype == "tool_result" and block.id in server:
                    continue
                if ids is not None and not ids.fits(block.id) and block.id not in seen_ids:
                    seen_ids.add(block.id)
                    findings.append(
                        Finding(
                            "tool-id",
                            index,
                            f"{target} refuses the tool-call id {block.id!r}",
                            "rewritten as the target takes it, the same for its result",
                        )
                    )
                findings += _name_finding(block.name, names, seen_names, index, target)
            if btype in ("thinking", "data", "text", "tool_call") and any(extras.get(key) for key in signed):
                findings += _foreign(model, block, index, target)
    return findings


def _context_findings(model: Any, messages: Sequence[Any]) -> list[Finding]:
    """Compaction windows the target cannot take (their summary sent instead, or nothing),
    and system messages in mid-conversation a target with one system prompt moves to the top."""
    from ..message import origin

    findings: list[Finding] = []
    target = f"{model.provider}:{model.name}"
    spoken = False  # a user or assistant message came before
    for index, msg in enumerate(messages):
        if msg.role == "system" and spoken and msg.content and not getattr(model.formatter, "system_in_place", True):
            findings.append(
                Finding(
                    "system-moved",
                    index,
                    f"{target} takes one system prompt, at the top: this system message in mid-conversation joins it",
                    "sent with the system prompt (the model reads it before the whole conversation)",
                )
            )
        spoken = spoken or msg.role != "system"
        for block in msg.content:
            if block.type != "data" or extras_of(block).get("provider_block_type") != "compaction":
                continue
            sent = model.formatter.compaction_stand_in(block)
            if sent is block:
                continue
            made = origin(block)
            maker = (made.endpoint or made.provider or made.protocol) if made else "another provider"
            fix = (
                "its summary sent instead, in place of the messages before it"
                if sent is not None
                else "left out: it carries no readable summary; the messages before it are sent in full"
            )
            findings.append(
                Finding("foreign-compaction", index, f"a compaction window made by {maker} cannot go to {target}", fix)
            )
    return findings


def _foreign(model: Any, block: Any, index: int, target: str) -> list[Finding]:
    """A signed block the target cannot check (made by another endpoint): not sent."""
    from ..formatters import replays_natively
    from ..message import origin

    account = getattr(model, "account", None)
    if replays_natively(
        block,
        model.wire.name,
        model.provider,
        scope=model.wire.replay_scope,
        endpoint=model.endpoint,
        model=model.name,
        account=account,
    ):
        return []
    made = origin(block)
    maker = made.endpoint or made.provider or made.protocol if made else "another provider"
    if made is not None and made.model is not None:
        maker = f"{made.model} ({maker}), which binds its thinking to itself,"
    elif made is not None and made.account is not None and account is not None and made.account != account:
        maker = f"another account ({made.account}) at {maker}, whose thinking is bound to the account that made it,"
    return [
        Finding(
            "foreign-thinking",
            index,
            f"{block.type} signed by {maker} cannot be checked by {target}",
            "not sent; the model does not see that reasoning",
        )
    ]


def _tool_findings(model: Any, tools: Sequence[Any] | None, seen_names: set[str]) -> list[Finding]:
    """The tool names the target would not take as they are."""
    from ..formatters import ToolSpec

    names = getattr(model.formatter, "tool_name_rules", None)
    findings: list[Finding] = []
    for spec in tools or ():
        try:
            name = ToolSpec.coerce(spec).name
        except E.FormatError:
            continue
        findings += _name_finding(name, names, seen_names, None, f"{model.provider}:{model.name}")
    return findings


def _name_finding(name: str, names: Any, seen_names: set[str], index: int | None, target: str) -> list[Finding]:
    """A tool name the target refuses (each name once)."""
    from ..formatters._toolids import wire_name

    if names is None or not name or name in seen_names or wire_name(name, names) == name:
        return []
    seen_names.add(name)
    return [
        Finding("tool-name", index, f"{target} refuses the tool name {name!r}", f"sent as {wire_name(name, names)!r}")
    ]


def _interrupted(calls: list[Any]) -> list[Any]:
    """An ``interrupted`` result for each of ``calls`` (emptied: each is answered once)."""
    from ..message import ToolResultBlock

    out = [
        ToolResultBlock(id=c.id, name=c.name, output="The call was interrupted before it ran.", state="interrupted")
        for c in calls
    ]
    calls.clear()
    return out


def repair(model: Any, messages: Sequence[Any]) -> list[Any]:
    """The conversation with the fixes modelwire applies written into it: ids and names the
    target refuses rewritten, media it does not take replaced by a note, empty text and
    results without their call left out, a client call no result answers given an
    ``interrupted`` one right after its calls, a compaction window the target cannot read
    replaced by its summary (or left out). (Foreign thinking stays: it is only not sent.)"""
    from ..formatters._toolids import conform

    formatter = model.formatter
    out: list[Any] = []
    calls: set[str] = set()
    answered = {b.id for m in messages for b in m.content if b.type == "tool_result"}
    for msg in messages:
        kept: list[Any] = []
        waiting: list[Any] = []  # this run's calls that no result answers
        for block in msg.content:
            if block.type == "text" and not block.text:
                continue
            if block.type == "data" and extras_of(block).get("provider_block_type") == "compaction":
                block = formatter.compaction_stand_in(block)  # itself, its summary as text, or None
                if block is None:
                    continue
            if block.type == "tool_call":
                calls.add(block.id)
                if block.id not in answered and not extras_of(block).get("server_side"):
                    waiting.append(block)
            elif block.type != "tool_result" and waiting:
                kept += _interrupted(waiting)  # before what follows the run of calls and results
            if block.type == "tool_result" and block.id not in calls:
                continue
            kept.append(block)
        kept += _interrupted(waiting)
        out.append(msg.replace(content=kept) if kept != list(msg.content) else msg)
    fixed, _, _ = conform(
        out, None, None, getattr(formatter, "tool_id_rules", None), getattr(formatter, "tool_name_rules", None)
    )
    previous = model.on_unsupported_media
    model.on_unsupported_media = "note"
    try:
        from ._media import refused_media

        return list(model._media_checked(list(fixed), refused_media(model.capabilities)))
    finally:
        model.on_unsupported_media = previous
