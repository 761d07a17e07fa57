"""What one model accepts: the record protocols read to shape a request for that model.

Providers' rules are per model (Claude Opus 4.7 takes adaptive thinking only, Opus 4.6
takes both forms, GPT-5 rejects ``temperature``), so a protocol that maps an option asks
the model's :class:`ModelCapabilities`. ``None`` in a field means *not known*: the
protocol then sends what the protocol itself takes and lets the server decide, as it
always did. The models layer fills the record (shipped table, the provider's own models
endpoint, the user's overrides) and records where each field came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any, Mapping

from ..errors import ConfigError

__all__ = ["ModelCapabilities", "Refusal", "THINKING_MODES", "EFFORT_LEVELS", "DISPLAYS", "UNION_FIELDS"]

THINKING_MODES = ("budget", "adaptive", "effort")
EFFORT_LEVELS = ("minimal", "low", "medium", "high", "xhigh", "max")
DISPLAYS = ("summarized", "omitted")
THINKING_OFF_FORMS = ("disabled", "between_tools")


@dataclass(frozen=True)
class ModelCapabilities:
    """One model's rules. Every field may be ``None`` (not known).

    Attributes:
        thinking: how thinking can be asked for: ``"budget"`` (a token budget),
            ``"adaptive"`` (the model decides how much), ``"effort"`` (by level only);
            ``()`` when the model does not think.
        thinking_off: whether thinking can be turned off (False: the model always thinks).
        thinking_default: whether the model thinks when thinking is not asked for (then
            ``thinking_display`` may be asked alone: what it shows of that thinking).
        display_default: what the model shows of its thinking when not asked:
            ``"summarized"`` or ``"omitted"`` (only a signature arrives).
        effort: the effort levels the model takes (of :data:`EFFORT_LEVELS`); ``()``: none.
        sampling: whether ``temperature`` / ``top_p`` are accepted.
        sampling_one_of: whether only one of ``temperature`` and ``top_p`` may be set
            (Claude Opus 4.1 to 4.6: one or the other, not both).
        sampling_thinking_off: whether ``temperature`` / ``top_p`` are accepted with
            thinking off, where ``sampling`` is False (GPT-6: only at effort ``none``).
        structured_output: a native JSON-schema output mode.
        strict_tools: strict tool schemas.
        tool_use: whether tool definitions are taken at all (an Ollama model without the
            tools capability: "... does not support tools").
        streamed_tool_use: whether tools are taken in a streamed request (Llama 4 on Bedrock:
            "This model doesn't support tool use in streaming mode").
        tool_use_thinking: whether tools are taken while the model reasons, on the endpoint
            the record is for (GPT-6 on OpenAI's Chat Completions: function tools only at effort
            ``none``; on the Responses API, with any effort).
        max_tools: the most tool definitions one request may hold (OpenAI's Chat
            Completions: 128).
        forced_tool: whether a forced tool choice (``required`` or a named tool) is accepted.
        forced_tool_thinking: whether a forced tool choice is accepted while thinking is on.
        thinking_off_as: how the model is told not to think where that is not the protocol's
            usual switch (Claude Sonnet 5.5: ``"between_tools"``, its lowest setting, where
            ``"disabled"`` is refused).
        thinking_off_effort: the effort levels at which thinking can be turned off (Claude
            Opus 5 refuses ``xhigh`` and ``max`` with thinking off); ``None``: any it takes.
        budget_min / budget_max: the thinking budgets (tokens) the model takes.
        refused_fields: top-level request fields the provider said it does not know for
            this model (a gateway's or an older server's ``output_config``, ``thinking``);
            a request holding one is refused before it is sent.
        strict_refused: JSON-schema keywords the provider's strict mode refuses (Azure
            OpenAI: ``default``).
        tool_id_pattern / tool_name_pattern: the pattern the provider said tool-call ids /
            tool names must match, in its own words (``^[a-zA-Z0-9_-]+$``; ``a-z, A-Z, 0-9,
            with a length of 9``): ids and names are rewritten to fit it.
        image_input / pdf_input / audio_input: media the model takes in.
        max_output_tokens / context_window: token limits.
        server_tools: the provider's own tools the model can run (``web_search`` ...).
        refused_tool_types: provider-defined tool types (a raw tool definition's ``type``) the
            model refuses where its provider says so, its source naming what to send instead
            (Claude 5.5 on the Claude API: ``computer_20251124``, for the toolset
            ``computer_toolset_20260801``).
        cache_ttls: the prompt-cache lifetimes the model takes, as the provider names them
            (Claude ``5m`` ``1h``; GPT-5.6 ``30m`` ``12h``).
        thinking_bound: what the model's signed thinking is bound to beyond its endpoint
            family, of ``model``, ``conversation``, ``account`` (Claude Sonnet 5.5: it goes
            back only to the model that made it); ``()``: nothing more.
        system_messages: whether system messages are taken in mid-conversation, where they
            are (Claude Sonnet 5.5: ``role: "system"`` in ``messages``), rather than merged
            into the one system prompt at the top.
        task_budget: whether ``output_config.task_budget`` is taken (Claude: a token
            budget across the contexts of one task).
        effort_per_message: whether an effort change is taken in mid-conversation, where it
            is (a system message carrying ``metadata["reasoning_effort"]``: Claude's
            ``output_config`` on a system message, OpenAI Responses' ``configuration_update``
            item), which keeps the cached prefix; refused where not known.
        retired: the day the provider retired the model (or retires it), ``YYYY-MM-DD``
            (Magistral Medium: 2026-07-31); its calls may be refused, or answered by another.
        successor: the model the provider names in its place (``mistral-medium-3-5``).
        sources: where each field came from (``field -> source``), for ``modelwire models
            --capabilities``.
    """

    thinking: tuple[str, ...] | None = None
    thinking_off: bool | None = None
    thinking_default: bool | None = None
    display_default: str | None = None
    effort: tuple[str, ...] | None = None
    sampling: bool | None = None
    sampling_one_of: bool | None = None
    sampling_thinking_off: bool | None = None
    structured_output: bool | None = None
    strict_tools: bool | None = None
    tool_use: bool | None = None
    streamed_tool_use: bool | None = None
    tool_use_thinking: bool | None = None
    max_tools: int | None = None
    forced_tool: bool | None = None
    forced_tool_thinking: bool | None = None
    thinking_off_as: str | None = None
    thinking_off_effort: tuple[str, ...] | None = None
    budget_min: int | None = None
    budget_max: int | None = None
    refused_fields: tuple[str, ...] | None = None
    strict_refused: tuple[str, ...] | None = None
    tool_id_pattern: str | None = None
    tool_name_pattern: str | None = None
    image_input: bool | None = None
    pdf_input: bool | None = None
    audio_input: bool | None = None
    max_output_tokens: int | None = None
    context_window: int | None = None
    server_tools: tuple[str, ...] | None = None
    refused_tool_types: tuple[str, ...] | None = None
    cache_ttls: tuple[str, ...] | None = None
    thinking_bound: tuple[str, ...] | None = None
    task_budget: bool | None = None
    system_messages: bool | None = None
    effort_per_message: bool | None = None
    retired: str | None = None
    successor: str | None = None
    sources: Mapping[str, str] = field(default_factory=dict, compare=False)

    @property
    def native_structured_output(self) -> bool:
        """Whether to ask for structured output natively (else: a final-answer tool)."""
        return bool(self.structured_output)

    def known(self) -> dict[str, Any]:
        """The fields that are known, by name."""
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name != "sources" and getattr(self, f.name) is not None
        }

    def over(self, base: "ModelCapabilities") -> "ModelCapabilities":
        """This record's known fields laid over ``base`` (and their sources)."""
        known = self.known()
        return replace(base, **known, sources={**base.sources, **{k: self.sources.get(k, "") for k in known}})

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], source: str) -> "ModelCapabilities":
        """A record from plain data (a table entry, a profile, ``capabilities={...}``),
        each value checked; an unknown field or a wrong value is a :class:`ConfigError`."""
        names = {f.name for f in fields(cls)} - {"sources"}
        values: dict[str, Any] = {}
        for key, value in data.items():
            if key not in names:
                import difflib

                close = difflib.get_close_matches(key, sorted(names), n=1, cutoff=0.6)
                hint = f"; did you mean {close[0]!r}?" if close else f"; known: {', '.join(sorted(names))}"
                raise ConfigError(f"{source}: unknown capability {key!r}{hint}")
            if value is None:
                continue
            values[key] = _checked(key, value, source)
        return cls(**values, sources={k: source for k in values})


