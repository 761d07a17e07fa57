// The JavaScript fold beside the Python one. Run by tests/test_js_fold.py, which writes
// every event stream the Python tests produce, with the message Python folded from it,
// to the file named by MODELWIRE_FOLD_CASES. Run alone, only the parser tests run.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { appendEvent, EventStreamParser, messageFor, ServerError } from "../../src/modelwire/js/fold.mjs";

const casesFile = process.env.MODELWIRE_FOLD_CASES;
const cases = casesFile ? JSON.parse(readFileSync(casesFile, "utf8")) : [];

for (const c of cases) {
  test(`fold: ${c.name}`, () => {
    const msg = structuredClone(c.msg);
    c.events.forEach((event, i) => {
      const before = JSON.stringify(msg);
      const expected = c.errors[String(i)];
      try {
        appendEvent(msg, event);
      } catch (err) {
        assert.ok(expected, `event ${i} (${event.type}) raised ${err.name}: ${err.message}; Python folded it`);
        assert.equal(err.name, expected.name);
        assert.equal(err.message, expected.message);
        assert.equal(JSON.stringify(msg), before, "a refused event changed the message");
        return;
      }
      assert.ok(!expected, `event ${i} (${event.type}) was folded; Python raised ${expected?.name}: ${expected?.message}`);
    });
    assert.deepEqual(msg, c.expected);
  });
}

test("a REPLY_START gives the message its events fold into", () => {
  const start = { type: "REPLY_START", id: "e", created_at: "t", metadata: {}, session_id: "s", reply_id: "r", name: "bot", role: "assistant" };
  const msg = messageFor(start);
  appendEvent(msg, { type: "TEXT_BLOCK_START", reply_id: "r", block_id: "b", created_at: "t" });
  appendEvent(msg, { type: "TEXT_BLOCK_DELTA", reply_id: "r", block_id: "b", delta: "hi" });
  assert.equal(msg.content[0].text, "hi");
});

test("the SSE parser gives the same events however the bytes are split", () => {
  const events = [{ type: "A", n: 1, s: "é\nx" }, { type: "B", n: 2 }];
  const body = new TextEncoder().encode(`: ping\r\n\r\n${events.map((e) => `event: x\r\ndata: ${JSON.stringify(e)}\r\n\r\n`).join("")}`);
  for (const size of [1, 2, 3, 5, 7, 64, body.length]) {
    const parser = new EventStreamParser();
    const got = [];
    for (let i = 0; i < body.length; i += size) got.push(...parser.feed(body.slice(i, i + size)));
    assert.deepEqual(got, events, `split every ${size} bytes`);
  }
});

test("an error event raises ServerError carrying the events before it", () => {
  const parser = new EventStreamParser();
  const body = 'data: {"type": "A"}\n\nevent: error\ndata: {"type": "ERROR", "message": "RuntimeError: boom"}\n\n';
  assert.throws(() => parser.feed(body), (err) => err instanceof ServerError && err.message === "RuntimeError: boom" && err.events.length === 1);
});
