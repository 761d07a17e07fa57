// Folding modelwire events into messages in JavaScript: the semantics of Python's
// `Msg.append_event`, on the JSON forms (`Msg.to_dict()`, `event_to_json`).
//
// Messages and events are plain objects, exactly as JSON.parse gives them. The same
// events give the same message JSON as in Python (tests/test_js_fold.py checks this on
// every stream the Python tests produce); the same mistakes raise the same errors
// (EventApplyError, RoleError), and an event that cannot be applied leaves the message
// as it was. Cost is linear in the size of the deltas: blocks are found through an
// index kept per message, strings grow by appending, and base64 pieces are re-encoded
// only across a padded boundary (the last quantum, never the whole string).
//
// No dependencies; runs in browsers and in Node (atob/btoa are globals in both).

export class EventApplyError extends Error {
  constructor(event, reason) {
    const type = event && typeof event === "object" && typeof event.type === "string" ? event.type : typeof event;
    super(`cannot apply ${type} event: ${reason}`);
    this.name = "EventApplyError";
    this.event = event;
    this.reason = reason;
  }
}

export class RoleError extends Error {
  constructor(role, blockType, where = "") {
    const loc = where ? ` (${where})` : "";
    super(`a ${repr(role)} message cannot hold a ${repr(blockType)} block${loc}; ${ROLE_HELP[role] ?? ""}`);
    this.name = "RoleError";
    this.role = role;
    this.blockType = blockType;
    this.where = where;
  }
}

const ROLE_HELP = {
  user: "user messages take only 'text' and 'data' blocks",
  system: "system messages take only 'text' blocks",
  assistant: "assistant messages take every block type",
};
const ALLOWED = { user: new Set(["text", "data"]), system: new Set(["text"]) };

// A block's own fields: provider extras ride beside them and never replace one.
const FIELDS = {
  text: ["type", "text", "id", "created_at", "finished_at"],
  thinking: ["type", "thinking", "id", "created_at", "finished_at"],
  data: ["type", "id", "source", "name", "created_at", "finished_at"],
  tool_call: ["type", "id", "name", "input", "state", "suggested_rules", "created_at", "finished_at"],
};
const INDEXED = new Set(["text", "thinking", "data", "tool_call", "tool_result"]);

function repr(value) {
  return `'${String(value).replaceAll("\\", "\\\\").replaceAll("'", "\\'")}'`;
}

function clone(value) {
  return value === null || value === undefined ? value : structuredClone(value);
}

// -- the per-message index -----------------------------------------------------------------

const indexes = new WeakMap();

function buildIndex(msg) {
  const index = new Map();
  msg.content.forEach((block, pos) => {
    const key = `${block.type}\u0000${block.id}`;
    if (INDEXED.has(block.type) && !index.has(key)) index.set(key, { block, pos });
  });
  indexes.set(msg, index);
  return index;
}

// The block of this kind and id (the first one, as a scan would find), or undefined.
// An entry is trusted while the block still sits where it was seen, so edits made to
// the content between events cost one rebuild, not a wrong answer.
function find(msg, kind, id) {
  const key = `${kind}\u0000${id}`;
  let index = indexes.get(msg) ?? buildIndex(msg);
  let hit = index.get(key);
  if (hit === undefined || msg.content[hit.pos] !== hit.block) {
    index = buildIndex(msg);
    hit = index.get(key);
  }
  return hit?.block;
}

function appendBlock(msg, block) {
  const allowed = ALLOWED[msg.role];
  if (allowed !== undefined && !allowed.has(block.type)) {
    throw new RoleError(msg.role, block.type, `content[${msg.content.length}]`);
  }
  msg.content.push(block);
  const index = indexes.get(msg);
  const key = `${block.type}\u0000${block.id}`;
  if (index !== undefined && INDEXED.has(block.type) && !index.has(key)) {
    index.set(key, { block, pos: msg.content.length - 1 });
  }
}

function missing(event, kind, id, msg) {
  return new EventApplyError(event, `no ${kind} with id ${repr(id)} in message ${repr(msg.id)} (was its START folded?)`);
}

