// Compiled with `tsc --strict --noEmit` by tests/test_js_fold.py (when tsc is installed):
// the types narrow events by `type` and blocks by `type`.
import { appendEvent, messageFor, EventStreamParser, type AgentEvent, type Msg } from "../../src/modelwire/js/fold.mjs";
const p = new EventStreamParser();
let msg: Msg | null = null;
for (const ev of p.feed("data: {}\n\n")) {
  if (ev.type === "REPLY_START") msg = messageFor(ev);
  else if (msg) appendEvent(msg, ev);
}
const b = msg?.content[0];
if (b?.type === "tool_call") { const s: string = b.input; console.log(s, b.state); }
const e: AgentEvent = { type: "TEXT_BLOCK_DELTA", id: "e", created_at: "t", metadata: {}, reply_id: "r", block_id: "b", delta: "x" };
console.log(e);
