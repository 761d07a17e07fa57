// The JavaScript fold's cost as the streams grow: tool-call arguments of 8, 16 and 32 MB in
// 50-byte deltas, and base64 data of 8,000, 16,000 and 32,000 padded pieces of 961 bytes (each piece
// re-joined across its padding). Linear cost means x2.0 per doubling. Each run's
// message is checked before its time counts; median of 7 runs after a warm-up, sizes interleaved.
//
//     node --expose-gc benchmarks/append_event_js.mjs [--check]
//
// With --expose-gc a full collection runs before each timed run, so no run pays for the
// garbage of the one before.
import { appendEvent } from "../src/modelwire/js/fold.mjs";

function message() {
  return { name: "a", content: [], role: "assistant", id: "r", metadata: {}, created_at: "t", usage: null,
    finished_at: null, finished_reason: null, structured_output: null, error: null, cost: null };
}

function toolCall(bytes) {
  const piece = "x".repeat(50);
  const events = [{ type: "TOOL_CALL_START", reply_id: "r", tool_call_id: "c", tool_call_name: "f", created_at: "t" }];
  for (let n = 0; n < bytes; n += 50) events.push({ type: "TOOL_CALL_DELTA", reply_id: "r", tool_call_id: "c", delta: piece });
  events.push({ type: "TOOL_CALL_END", reply_id: "r", tool_call_id: "c", created_at: "t", extras: null });
  return { events, check: (m) => m.content[0].input.length === events.length * 50 - 100 };
}

function base64Data(pieces) {
  const raw = String.fromCharCode(...Array.from({ length: 961 }, (_, i) => i % 256)); // 961 bytes: every piece padded
  const piece = btoa(raw);
  const events = [{ type: "DATA_BLOCK_START", reply_id: "r", block_id: "d", media_type: "image/png", created_at: "t" }];
  for (let n = 0; n < pieces; n++) events.push({ type: "DATA_BLOCK_DELTA", reply_id: "r", block_id: "d", media_type: "image/png", data: piece, url: null });
  events.push({ type: "DATA_BLOCK_END", reply_id: "r", block_id: "d", created_at: "t", extras: null });
  return { events, check: (m) => atob(m.content[0].source.data).length === 961 * pieces };
}

function run({ events, check }) {
  globalThis.gc?.();
  const msg = message();
  const t0 = performance.now();
  for (const ev of events) appendEvent(msg, ev);
  const dt = performance.now() - t0;
  if (!check(msg)) throw new Error("wrong message");
  return dt;
}

const cases = {
  "tool-call arguments": [8, 16, 32].map((mb) => [`${mb} MB`, toolCall(mb * 1_000_000)]),
  "base64 data, padded pieces": [8000, 16000, 32000].map((n) => [`${n} pieces`, base64Data(n)]),
};
let ok = true;
for (const [label, sizes] of Object.entries(cases)) {
  const times = sizes.map(() => []);
  sizes.forEach(([, c]) => run(c)); // warm-up
  for (let round = 0; round < 7; round++) sizes.forEach(([, c], i) => times[i].push(run(c)));
  const med = times.map((t) => t.sort((a, b) => a - b)[3]);
  const ratios = med.slice(1).map((m, i) => m / med[i]);
  console.log(`${label}: ${sizes.map(([s], i) => `${s} ${med[i].toFixed(1)} ms`).join(", ")}; x${ratios.map((r) => r.toFixed(2)).join(", x")} per doubling`);
  if (ratios.some((r) => r > 2.6)) { ok = false; console.log(`MISSED: ${label} grows faster than linear`); }
}
if (process.argv.includes("--check")) process.exit(ok ? 0 : 1);