function checkExtras(event, block) {
  const extras = event.extras;
  if (!extras) return;
  const own = FIELDS[block.type] ?? [];
  const clash = Object.keys(extras).filter((key) => own.includes(key));
  if (clash.length) {
    throw new EventApplyError(event, `its extras would overwrite the block's own field(s) [${clash.map(repr).join(", ")}]`);
  }
}

function setExtras(block, extras) {
  if (extras && FIELDS[block.type]) Object.assign(block, clone(extras));
}

// Base64 sources being streamed into: the canonical unpadded prefix, and the 0-2 bytes
// of the last, padded quantum still waiting for more. Pieces are joined as text while
// none is padded; after a padded piece only its last quantum is decoded and re-encoded
// with what follows, which gives the same string as decoding everything and encoding it
// once. Strings only ever grow at the end, so appending stays linear.
const base64States = new WeakMap();

function appendBase64(source, piece) {
  let state = base64States.get(source);
  if (state === undefined || state.written !== source.data) {
    const data = source.data;
    state = data.endsWith("=") ? { prefix: data.slice(0, -4), pending: atob(data.slice(-4)) } : { prefix: data, pending: "" };
    base64States.set(source, state);
  }
  if (state.pending === "" && !piece.endsWith("=")) {
    state.prefix += piece;
  } else {
    const bytes = state.pending + atob(piece);
    const whole = bytes.length - (bytes.length % 3);
    state.prefix += btoa(bytes.slice(0, whole));
    state.pending = bytes.slice(whole);
  }
  state.written = source.data = state.pending ? state.prefix + btoa(state.pending) : state.prefix;
}

// -- usage and cost ------------------------------------------------------------------------

const USAGE_KEYS = ["input_tokens", "output_tokens", "cache_input_tokens", "cache_creation_input_tokens", "reasoning_tokens"];

function round12(x) {
  return Number(x.toFixed(12));
}

export function addCosts(total, call) {
  const out = total
    ? { ...total }
    : { currency: call.currency ?? "USD", total: null, input: null, output: null, calls: 0, unpriced: [] };
  out.calls = (out.calls ?? 0) + 1;
  if (call.total === null || call.total === undefined) {
    out.unpriced = [...(out.unpriced ?? []), call.unknown || "no price"];
  } else {
    for (const key of ["total", "input", "output"]) {
      if (call[key] !== null && call[key] !== undefined) out[key] = round12((out[key] ?? 0) + call[key]);
    }
  }
  if (call.source) out.source = call.source;
  out.complete = !(out.unpriced && out.unpriced.length);
  return out;
}

// -- handlers ------------------------------------------------------------------------------

function ignore() {}

function replyEnd(msg, ev) {
  msg.finished_at = ev.created_at;
  msg.finished_reason = ev.finished_reason ?? "completed";
  msg.error = ev.error ? clone(ev.error) : null;
  if (ev.structured_output !== null && ev.structured_output !== undefined) msg.structured_output = clone(ev.structured_output);
}

function modelCallEnd(msg, ev) {
  if (msg.usage === null || msg.usage === undefined) {
    msg.usage = Object.fromEntries(USAGE_KEYS.map((k) => [k, ev[k] ?? 0]));
  } else {
    for (const k of USAGE_KEYS) msg.usage[k] += ev[k] ?? 0;
  }
  if (ev.cost !== null && ev.cost !== undefined) msg.cost = addCosts(msg.cost, ev.cost);
}

function streamed(kind, attr, label, idField) {
  const delta = (msg, ev) => {
    const block = find(msg, kind, ev[idField]);
    if (block === undefined) throw missing(ev, label, ev[idField], msg);
    block[attr] += ev.delta;
  };
  const end = (msg, ev) => {
    const block = find(msg, kind, ev[idField]);
    if (block === undefined) throw missing(ev, label, ev[idField], msg);
    checkExtras(ev, block);
    if (kind === "text" && ev.text !== null && ev.text !== undefined) block.text = ev.text;
    block.finished_at = ev.created_at;
    setExtras(block, ev.extras);
  };
  return [delta, end];
}

const [textDelta, textEnd] = streamed("text", "text", "text block", "block_id");
const [thinkingDelta, thinkingEnd] = streamed("thinking", "thinking", "thinking block", "block_id");
const [toolCallDelta, toolCallEnd] = streamed("tool_call", "input", "tool call", "tool_call_id");

