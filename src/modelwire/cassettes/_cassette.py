"""Cassettes: real provider traffic recorded once, replayed offline in tests.

A cassette is one JSON file a person can review::

    {
      "version": 1,
      "notes": "how it was made",
      "provenance": {"kind": "live", "recorded_at": "2026-12-04T10:00:00Z", "modelwire": "0.1.0",
                     "endpoints": ["https://api.anthropic.com"], "models": ["claude-opus-4-7"]},
      "interactions": [
        {"request": {"method": "POST", "url": "...", "headers": {...}, "json": {...}},
         "response": {"status": 200, "headers": {...}, "body": "event: ...\\ndata: ...\\n\\n",
                      "chunks": [[0.0, 120], [0.013, 98], ...]}}
      ]
    }

``body`` is the response body exactly as received (``body_base64`` when it is not UTF-8);
``provenance`` (optional) says where the answers came from: ``kind`` is ``live`` (recorded
from a provider) or ``derived`` (written or edited by hand, e.g. a fault case), which
``modelwire cassette recheck --update`` never overwrites. ``chunks`` (optional) keeps the piece boundaries as ``[seconds
since the first byte,
length]`` so a replay can stream the same pieces, with the same timing if asked.

Recording and replay hook into the HTTP transport of ``httpx2`` (which modelwire and the
official ``openai`` / ``anthropic`` SDKs run on) and of ``httpx`` when it is installed, so
they cover every provider and the SDK clients alike.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import difflib
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from .._secrets import SECRET_HEADERS, SECRET_QUERY, holds
from ..errors import CassetteError, CassetteMismatchError, CassetteSecretError, UnusedInteractionsError

__all__ = [
    "Cassette",
    "Interaction",
    "CassetteError",
    "CassetteMismatchError",
    "UnusedInteractionsError",
    "CassetteSecretError",
    "RECORD_MODES",
    "SECRET_HEADERS",
]

RECORD_MODES = ("none", "once", "new_episodes", "all")
# Headers worth keeping for a reader; the rest (dates, trace ids, rate-limit counters) is noise.
KEPT_REQUEST_HEADERS = ("content-type", "accept", "anthropic-version", "anthropic-beta", "user-agent")
KEPT_RESPONSE_HEADERS = ("content-type", "retry-after", "retry-after-ms", "request-id", "x-request-id")


def _without_boundary(body: Any) -> Any:
    """A multipart body (an upload) with its boundary, which each client draws at random,
    written as ``BOUNDARY``: the same upload matches whichever boundary it was sent with."""
    if not isinstance(body, str) or not body.startswith("--"):
        return body
    first = body.split("\r\n", 1)[0]
    boundary = first[2:]
    if not boundary or len(boundary) > 200 or any(c.isspace() for c in boundary):
        return body
    return body.replace(first, "--BOUNDARY")


def canonical_json(value: Any, ignore: Iterable[str] = ()) -> str:
    """Sorted-key JSON with the ``ignore``d fields (dotted paths, ``*`` for any key) removed."""
    value = copy.deepcopy(value)
    for path in ignore:
        _drop(value, path.split("."))
    return json.dumps(value, sort_keys=True, indent=1, ensure_ascii=False)


def _drop(value: Any, parts: list[str]) -> None:
    if not parts:
        return
    head, rest = parts[0], parts[1:]
    if isinstance(value, list):
        # Lists are transparent ("messages.content" reaches every message); "*" may
        # also stand for the list index ("messages.*.content").
        for item in value:
            _drop(item, rest if head == "*" else parts)
        return
    if not isinstance(value, dict):
        return
    keys = list(value) if head == "*" else [head]
    for key in keys:
        if key not in value:
            continue
        if rest:
            _drop(value[key], rest)
        else:
            del value[key]


def clean_url(url: str) -> str:
    """The URL without secret query parameters (``key=`` ...)."""
    parts = urlsplit(url)
    if not parts.query:
        return url
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k.lower() not in SECRET_QUERY]
    return urlunsplit(parts._replace(query=urlencode(query)))


def clean_headers(headers: Iterable[tuple[str, str]], kept: Iterable[str]) -> dict[str, str]:
    keep = set(kept)
    out = {}
    for key, value in headers:
        k = key.lower()
        if k in SECRET_HEADERS or k not in keep:
            continue
        out[k] = value
    return out


@dataclass
class Interaction:
    request: dict[str, Any]
    response: dict[str, Any]
    played: bool = False
    recorded: bool = False  # recorded by this process (not read from the file)

    def fingerprint(self) -> str:
        """The interaction as canonical JSON: the same exchange recorded twice is one."""
        return json.dumps([self.request, self.response], sort_keys=True)

    def body_bytes(self) -> bytes:
        r = self.response
        if "body_base64" in r:
            return base64.b64decode(r["body_base64"])
        body: str = r.get("body", "")
        return body.encode("utf-8")

    def pieces(self) -> list[tuple[float, bytes]]:
        body = self.body_bytes()
        chunks = self.response.get("chunks")
        if not chunks:
            return [(0.0, body)] if body else []
        out, offset = [], 0
        for at, length in chunks:
            out.append((float(at), body[offset : offset + length]))
            offset += length
        if offset < len(body):
            out.append((out[-1][0] if out else 0.0, body[offset:]))
        return out


@dataclass
class Cassette:
    path: Path
    interactions: list[Interaction] = field(default_factory=list)
    notes: str = ""
    ignore_fields: tuple[str, ...] = ()
    provenance: dict[str, Any] | None = None  # where the answers came from (see the module's docstring)
    _on_disk: str | None = field(default=None, repr=False)  # the file's text as read, to see another writer

    # -- files ----------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | Path, ignore_fields: Iterable[str] = ()) -> "Cassette":
        """Read a cassette; a file that is not one is a :class:`CassetteError` naming the
        file and what is wrong with it."""
        path = Path(path)
        text = read_text(path, "a modelwire cassette")
        try:
            return cls._read(path, text, ignore_fields)
        except RecursionError:
            raise CassetteError(
                f"{path} is not a modelwire cassette it can read (its JSON is nested too deeply)"
            ) from None

    @classmethod
    def _read(cls, path: Path, text: str, ignore_fields: Iterable[str]) -> "Cassette":
        try:
            data = json.loads(text)
        except ValueError:
            hint = (
                "; a VCR.py / pytest-recording YAML cassette? convert it with: modelwire cassette import"
                if text.lstrip().startswith(("interactions:", "version:", "---"))
                else ""
            )
            raise CassetteError(f"{path} is not a modelwire cassette (not JSON){hint}") from None
        if not isinstance(data, dict):
            raise CassetteError(
                f"{path} is not a modelwire cassette (a JSON {type(data).__name__}, not an object with `interactions`)"
            )
        if data.get("version") != 1:
            raise CassetteError(
                f"{path}: unknown cassette version {data.get('version')!r} (this modelwire reads version 1)"
            )
        items = data.get("interactions", [])
        if not isinstance(items, list):
            raise CassetteError(f"{path}: `interactions` is a JSON {type(items).__name__}, not a list")
        if not isinstance(data.get("notes", ""), str):
            raise CassetteError(f"{path}: `notes` is not a string")
        provenance = data.get("provenance")
        if provenance is not None and not (
            isinstance(provenance, dict) and provenance.get("kind") in ("live", "derived")
        ):
            raise CassetteError(f"{path}: `provenance` must be an object whose kind is live or derived")
        interactions = []
        for n, item in enumerate(items):
            problem = _interaction_problem(item)
            if problem:
                raise CassetteError(f"{path}: interaction {n} {problem}")
            interactions.append(Interaction(item["request"], item["response"]))
        cassette = cls(path, interactions, data.get("notes", ""), tuple(ignore_fields), provenance)
        cassette._on_disk = text
        return cassette

    def to_json(self) -> str:
        data: dict[str, Any] = {"version": 1, "notes": self.notes}
        if self.provenance is not None:
            data["provenance"] = self.provenance
        data["interactions"] = [{"request": i.request, "response": i.response} for i in self.interactions]
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"

    def save(self, secrets: Iterable[str] = ()) -> None:
        """Write the file, unless it would hold the value of an API key or of any credential
        given in ``secrets`` (see :func:`known_secrets`), or a piece of one at least half its
        length (a server that echoes a key without its last characters).

        The write is atomic (a reader sees the old file or the new one, never half of one)
        and locked against other writers: when another process saved the same file since
        this cassette was read, the interactions recorded here are added to what it wrote
        instead of replacing it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with _locked(self.path):
            current = self.path.read_text(encoding="utf-8") if self.path.is_file() else None
            if current is not None and current != self._on_disk:
                theirs = Cassette.load(self.path, self.ignore_fields)
                mine = [i for i in self.interactions if i.recorded]
                known = {i.fingerprint() for i in theirs.interactions}
                self.interactions = theirs.interactions + [i for i in mine if i.fingerprint() not in known]
                self.notes = self.notes or theirs.notes
                self.provenance = self.provenance or theirs.provenance
            text = self.to_json()
            leaked = [s for s in {*known_secrets(), *secrets} if s and len(s) >= 8 and holds(text, s)]
            if leaked:
                shown = ", ".join(f"{s[:4]}...({len(s)} chars)" for s in leaked)
                raise CassetteSecretError(
                    f"refusing to write {self.path}: it contains the value of a credential ({shown})"
                )
            _write_atomically(self.path, text)
            self._on_disk = text

    # -- matching -------------------------------------------------------------------------

    def _key(self, request: dict[str, Any]) -> tuple[str, str, str]:
        body = request.get("json")
        if body is None:
            body = _without_boundary(request.get("body", ""))
        return request["method"].upper(), clean_url(request["url"]), canonical_json(body, self.ignore_fields)

    def find(self, request: dict[str, Any]) -> Interaction:
        """The first unplayed interaction matching ``request``; raises a readable mismatch."""
        key = self._key(request)
        for interaction in self.interactions:
            if not interaction.played and self._key(interaction.request) == key:
                interaction.played = True
                return interaction
        raise CassetteMismatchError(self._explain(request, key))

    def _explain(self, request: dict[str, Any], key: tuple[str, str, str]) -> str:
        head = f"no recorded interaction in {self.path} matches {key[0]} {key[1]}"
        candidates = [i for i in self.interactions if not i.played] or self.interactions
        if not candidates:
            return head + " (the cassette is empty)"

        def score(i: Interaction) -> float:
            other = self._key(i.request)
            return (
                (other[0] == key[0])
                + (other[1] == key[1])
                + difflib.SequenceMatcher(None, other[2], key[2]).quick_ratio()
            )

        nearest = max(candidates, key=score)
        other = self._key(nearest.request)
        diff = difflib.unified_diff(
            f"{other[0]} {other[1]}\n{other[2]}".splitlines(),
            f"{key[0]} {key[1]}\n{key[2]}".splitlines(),
            "recorded (nearest)",
            "this request",
            lineterm="",
            n=2,
        )
        return head + "\n" + "\n".join(list(diff)[:80])

    def unused(self) -> list[Interaction]:
        return [i for i in self.interactions if not i.played]

    def add(self, request: dict[str, Any], response: dict[str, Any]) -> Interaction:
        interaction = Interaction(request, response, played=True, recorded=True)
        self.interactions.append(interaction)
        return interaction


