"""The value a JSON text holds so far, while it arrives in pieces (pure, no I/O).

A tool call's arguments and a structured output stream as JSON text in deltas; a UI wants
the object as it grows. Parsing every prefix again is quadratic in the text; :class:`PartialJSON`
keeps the stack of containers it is in and what it expects next, and never reads again what
it has taken, so the work is linear in the text whatever the pieces. Values that are whole in
a piece (a record of a list, a string) are read by the C scanner ``json.loads`` itself uses,
in one step, and the items of a list one after the other with only the comma between them
read in Python; a piece inside a long string costs one regular-expression search for a quote
that may end it, and the string is decoded once, when it closes. A small container waits,
and is read again for each piece that may close it: at most ``whole_under`` characters a
piece.

What the value so far shows:

- objects and arrays as far as they go: by default (but with ``partial_strings=True``, whose
  point is to show text as it comes) a container whose text so far is shorter than
  ``whole_under`` (256) characters shows once it is whole, read by the C scanner in one
  step, and a longer one shows as it goes, each entry once it is whole (a 100 KB output of
  records in 1,000 pieces costs about 2.5 ``json.loads`` of the whole, see
  ``benchmarks/partial_json.py``). A UI sees a small container at most 256 characters late.
  ``whole_under=0`` shows every container as soon as it opens; each piece then costs a
  Python step per token of it that lands inside an unfinished container, about 20 to 50
  times what ``json.loads`` spends on the same characters. A container that waits and
  cannot become JSON is refused once its closing character comes or it grows past
  ``whole_under`` (or at :meth:`PartialJSON.finish`);
- a string once it is closed; with ``partial_strings=True`` an open string shows the text
  it has so far (as Vercel's ``partialOutputStream`` does), never half an escape nor a
  high surrogate whose low half has not come, so each view is a prefix of the final
  string. Each read of :attr:`PartialJSON.value` then copies the open string;
- a number once something follows it (``12`` may become ``123``); ``true``, ``false`` and
  ``null`` once whole;
- an object key without its value is not shown.

The value grows in place: the object one read returns is the one the next piece extends
(copy one you keep). The JSON is strict (RFC 8259: no ``NaN``, no trailing comma, no
control character in a string); text that cannot become JSON raises
:class:`~modelwire.errors.PartialJSONError`, which keeps the value parsed before it and the
position of the fault in the whole text.
"""

from __future__ import annotations

import json
import json.decoder
import json.scanner
import re
from typing import TYPE_CHECKING, Any, Callable

from ..errors import PartialJSONError

if TYPE_CHECKING:
    from typing import TypedDict

    class PartialOptions(TypedDict):
        """A :class:`PartialJSON`'s options, kept to make one parser per value."""

        partial_strings: bool
        whole_under: int | None


__all__ = ["PartialJSON"]

# What the parser expects next (the containers it is in are on its stack).
_VALUE = 0  # a value (at the top, after ':' or after ',' in an array)
_ARRAY_FIRST = 1  # a value or ']' (just after '[')
_OBJECT_FIRST = 2  # a key or '}' (just after '{')
_KEY = 3  # a key (after ',' in an object)
_COLON = 4  # ':' after a key
_AFTER = 5  # ',' or the container's end after a value; only spaces once the top value is whole
_STRING = 6  # inside a string (a key or a value) that has not closed yet