function textBlock(id, text, createdAt) {
  return { type: "text", text, id, created_at: createdAt, finished_at: null };
}

function dataStart(msg, ev) {
  appendBlock(msg, {
    type: "data",
    id: ev.block_id,
    source: { type: "base64", data: "", media_type: ev.media_type },
    name: ev.name ?? null,
    created_at: ev.created_at,
    finished_at: null,
  });
}

function dataDelta(msg, ev) {
  const block = find(msg, "data", ev.block_id);
  if (block === undefined) throw missing(ev, "data block", ev.block_id, msg);
  if (ev.url) {
    // A URL is the whole content: it replaces the (empty) inline source.
    block.source = { type: "url", url: ev.url, media_type: ev.media_type };
    return;
  }
  const source = block.source;
  if (source.type !== "base64") {
    throw new EventApplyError(ev, `data block ${repr(ev.block_id)} already holds a URL; base64 data cannot follow it`);
  }
  appendBase64(source, ev.data);
}

function dataEnd(msg, ev) {
  const block = find(msg, "data", ev.block_id);
  if (block === undefined) throw missing(ev, "data block", ev.block_id, msg);
  checkExtras(ev, block);
  block.finished_at = ev.created_at;
  setExtras(block, ev.extras);
}

function hint(msg, ev) {
  appendBlock(msg, {
    type: "hint",
    hint: typeof ev.hint === "string" ? ev.hint : clone(ev.hint),
    id: ev.block_id,
    source: ev.source ?? null,
    created_at: ev.created_at,
    finished_at: ev.created_at,
  });
}

function toolCallStart(msg, ev) {
  appendBlock(msg, {
    type: "tool_call",
    id: ev.tool_call_id,
    name: ev.tool_call_name,
    input: "",
    state: "pending",
    suggested_rules: [],
    created_at: ev.created_at,
    finished_at: null,
  });
}

function toolResultStart(msg, ev) {
  appendBlock(msg, {
    type: "tool_result",
    id: ev.tool_call_id,
    name: ev.tool_call_name,
    output: [],
    state: "running",
    metadata: {},
    created_at: ev.created_at,
    finished_at: null,
  });
}

function result(msg, ev) {
  const block = find(msg, "tool_result", ev.tool_call_id);
  if (block === undefined) throw missing(ev, "tool result", ev.tool_call_id, msg);
  if (typeof block.output === "string") {
    block.output = block.output ? [textBlock(`${block.id}.0`, block.output, block.created_at)] : [];
  }
  return block;
}

function toolResultText(msg, ev) {
  const block = result(msg, ev);
  const output = block.output;
  let last = output[output.length - 1];
  if (last === undefined || last.type !== "text") {
    // As AgentScope folds it, an empty piece starts a text part too. Id and time come
    // from the result block, so the same events build the same block however their
    // deltas were split.
    last = textBlock(`${block.id}.${output.length}`, "", block.created_at);
    output.push(last);
  }
  last.text += ev.delta;
}

function toolResultData(msg, ev) {
  const block = result(msg, ev);
  if (ev.data !== null && ev.data !== undefined) {
    const target = block.output.find((o) => o.type === "data" && o.id === ev.block_id && o.source.type === "base64");
    if (target !== undefined) {
      appendBase64(target.source, ev.data);
      if (ev.media_type) target.source.media_type = ev.media_type;
      return;
    }
  }
  const source =
    ev.data !== null && ev.data !== undefined
      ? { type: "base64", data: ev.data, media_type: ev.media_type }
      : { type: "url", url: ev.url, media_type: ev.media_type };
  block.output.push({ type: "data", id: ev.block_id, source, name: null, created_at: block.created_at, finished_at: null });
}

function toolResultEnd(msg, ev) {
  const block = find(msg, "tool_result", ev.tool_call_id);
  if (block === undefined) throw missing(ev, "tool result", ev.tool_call_id, msg);
  block.state = ev.state;
  block.metadata = clone(ev.metadata ?? {});
  block.finished_at = ev.created_at;
  const call = find(msg, "tool_call", ev.tool_call_id);
  if (call !== undefined) call.state = "finished";
}

function calls(msg, ev, ids) {
  return ids.map((id) => {
    const call = find(msg, "tool_call", id);
    if (call === undefined) throw missing(ev, "tool call", id, msg);
    return call;
  });
}

