"""Which provider, where, with which key: model strings, presets and profiles.

A model is named by ``PROVIDER:MODEL`` (``anthropic:claude-sonnet-4-5``, ``openai:gpt-4.1``,
``openai-responses:o4-mini``, ``deepseek:deepseek-chat`` ...) or by the name of a profile
in ``modelwire.toml`` (or ``[tool.modelwire]`` in ``pyproject.toml``)::

    default = "anthropic:claude-sonnet-4-5"

    [profiles.fast]
    model = "openai:gpt-4.1-mini"
    temperature = 0.2

``load_model()`` with no name uses ``MODELWIRE_MODEL`` (a model string or a profile name),
then the file's ``default``.
"""

from __future__ import annotations

import contextvars
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ..errors import ConfigError, MissingKeyError
from ..protocols import Preset, all_presets, find_preset

__all__ = [
    "Preset",
    "ConfigError",
    "ModelSpec",
    "resolve",
    "find_config",
    "load_config",
    "find_preset",
    "all_presets",
    "check_profile_name",
]

# A profile name is written into modelwire.toml as a bare key (``[profiles.NAME]``): TOML's
# bare keys are ASCII letters, digits, ``-`` and ``_`` (https://toml.io/en/v1.0.0#keys), so
# nothing else can close the table header or start a line of its own.
PROFILE_NAME_CHARACTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
_LONGEST_PROFILE_NAME = 64


@dataclass
class ModelSpec:
    """A resolved model: preset, model name, and the options from the profile or the call."""

    preset: Preset
    model: str
    options: dict[str, Any] = field(default_factory=dict)
    api_key: str | None = field(default=None, repr=False)  # never shown
    base_url: str | None = None

    @property
    def protocol(self) -> str:
        return self.preset.protocol


def guess_provider(model: str) -> str | None:
    """The provider a bare, well-known model name belongs to (for a hint), or None: the first
    preset whose ``model_prefixes`` the name begins with."""
    lowered = model.lower()
    for preset in all_presets().values():
        if preset.model_prefixes and lowered.startswith(preset.model_prefixes):
            return preset.name
    return None


def parse(spec: str) -> tuple[Preset, str]:
    provider, sep, model = spec.partition(":")
    if not sep or not model:
        guess = guess_provider(spec)
        hint = f"did you mean {guess}:{spec}?" if guess else "for example anthropic:claude-sonnet-4-5"
        raise ConfigError(f"{spec!r} is not PROVIDER:MODEL; {hint}")
    preset = find_preset(provider)
    if preset is None:
        import difflib

        names = list(all_presets())
        lowered = {n.lower(): n for n in names}
        close = (
            [lowered[provider.lower()]]
            if provider.lower() in lowered
            else difflib.get_close_matches(provider.lower(), names, n=1, cutoff=0.6)
        )
        hint = (
            f"did you mean {close[0]}:{model}?"
            if close
            else f"known providers: {', '.join(names)} (`modelwire models` lists them)"
        )
        raise ConfigError(f"unknown provider {provider!r} in {spec!r}; {hint}")
    return preset, model


# Set by modelwire.cassettes while a replay-only cassette is in use (per task).
REPLAYING: contextvars.ContextVar[bool] = contextvars.ContextVar("modelwire_replaying", default=False)
# Set while any cassette is in use: no request leaves that the cassette would not hold (the
# capability lookup is skipped).
IN_CASSETTE: contextvars.ContextVar[bool] = contextvars.ContextVar("modelwire_in_cassette", default=False)
# Set by the models layer around each request while a cassette is in use: the call's
# conversation in modelwire's JSON form (messages, tools, tool choice, options), which a
# recording keeps beside the request so that ``modelwire cassette transpose`` can format the
# same history for another model. Nothing is built outside cassettes.
CONVERSATION: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "modelwire_conversation", default=None
)
REPLAY_KEY = "modelwire-cassette-replay"  # never recorded: requests in replay never leave