_EXPECTING = {_VALUE: "a value", _ARRAY_FIRST: "a value or ']'", _OBJECT_FIRST: "a key or '}'", _KEY: "a key"}
_SPACE = re.compile(r"[ \t\n\r]*")
_NUMBERISH = re.compile(r"[-+0-9.eE]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
# A quote in a piece of a string's text that may end it: all but one with a backslash before it
# and something else before that backslash (escaped whatever came before the piece). One C search
# a piece, where counting quotes and escaped quotes was two passes and escaped backslashes a third.
_maybe_closing_quote = re.compile(r'"(?<![^\\]\\")').search  # its lookbehind sees before a start
_ITEM_GAP = re.compile(r"[ \t\n\r]*,[ \t\n\r]*(?=[\[{])")
_LITERALS = {"t": ("true", True), "f": ("false", False), "n": ("null", None)}
_CLOSER = {"{": "}", "[": "]"}


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# The C scanners json.loads uses, for the values that are whole in the text.
# typeshed leaves scanstring out of json.decoder's stub, and types make_scanner's argument as a
# make_scanner (its own TODO: a duck type of the decoder's attributes, which JSONDecoder has).
_scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
_scan_once = json.scanner.make_scanner(json.JSONDecoder(parse_constant=_refuse_constant))  # type: ignore[arg-type]


class PartialJSON:
    """An incremental JSON parser: :meth:`feed` it the text in pieces; :attr:`value` is the
    value parsed so far, :meth:`finish` the whole one.

    >>> p = PartialJSON(whole_under=0)  # every container as it opens
    >>> p.feed('{"city": "Par')
    True
    >>> p.value
    {}
    >>> p.feed('is", "days": [1, 2')
    True
    >>> p.value
    {'city': 'Paris', 'days': [1]}
    >>> p.feed("]}")
    True
    >>> p.finish()
    {'city': 'Paris', 'days': [1, 2]}
    >>> small = PartialJSON()  # by default: under 256 characters, once whole
    >>> small.feed('{"city": "Paris", "days": [1')
    False
    >>> small.feed(", 2]}"), small.value
    (True, {'city': 'Paris', 'days': [1, 2]})
    """

    __slots__ = (
        "partial_strings",
        "whole_under",
        "_buf",
        "_offset",
        "_state",
        "_stack",
        "_key",
        "_in_key",
        "_raw",
        "_taken",
        "_shown",
        "_shown_live",
        "_waiting",
        "_root",
        "_has_value",
        "_changed",
        "_failed",
    )

    def __init__(self, *, partial_strings: bool = False, whole_under: int | None = None) -> None:
        self.partial_strings: bool = partial_strings
        """Whether an open string shows the text it has so far (else only closed strings show)."""
        if whole_under is None:  # an open string shows as it grows only in a container that shows
            whole_under = 0 if partial_strings else 256
        self.whole_under: int = whole_under
        """A container whose text so far is shorter than this shows once it is whole."""
        self._buf = ""  # text not consumed yet: an unfinished number, literal, escape or small container
        self._offset = 0  # where _buf starts in the whole text (for error positions)
        self._state = _VALUE
        self._stack: list[Any] = []  # the open containers, outermost first
        self._key: str | None = None  # the key whose value comes next in the innermost object
        self._in_key = False  # the open string is a key
        self._raw: list[str] = []  # the open string's text not decoded yet (escapes as written)
        self._taken: list[str] = []  # pieces of it taken whole, not counted in _offset yet (see feed)
        self._shown: list[str] = []  # the open string's text decoded so far (partial_strings)
        self._shown_live = False  # the open string shows as it comes (a value, with partial_strings)
        self._waiting = ""  # a character no piece can change the value without (see feed)
        self._root: Any = None
        self._has_value = False
        self._changed = False
        self._failed: PartialJSONError | None = None

    # -- the public surface ---------------------------------------------------------------------

    @property
    def has_value(self) -> bool:
        """Whether anything shows yet (``value`` is ``None`` before, as JSON ``null`` also is)."""
        return self._has_value

    @property
    def value(self) -> Any:
        """The value parsed so far (``None`` before anything shows: see :attr:`has_value`)."""
        if self._shown:
            self._put_open_string("".join(self._shown))
        return self._root

    @property
    def empty(self) -> bool:
        """Whether nothing but spaces has come (a tool call without arguments sends ``""``)."""
        return self._state == _VALUE and not self._has_value and not self._buf.strip(" \t\n\r")

    @property
    def done(self) -> bool:
        """Whether the text so far holds one whole value (but a number at the very end,
        which only :meth:`finish` knows has ended)."""
        return self._state == _AFTER and not self._stack

    def feed(self, text: str) -> bool:
        """Take the next piece of the text; whether the value parsed so far changed."""
        waiting = self._waiting
        if waiting == '"':  # an open string: a piece whose every quote is escaped is all text
            quote = _maybe_closing_quote(text)
            if quote is not None and not self._shown_live:
                quote = self._past_escaped_quotes(text, quote)
            if quote is None:
                if self._shown_live:
                    self._offset += len(text)
                    return self._take_string_text(text)
                self._taken.append(text)  # decoded once, when the string closes
                return False
            self._count_taken()
            text = self._escaping_backslash() + text
        elif waiting:  # a small container: nothing changes before its closing character comes
            if waiting not in text:
                if len(self._buf) + len(text) < self.whole_under:
                    self._buf += text
                    return False
            elif self._stack and type(self._stack[-1]) is list:
                return self._list_items(self._buf + text)
        elif self._failed is not None:
            raise self._failed
        self._waiting = ""
        self._buf = self._buf + text if self._buf else text
        self._changed = False
        self._parse()
        return self._changed

    def finish(self) -> Any:
        """The whole value, once the text has ended; :class:`PartialJSONError` if the text
        is not one whole JSON value."""
        if self._failed is not None:
            raise self._failed
        if self._buf.strip(" \t\n\r"):
            self._parse(final=True)
        if not self.done:
            if self._state == _STRING:
                self._count_taken()
                what = "the text ends inside a string"
            elif self._stack:
                what = "the text ends inside an unclosed " + ("object" if type(self._stack[-1]) is dict else "array")
            else:
                what = "the text holds no value"
            raise self._fail(what, len(self._buf))
        return self._root

    # -- parsing --------------------------------------------------------------------------------

    def _fail(self, message: str, pos: int) -> PartialJSONError:
        at = self._offset + pos
        self._waiting = ""
        self._failed = PartialJSONError(f"{message} (at character {at})", position=at, value=self._root)
        return self._failed

    def _parse(self, final: bool = False) -> None:
        buf = self._buf
        n = len(buf)
        pos = 0
        while pos < n:
            state = self._state
            if state == _STRING:
                pos = self._string_text(buf, pos)
                if pos < 0:  # a backslash at the very end: what it escapes comes next
                    pos = -pos - 1
                    break
                continue
            c = buf[pos]
            if c in " \n\t\r":
                pos += 1
                if pos < n and buf[pos] in " \n\t\r":
                    pos = _SPACE.match(buf, pos).end()  # type: ignore[union-attr]
            elif state == _AFTER:
                if c == "," and self._stack:
                    self._state = _KEY if type(self._stack[-1]) is dict else _VALUE
                    pos += 1
                    if pos < n and buf[pos] == " ":  # ", " between entries, as json.dumps writes
                        pos += 1
                else:
                    pos = self._after(c, pos)
            elif state == _VALUE or state == _ARRAY_FIRST:
                if c == "]" and state == _ARRAY_FIRST:
                    pos = self._close(c, pos)
                    continue
                if c == "{" or c == "[":  # the most frequent value of a long text: one call less
                    end = self._container(buf, pos, c, final)
                else:
                    end = self._value(buf, pos, c, final)
                if end < 0:  # unfinished: wait for more
                    break
                pos = end
            else:
                pos = self._object_part(buf, pos, c, state)
        self._offset += pos
        self._buf = buf[pos:]

    def _object_part(self, buf: str, pos: int, c: str, state: int) -> int:
        """A key, the colon after it, or the end of an empty object."""
        if state == _COLON:
            if c != ":":
                raise self._fail(f"expected ':' after a key, got {c!r}", pos)
            self._state = _VALUE
            return pos + 1
        if c == '"':
            return self._key_string(buf, pos)
        if c == "}" and state == _OBJECT_FIRST:
            return self._close(c, pos)
        raise self._fail(f"expected {_EXPECTING[state]}, got {c!r}", pos)

    def _after(self, c: str, pos: int) -> int:
        stack = self._stack
        if not stack:
            raise self._fail(f"extra text after the value: {c!r}", pos)
        if c == ",":
            self._state = _KEY if type(stack[-1]) is dict else _VALUE
            return pos + 1
        return self._close(c, pos)

    def _close(self, c: str, pos: int) -> int:
        closer = "}" if type(self._stack[-1]) is dict else "]"
        if c != closer:
            raise self._fail(f"expected ',' or {closer!r}, got {c!r}", pos)
        self._stack.pop()
        self._state = _AFTER
        return pos + 1

    def _attach(self, value: Any) -> None:
        stack = self._stack
        if not stack:
            self._root = value
            self._has_value = True
        elif type(stack[-1]) is dict:
            stack[-1][self._key] = value
        else:
            stack[-1].append(value)
        self._changed = True
        self._state = _AFTER

    def _value(self, buf: str, pos: int, c: str, final: bool) -> int:
        """Read the value at ``pos``: where the text goes on after it, or -1 to wait for more."""
        if c == "{" or c == "[":
            return self._container(buf, pos, c, final)
        if c == '"':
            try:
                text, end = _scanstring(buf, pos + 1)
            except ValueError:  # not closed yet (or not valid: read piece by piece, that says where)
                return self._open_string(pos)
            self._attach(text)
            return end
        if c == "-" or "0" <= c <= "9":
            end = _NUMBERISH.match(buf, pos).end()  # type: ignore[union-attr]
            if end == len(buf) and not final:
                return -1  # it may go on in the next piece
            text = buf[pos:end]
            if _NUMBER.fullmatch(text) is None:
                raise self._fail(f"not a JSON number: {text!r}", pos)
            self._attach(float(text) if "." in text or "e" in text or "E" in text else int(text))
            return end
        literal = _LITERALS.get(c)
        if literal is not None:
            word, value = literal
            if buf.startswith(word, pos):
                self._attach(value)
                return pos + len(word)
            if not final and word.startswith(buf[pos:]):
                return -1
        raise self._fail(f"expected {_EXPECTING.get(self._state, 'a value')}, got {c!r}", pos)

    def _list_items(self, buf: str) -> bool:
        """A list's small item that waited for its closing character, and the items after it:
        each read whole by the C scanner, with only the comma between them read in Python (a
        long list of records: most pieces end one and begin the next). Anything else (the
        list's end, an item too long to wait for or not JSON) goes on in :meth:`_parse`."""
        items = self._stack[-1]
        pos = 0
        while True:
            try:
                item, end = _scan_once(buf, pos)
            except StopIteration as exc:
                return self._item_not_whole(buf, pos, exc.value)
            except ValueError as exc:
                return self._item_not_whole(buf, pos, getattr(exc, "pos", 0))
            items.append(item)
            if buf.startswith(", {", end):  # as json.dumps writes them
                pos = end + 2
                closer = "}"
            else:
                gap = _ITEM_GAP.match(buf, end)  # a comma and the next item's opening
                if gap is None:
                    self._state = _AFTER
                    return self._resume(buf, end, True)
                pos = gap.end()
                closer = _CLOSER[buf[pos]]
            if buf.find(closer, pos) < 0:
                self._state = _VALUE
                if len(buf) - pos >= self.whole_under:
                    return self._resume(buf, pos, True)
                self._waiting = closer
                self._offset += pos
                self._buf = buf[pos:]
                return True

    def _item_not_whole(self, buf: str, pos: int, at: int) -> bool:
        """The item at ``pos`` is not whole: it waits if small and may become JSON, else is read in _parse."""
        if at >= len(buf) and len(buf) - pos < self.whole_under:
            if pos:
                self._state = _VALUE
                self._waiting = _CLOSER[buf[pos]]
            self._offset += pos
            self._buf = buf[pos:]
            return pos > 0  # an item before it came whole
        return self._resume(buf, pos, pos > 0)

    def _resume(self, buf: str, pos: int, grew: bool) -> bool:
        self._waiting = ""
        self._offset += pos
        self._buf = buf[pos:]
        self._changed = grew
        self._parse()
        return self._changed

    def _container(self, buf: str, pos: int, c: str, final: bool) -> int:
        """A container at ``pos``: read whole if it is, waited for if it is small, else opened."""
        closer = _CLOSER[c]
        small = len(buf) - pos < self.whole_under and not final
        if buf.find(closer, pos) >= 0:
            try:
                whole, end = _scan_once(buf, pos)
            except StopIteration as exc:  # not whole yet, or not valid before the end of the text:
                small = small and exc.value >= len(buf)  # then read piece by piece, that says where
            except ValueError as exc:
                small = small and getattr(exc, "pos", 0) >= len(buf)
            else:
                self._attach(whole)
                return end
        if small:
            self._waiting = closer
            return -1
        container: Any = {} if c == "{" else []
        self._attach(container)
        self._stack.append(container)
        self._state = _OBJECT_FIRST if c == "{" else _ARRAY_FIRST
        return pos + 1

    # -- strings --------------------------------------------------------------------------------

    def _key_string(self, buf: str, pos: int) -> int:
        try:
            self._key, end = _scanstring(buf, pos + 1)
        except ValueError:
            self._in_key = True
            self._shown_live = False
            self._state = _STRING
            return pos + 1
        self._state = _COLON
        return end

    def _open_string(self, pos: int) -> int:
        self._in_key = False
        self._shown_live = self.partial_strings
        if self.partial_strings:
            self._attach("")  # the slot its text so far shows in
        self._state = _STRING
        return pos + 1

    def _string_text(self, buf: str, pos: int) -> int:
        """The open string's text from ``pos``: up to its closing quote (where the text goes
        on after it), or all of it (``-(end + 1)``)."""
        quote = _closing_quote(buf, pos)
        if quote < 0:
            self._waiting = '"'
            self._changed |= self._take_string_text(buf[pos:])
            return -len(buf) - 1
        self._raw.append(buf[pos:quote])
        self._close_string(quote)
        return quote + 1

    def _escaping_backslash(self) -> str:
        """The backslash the open string's text so far ends with, taken back from it if it
        escapes the next character (a piece with a quote is read in :meth:`_parse`, which
        needs it; a run of backslashes may span pieces). A piece with no quote that may end
        the string never needs it: a quote at its start or after one backslash there is read
        as one that may (see ``_maybe_closing_quote``)."""
        raw = self._raw
        while raw and not raw[-1]:
            raw.pop()
        run = 0
        for piece in reversed(raw):
            kept = piece.rstrip("\\")
            run += len(piece) - len(kept)
            if kept:
                break
        if run % 2 == 0:
            return ""
        raw[-1] = raw[-1][:-1]
        self._offset -= 1
        return "\\"

    def _past_escaped_quotes(self, text: str, quote: re.Match[str] | None) -> re.Match[str] | None:
        """The first quote from ``quote`` on that may end a hidden string, the backslashes
        before it counted (with the ones the pieces taken whole end with, when the run starts
        this piece): a piece that begins with an escaped quote is still all text."""
        while quote is not None:
            at = quote.start()
            run = at - len(text[:at].rstrip("\\"))
            if run == at:  # the run may go on in the text before this piece
                last = self._taken[-1] if self._taken else ""
                kept = last.rstrip("\\")
                if not kept:
                    return quote  # not known here: read in _parse, which counts it all
                run += len(last) - len(kept)
            if run % 2 == 0:
                return quote
            quote = _maybe_closing_quote(text, at + 1)
        return None

    def _count_taken(self) -> None:
        """Count the pieces a hidden string took whole (kept apart until needed) in ``_offset``."""
        taken = self._taken
        if taken:
            self._offset += sum(map(len, taken))
            self._raw += taken
            taken.clear()

    def _take_string_text(self, text: str) -> bool:
        """Keep a piece of the open string's text; whether the value shows more of it."""
        if not text:
            return False
        self._raw.append(text)
        if not self.partial_strings or self._in_key:
            return False
        before = len(self._shown)
        self._decode_shown(end=False, at=len(self._buf))
        return len(self._shown) > before

    def _decode_shown(self, end: bool, at: int) -> None:
        """Decode the open string's text kept so far onto ``_shown``: all of it at its end,
        else all but half an escape or a high surrogate whose low half has not come (either
        would not be a prefix of the final string). The rest stays in ``_raw``. The text
        kept so far ends at ``at`` in ``_buf`` (a fault's position is counted from there)."""
        raw = "".join(self._raw)
        self._raw = []
        whole = end or ("\\" not in raw[-12:] and not "\ud800" <= raw[-1:] <= "\udbff")
        cuts = [len(raw)] if whole else range(len(raw), max(-1, len(raw) - 13), -1)
        for cut in cuts:
            try:
                text = _scanstring(raw[:cut] + '"', 0)[0]
            except ValueError:
                continue
            if text and "\ud800" <= text[-1] <= "\udbff" and not end:
                continue
            if text:
                self._shown.append(text)
            if cut < len(raw):
                self._raw.append(raw[cut:])
            return
        self._raw.append(raw)  # nothing can show yet
        try:
            _scanstring(raw + '"', 0)
        except ValueError as exc:
            at += getattr(exc, "pos", len(raw)) - len(raw)
            raise self._fail(f"not a valid JSON string: {getattr(exc, 'msg', exc)}", at) from None

    def _close_string(self, pos: int) -> None:
        grew = False
        if self.partial_strings and not self._in_key:
            before = len(self._shown)
            self._decode_shown(end=True, at=pos)  # what was held back (half an escape) shows now
            grew = len(self._shown) > before
            text = "".join(self._shown)
        else:
            self._raw.append('"')  # its closing quote, for the decoder
            raw = "".join(self._raw)
            try:
                text = _scanstring(raw, 0)[0]
            except ValueError as exc:
                at = pos + getattr(exc, "pos", 0) - len(raw) + 1  # the text ends at its closing quote
                raise self._fail(f"not a valid JSON string: {getattr(exc, 'msg', exc)}", at) from None
        self._raw = []
        self._shown = []
        if self._in_key:
            self._key = text
            self._state = _COLON
        elif self.partial_strings:
            self._put_open_string(text)
            self._changed |= grew
            self._state = _AFTER
        else:
            self._attach(text)

    def _put_open_string(self, text: str) -> None:
        stack = self._stack
        if not stack:
            self._root = text
        elif type(stack[-1]) is dict:
            stack[-1][self._key] = text
        else:
            stack[-1][-1] = text


def _closing_quote(text: str, pos: int) -> int:
    """Where the first quote from ``pos`` that no backslash escapes is, or -1."""
    quote = text.find('"', pos)
    while quote >= 0:
        start = quote
        while start > pos and text[start - 1] == "\\":
            start -= 1
        if (quote - start) % 2 == 0:
            return quote
        quote = text.find('"', quote + 1)
    return -1