function requireConfirm(msg, ev) {
  const found = calls(msg, ev, ev.tool_calls.map((tc) => tc.id));
  found.forEach((call, i) => {
    call.state = "asking";
    call.suggested_rules = clone(ev.tool_calls[i].suggested_rules ?? []);
  });
}

function confirmResult(msg, ev) {
  const found = calls(msg, ev, ev.confirm_results.map((r) => r.tool_call.id));
  found.forEach((call, i) => {
    // Only calls still asking move; a late answer (after an interrupt) is stale.
    if (call.state === "asking") call.state = ev.confirm_results[i].confirmed ? "allowed" : "finished";
  });
}

function requireExternal(msg, ev) {
  for (const call of calls(msg, ev, ev.tool_calls.map((tc) => tc.id))) call.state = "submitted";
}

function externalResult(msg, ev) {
  for (const res of ev.execution_results) {
    if (find(msg, "tool_result", res.id) !== undefined) continue; // already answered
    const block = clone(res);
    if (block.finished_at === null || block.finished_at === undefined) block.finished_at = ev.created_at;
    appendBlock(msg, block);
    // The call keeps its state ("submitted"), as AgentScope's append_event does.
  }
}

const HANDLERS = {
  REPLY_START: ignore,
  REPLY_END: replyEnd,
  MODEL_CALL_START: ignore,
  MODEL_CALL_END: modelCallEnd,
  TEXT_BLOCK_START: (msg, ev) => appendBlock(msg, textBlock(ev.block_id, "", ev.created_at)),
  TEXT_BLOCK_DELTA: textDelta,
  TEXT_BLOCK_END: textEnd,
  THINKING_BLOCK_START: (msg, ev) =>
    appendBlock(msg, { type: "thinking", thinking: "", id: ev.block_id, created_at: ev.created_at, finished_at: null }),
  THINKING_BLOCK_DELTA: thinkingDelta,
  THINKING_BLOCK_END: thinkingEnd,
  DATA_BLOCK_START: dataStart,
  DATA_BLOCK_DELTA: dataDelta,
  DATA_BLOCK_END: dataEnd,
  HINT_BLOCK: hint,
  TOOL_CALL_START: toolCallStart,
  TOOL_CALL_DELTA: toolCallDelta,
  TOOL_CALL_END: toolCallEnd,
  TOOL_RESULT_START: toolResultStart,
  TOOL_RESULT_TEXT_DELTA: toolResultText,
  TOOL_RESULT_DATA_DELTA: toolResultData,
  TOOL_RESULT_END: toolResultEnd,
  REQUIRE_USER_CONFIRM: requireConfirm,
  USER_CONFIRM_RESULT: confirmResult,
  REQUIRE_EXTERNAL_EXECUTION: requireExternal,
  EXTERNAL_EXECUTION_RESULT: externalResult,
  USER_INTERRUPT: ignore,
  EXCEED_MAX_ITERS: ignore,
};

/** Folds one event (a parsed JSON object) into `msg` (a message JSON object), in place. */
export function appendEvent(msg, event) {
  if (event === null || typeof event !== "object" || typeof event.type !== "string") {
    throw new EventApplyError(event, typeof event === "string" ? "not an event; parse it first with JSON.parse" : "not an event");
  }
  const handler = HANDLERS[event.type];
  if (handler === undefined) {
    if (event.type === "CUSTOM") return msg;
    throw new EventApplyError(event, `unknown event type ${repr(event.type)}`);
  }
  if (event.reply_id !== msg.id) {
    throw new EventApplyError(event, `its reply_id ${repr(event.reply_id)} is not this message's id ${repr(msg.id)}`);
  }
  handler(msg, event);
  return msg;
}

/** A new, empty message for the reply a REPLY_START event opens. */
export function messageFor(replyStart) {
  return {
    name: replyStart.name,
    content: [],
    role: replyStart.role ?? "assistant",
    id: replyStart.reply_id,
    metadata: {},
    created_at: replyStart.created_at,
    usage: null,
    finished_at: null,
    finished_reason: null,
    structured_output: null,
    error: null,
    cost: null,
  };
}