def check_profile_name(name: Any) -> str:
    """``name`` when it can be a profile's name in ``modelwire.toml``; else a
    :class:`~modelwire.errors.ConfigError` naming the characters a name may hold."""
    if (
        not isinstance(name, str)
        or not 0 < len(name) <= _LONGEST_PROFILE_NAME
        or not PROFILE_NAME_CHARACTERS.issuperset(name)
    ):
        raise ConfigError(
            f"{name!r} cannot name a profile: a name holds 1 to {_LONGEST_PROFILE_NAME} of the letters A-Z and "
            "a-z, the digits 0-9, '-' and '_' (it is written as [profiles.NAME] in modelwire.toml)"
        )
    return name


def _check_profile(profile: dict[str, Any], name: str, path: Path | None) -> None:
    """Every key of a profile is a known option (a typo is named, with the likely fix)."""
    import difflib
    from dataclasses import fields

    from ..protocols import ModelOptions

    known = {f.name for f in fields(ModelOptions)} | {
        "model",
        "api_key",
        "base_url",
        "timeouts",
        "formatter",
        "capabilities",
        "capability_lookup",
        "capability_lookup_seconds",
        "endpoint_family",
        "account",
        "on_unsupported_media",
        "fallback",
        "max_concurrent",
        "dialect",
        "pricing",
    }
    for key in profile:
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]}?" if close else f"; known: {', '.join(sorted(known))}"
            raise ConfigError(f"{path}: profile {name!r} has an unknown option {key!r}{hint}")


def _check_key(key: str, preset: Preset) -> None:
    """A key that cannot go in an HTTP header is a clear error now, never later (the error
    names where the key came from, never the key)."""
    where = preset.key_env or "api_key"
    if key != key.strip():
        raise ConfigError(f"the {preset.name} key ({where}) has spaces or a line break around it; remove them")
    bad = next((i for i, c in enumerate(key) if not (" " < c < "\x7f")), None)
    if bad is not None:
        raise ConfigError(
            (
                f"the {preset.name} key ({where}) has a character that cannot be sent (position {bad}); "
                "check what was pasted"
            )
        )


def find_config(start: Path | None = None) -> Path | None:
    """The nearest modelwire.toml (or a pyproject.toml with [tool.modelwire]) upwards from ``start``."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "modelwire.toml"
        if candidate.is_file():
            return candidate
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file() and "[tool.modelwire" in pyproject.read_text(encoding="utf-8", errors="replace"):
            return pyproject
    return None


def load_config(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    import tomllib

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    if path.name == "pyproject.toml":
        data = data.get("tool", {}).get("modelwire", {})
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the modelwire table must be a table")
    for key in data:
        if key not in _CONFIG_KEYS:
            import difflib

            close = difflib.get_close_matches(key, _CONFIG_KEYS, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else f"; known: {', '.join(_CONFIG_KEYS)}"
            raise ConfigError(f"{path}: unknown key {key!r}{hint}")
    return data


_CONFIG_KEYS = ("default", "profiles")


def resolve(
    name: str | None = None, *, config_path: Path | None = None, env: Mapping[str, str] | None = None, **options: Any
) -> ModelSpec:
    """Turn a model string, a profile name or nothing (environment, then config) into a ModelSpec."""
    env = os.environ if env is None else env
    path = config_path if config_path is not None else find_config()
    config = load_config(path) if path else {}
    profiles = config.get("profiles", {})
    chosen = name or env.get("MODELWIRE_MODEL") or config.get("default")
    if not chosen:
        raise ConfigError(
            "no model given: name one (PROVIDER:MODEL, for example anthropic:claude-sonnet-4-5), set MODELWIRE_MODEL,"
            " or set `default` in modelwire.toml"
        )
    chosen, profile_options = _through_profiles(chosen, profiles, path)
    preset, model = parse(chosen)
    merged = {**profile_options, **{k: v for k, v in options.items() if v is not None}}
    api_key = merged.pop("api_key", None)
    base_url = merged.pop("base_url", None)
    preset = _with_dialect(preset, merged.pop("dialect", None))
    if base_url is None:
        base_url = env.get(preset.base_url_variable) or None
    if base_url is None:
        base_url = preset.base_url
    if not base_url:
        raise ConfigError(f"{preset.name} needs a base URL: set {preset.base_url_variable}")
    _check_base_url(base_url)
    return ModelSpec(
        preset=preset, model=model, options=merged, api_key=_key(api_key, preset, env), base_url=base_url.rstrip("/")
    )


def _with_dialect(preset: Preset, dialect: Any) -> Preset:
    """The preset with a profile's ``dialect = {...}`` laid over its own (each key checked by
    its protocol, as a preset's are): how a server found by ``modelwire conform`` differs."""
    if dialect is None:
        return preset
    if not isinstance(dialect, Mapping):
        raise ConfigError(f"dialect={dialect!r} must be a table of the {preset.protocol} protocol's dialect keys")
    from dataclasses import replace

    from ..protocols import get_protocol

    changed = replace(preset, dialect={**preset.dialect, **dialect})
    get_protocol(preset.protocol).check_dialect(changed)
    return changed