_CHOICES = {
    "thinking": THINKING_MODES,
    "effort": EFFORT_LEVELS,
    "thinking_off_effort": EFFORT_LEVELS,
    "display_default": DISPLAYS,
    "thinking_bound": ("model", "conversation", "account"),
}
_ONE_OF = {"display_default": DISPLAYS, "thinking_off_as": THINKING_OFF_FORMS}
# Fields that are whole numbers, by what they count.
_INTS = {
    "max_output_tokens": "tokens",
    "context_window": "tokens",
    "budget_min": "tokens",
    "budget_max": "tokens",
    "max_tools": "tools",
}
_NAMES = (
    "thinking",
    "effort",
    "thinking_off_effort",
    "server_tools",
    "refused_tool_types",
    "cache_ttls",
    "refused_fields",
    "strict_refused",
    "thinking_bound",
)


def _is_day(text: str) -> bool:
    """Whether ``text`` is a day written as ``YYYY-MM-DD``."""
    return len(text) == 10 and text[4::3] == "--" and text.replace("-", "", 2).isdigit()


# Fields written as text: what each must be, and the test of it.
_TEXTS: dict[str, tuple[str, Any]] = {
    "tool_id_pattern": ("a pattern, as the provider states it", bool),
    "tool_name_pattern": ("a pattern, as the provider states it", bool),
    "successor": ("a model's name", bool),
    "retired": ("a day, as YYYY-MM-DD", _is_day),
}
# Fields where what is learned adds to what was learned before (each refusal names one).
UNION_FIELDS = frozenset({"refused_fields", "strict_refused"})