def _interaction_problem(item: Any) -> str | None:
    """What is wrong with one interaction of a cassette file, or None: every field the
    replay reads is checked here, so a damaged file is a CassetteError, never a crash later."""
    if (
        not isinstance(item, dict)
        or not isinstance(item.get("request"), dict)
        or not isinstance(item.get("response"), dict)
    ):
        return "needs a `request` and a `response` object"
    request, response = item["request"], item["response"]
    for side, record, keys in (("request", request, ("method", "url")), ("response", response, ("status",))):
        missing = [k for k in keys if k not in record]
        if missing:
            return f"has no {side} {', '.join(missing)}"
    if not isinstance(request["method"], str) or not isinstance(request["url"], str):
        return "has a request method or url that is not a string"
    if "body" in request and not isinstance(request["body"], str):
        return "has a request body that is not a string"
    status = response["status"]
    if not isinstance(status, int) or isinstance(status, bool) or not 100 <= status <= 599:
        return f"has a response status {status!r} that is not an HTTP status"
    for side, record in (("request", request), ("response", response)):
        headers = record.get("headers", {})
        if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
            return f"has {side} headers that are not an object of strings"
    return _body_problem(response)


def _body_problem(response: dict[str, Any]) -> str | None:
    """What is wrong with a recorded response's body and its pieces, or None."""
    if "body_base64" in response:
        try:
            base64.b64decode(response["body_base64"], validate=True)
        except (TypeError, ValueError):
            return "has a body_base64 that is not base64"
    elif not isinstance(response.get("body", ""), str):
        return "has a response body that is not a string"
    chunks = response.get("chunks")
    if chunks is not None and not (isinstance(chunks, list) and all(_is_piece(c) for c in chunks)):
        return "has `chunks` that are not [seconds, length] pairs"
    return None