def _check_base_url(url: str) -> None:
    """A base URL is http(s)://host[:port][/path]: anything else is a mistake to say now, not
    a connection that fails later."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port that is no number or out of range
    except ValueError as exc:
        raise ConfigError(f"the base URL {url!r} is not a URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"the base URL {url!r} is not an http(s) URL (for example https://api.example.com/v1)")


def _through_profiles(chosen: str, profiles: Mapping[str, Any], path: Path | None) -> tuple[str, dict[str, Any]]:
    """The model string a profile name leads to (through profiles naming profiles), and the
    options the profiles on the way set (the first one's win)."""
    profile_options: dict[str, Any] = {}
    seen: list[str] = []
    while ":" not in chosen:
        if chosen in seen:
            raise ConfigError(f"profile loop: {' -> '.join(seen + [chosen])}")
        seen.append(chosen)
        profile = profiles.get(chosen)
        if profile is None:
            import difflib

            where = f" in {path}" if path else " (no modelwire.toml found)"
            guess = guess_provider(chosen)
            close = difflib.get_close_matches(chosen, sorted(profiles), n=1, cutoff=0.6)
            hint = (
                f"; did you mean the profile {close[0]!r}?"
                if close
                else f"; did you mean {guess}:{chosen}?"
                if guess
                else ""
            )
            raise ConfigError(f"{chosen!r} is neither PROVIDER:MODEL nor a profile{where}{hint}")
        if isinstance(profile, str):
            chosen = profile
            continue
        if not isinstance(profile, dict):
            raise ConfigError(f"{path}: profile {chosen!r} must be a table or a model string")
        profile = dict(profile)
        _check_profile(profile, chosen, path)
        target = profile.pop("model", None)
        if not target:
            raise ConfigError(f"profile {chosen!r} has no `model`")
        profile_options = {**profile, **profile_options}
        chosen = target
    return chosen, profile_options


def _key(api_key: str | None, preset: Preset, env: Mapping[str, str]) -> str | None:
    """The API key: the one given, else the preset's environment variables; checked, and
    an error when the provider needs one and none is set."""
    if api_key is None:
        for variable in preset.dialect.get("key_envs") or ((preset.key_env,) if preset.key_env else ()):
            api_key = env.get(variable) or None
            if api_key:
                break
    if api_key is not None:
        _check_key(api_key, preset)
    if api_key is None and preset.key_required and REPLAYING.get():
        api_key = REPLAY_KEY  # replaying a cassette: no request leaves, no key is needed
    if api_key is None and preset.key_required:
        raise MissingKeyError(f"{preset.name} needs an API key: set {preset.key_env}", preset.key_env)
    return api_key