def _checked(key: str, value: Any, source: str) -> Any:
    def bad(what: str) -> ConfigError:
        return ConfigError(f"{source}: capability {key}={value!r} must be {what}")

    if key in _NAMES:
        if isinstance(value, str) or not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise bad("a list of names")
        allowed = _CHOICES.get(key)
        if allowed is not None and any(v not in allowed for v in value):
            raise bad(f"a list of {', '.join(allowed)}")
        return tuple(value)
    if key in _ONE_OF:
        if value not in _ONE_OF[key]:
            raise bad(" or ".join(_ONE_OF[key]))
        return value
    if key in _TEXTS:
        what, fits = _TEXTS[key]
        if not isinstance(value, str) or not fits(value):
            raise bad(what)
        return value
    if key in _INTS:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise bad(f"a whole number of {_INTS[key]}")
        return value
    if not isinstance(value, bool):
        raise bad("true or false")
    return value


@dataclass(frozen=True)
class Refusal:
    """A rule a provider states in its refusal, in words a program can read: a 400 whose
    message matches ``pattern`` (a regular expression, searched case-insensitively) means
    the model does not take ``option`` and that its capabilities are ``learn(match)`` (a
    mapping of :class:`ModelCapabilities` fields). ``source`` names where the words come
    from (the error text users reported, with its date, or a recorded response).

    The models layer keeps what it learns per endpoint and model, so the next call is
    refused before it is sent (see ``modelwire.models._learned``)."""

    pattern: str
    option: Any  # the option's name, or (re.Match) -> it, where the words name it
    learn: Any  # (re.Match) -> Mapping[str, Any]
    source: str

    @classmethod
    def unknown_field(cls, pattern: str, source: str) -> "Refusal":
        """A refusal naming a top-level request field the server does not know (the pattern's
        first group): the field is the option, and it is learned as refused."""
        return cls(pattern, lambda m: m.group(1), lambda m: {"refused_fields": [m.group(1)]}, source)

    def learned(self, message: str) -> tuple[str, ModelCapabilities] | None:
        """The option these words refuse and the capabilities they state, or None when they
        are not this refusal's words."""
        import re

        found = re.search(self.pattern, message, re.IGNORECASE)
        if found is None:
            return None
        values = self.learn(found)
        if not values:
            return None
        option = str(self.option(found) if callable(self.option) else self.option)
        return option, ModelCapabilities.from_mapping(values, "")


def levels_up_to(level: str) -> tuple[str, ...]:
    """The effort levels up to ``level`` ("Use effort 'high' or below")."""
    level = level.strip(" '\"`").lower()
    return EFFORT_LEVELS[: EFFORT_LEVELS.index(level) + 1] if level in EFFORT_LEVELS else ()


def levels_in(text: str) -> tuple[str, ...]:
    """The effort levels named in a provider's list ("high, low, max, medium"; "'low',
    'medium', and 'high'"), in the usual order."""
    named = {w.strip(" '\"`.").lower() for w in text.replace(" and ", ",").split(",")}
    return tuple(level for level in EFFORT_LEVELS if level in named)