/** The server ended the stream with an `event: error` (a failure outside the reply). */
export class ServerError extends Error {
  constructor(message, events) {
    super(message);
    this.name = "ServerError";
    this.events = events; // the events completed before it, in the same piece: nothing is lost
  }
}

/**
 * Parses a server-sent event stream of modelwire events, piece by piece: feed it text
 * (or bytes) as it arrives, get back the events completed so far. An `event: error`
 * raises ServerError.
 */
export class EventStreamParser {
  #buffer = "";
  #data = [];
  #event = "";
  #id = null;
  #decoder = new TextDecoder();
  /** The `id:` of the last event given out: what a reconnect sends as `Last-Event-ID`. */
  lastEventId = "";

  /** Drop a frame cut off by a lost connection (the server sends it again whole). */
  reset() {
    this.#buffer = "";
    this.#data = [];
    this.#event = "";
    this.#id = null;
    this.#decoder = new TextDecoder();
  }

  feed(chunk) {
    const text = this.#buffer + (typeof chunk === "string" ? chunk : this.#decoder.decode(chunk, { stream: true }));
    const events = [];
    const newline = /\r\n|\r|\n/g;
    let start = 0;
    let match;
    while ((match = newline.exec(text)) !== null) {
      if (match[0] === "\r" && match.index + 1 === text.length) break; // may be the first half of CRLF
      const line = text.slice(start, match.index);
      start = match.index + match[0].length;
      if (line === "") {
        const [name, data] = [this.#event, this.#data];
        this.#event = "";
        this.#data = [];
        if (this.#id !== null) this.lastEventId = this.#id;
        this.#id = null;
        if (!data.length) continue;
        const payload = JSON.parse(data.join("\n"));
        if (name === "error") {
          this.#buffer = text.slice(start);
          throw new ServerError(payload.message ?? JSON.stringify(payload), events);
        }
        events.push(payload);
      } else if (line.startsWith("data:")) {
        this.#data.push(line.slice(line[5] === " " ? 6 : 5));
      } else if (line.startsWith("event:")) {
        this.#event = line.slice(line[6] === " " ? 7 : 6);
      } else if (line.startsWith("id:")) {
        this.#id = line.slice(line[3] === " " ? 4 : 3);
      }
    }
    this.#buffer = text.slice(start);
    return events;
  }
}

/**
 * One reply from a modelwire server, event by event, taken up again by itself when the
 * connection is lost: it keeps the resume token the server sends (a `CUSTOM` event
 * `modelwire.resume`, passed on like the others) and the last event id, and reconnects
 * with `GET url`, `Last-Event-ID` and `x-modelwire-resume-token`, up to `retries` times,
 * so no event is missed or repeated. `signal` stops reading (a user's Stop should also
 * post an interrupt with the token: the server then ends the reply at once).
 */
export async function* readReply(url, { body, headers = {}, signal, retries = 5, delay = 250, resumeToken = null, fetch: fetchImpl = globalThis.fetch } = {}) {
  const parser = new EventStreamParser();
  let token = resumeToken;
  const takeUp = () => fetchImpl(url, { method: "GET", headers: { ...headers, "last-event-id": parser.lastEventId || "0", "x-modelwire-resume-token": token }, signal });
  // With `resumeToken` (a page reloaded in the middle of a reply): the reply from its start.
  let response = token !== null ? await takeUp() : await fetchImpl(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body), signal });
  for (let attempt = 0; ; ) {
    if (response.status === 204) return; // nothing (any more) to take up
    if (!response.ok) throw new Error((await response.json().catch(() => ({}))).error ?? `HTTP ${response.status}`);
    try {
      const reader = response.body.getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        let events;
        try {
          events = parser.feed(value);
        } catch (err) {
          if (err instanceof ServerError) yield* err.events; // what came before the error is kept
          throw err;
        }
        for (const event of events) {
          if (event.type === "CUSTOM" && event.name === "modelwire.resume") token = event.value.resume_token;
          yield event;
        }
      }
    } catch (err) {
      if (signal?.aborted || err instanceof ServerError || err instanceof SyntaxError || token === null || attempt >= retries) throw err;
      attempt += 1;
      await new Promise((resolve) => setTimeout(resolve, delay * attempt));
      parser.reset();
      response = await takeUp();
    }
  }
}