def _is_piece(chunk: Any) -> bool:
    """One recorded piece: ``[seconds since the first, length]``."""
    return (
        isinstance(chunk, list)
        and len(chunk) == 2
        and isinstance(chunk[0], (int, float))
        and not isinstance(chunk[0], bool)
        and chunk[0] >= 0
        and isinstance(chunk[1], int)
        and not isinstance(chunk[1], bool)
        and chunk[1] >= 0
    )


def read_text(path: Path, kind: str) -> str:
    """The text of a cassette file; one that cannot be read, or is not UTF-8 text, is a
    :class:`CassetteError` saying which (``kind`` names what the file should have been)."""
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CassetteError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise CassetteError(f"{path} is not {kind} (not UTF-8 text)") from None


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on the cassette's folder while a cassette is written (POSIX ``flock``
    on the folder itself, so no lock file is left beside the cassettes; where there is none,
    writes are still atomic but not serialised)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(folder, fcntl.LOCK_UN)
    finally:
        os.close(folder)


def _write_atomically(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def known_secrets() -> set[str]:
    """The values of every credential variable modelwire knows, as set in the environment:
    each preset's API-key variables, each protocol's ``secret_envs`` (a cloud's secret key and
    session token), ``MODELWIRE_SECRETS``."""
    from ..protocols import all_presets, get_protocol, protocol_names

    names = {"MODELWIRE_SECRETS"}
    for protocol in protocol_names():
        try:
            names |= set(get_protocol(protocol).secret_envs)
        except Exception:  # noqa: BLE001 - a broken plugin must not stop a cassette's masking of the rest
            continue
    for preset in all_presets().values():
        names |= {preset.key_env} if preset.key_env else set()
        names |= set(preset.dialect.get("key_envs") or ())
    values = {os.environ.get(n, "") for n in names}
    extra = os.environ.get("MODELWIRE_SECRETS", "")
    values |= {v for v in extra.split(",") if v}
    return {v for v in values if v}


def request_record(method: str, url: str, headers: Iterable[tuple[str, str]], content: bytes) -> dict[str, Any]:
    record: dict[str, Any] = {
        "method": method.upper(),
        "url": clean_url(url),
        "headers": clean_headers(headers, KEPT_REQUEST_HEADERS),
    }
    if content:
        try:
            record["json"] = json.loads(content)
        except ValueError:
            record["body"] = content.decode("utf-8", "replace")
    return record


def response_record(
    status: int, headers: Iterable[tuple[str, str]], pieces: list[tuple[float, bytes]], keep_chunks: bool = True
) -> dict[str, Any]:
    body = b"".join(p for _, p in pieces)
    record: dict[str, Any] = {"status": status, "headers": clean_headers(headers, KEPT_RESPONSE_HEADERS)}
    try:
        record["body"] = body.decode("utf-8")
    except UnicodeDecodeError:
        record["body_base64"] = base64.b64encode(body).decode("ascii")
    if keep_chunks and len(pieces) > 1:
        record["chunks"] = [[round(at, 4), len(p)] for at, p in pieces]
    return record
