// The official front-end clients, run against a modelwire.serve endpoint:
//   node clients.mjs <scenario> <endpoint url> [argument]
// prints {"messages": ..., ...} as JSON on stdout. Scenarios:
//   ui-chat TEXT              Vercel AI SDK Chat (what useChat runs), one message
//   ui-approve TEXT yes|no    ... answering the tool approval it is asked for
//   ui-external TEXT          ... running the client-side tool (addToolOutput)
//   ui-twice TEXT NEXT        two messages: the second request carries the first reply
//   ui-resume TEXT N          the connection is lost after N chunks; a second Chat (a reloaded
//                             page) takes the reply up with resumeStream() and the resume token
//   agui-run TEXT             AG-UI HttpAgent, one run
//   agui-approve TEXT yes|no  ... then a second run resuming the interrupt
//   agui-external TEXT        ... resuming with the tool's output
//   agui-twice TEXT NEXT      two runs: the second sends the first's messages back
import {
  AbstractChat,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  lastAssistantMessageIsCompleteWithToolCalls,
} from "ai";
import { HttpAgent } from "@ag-ui/client";

const [scenario, url, text, arg] = process.argv.slice(2);

class State {
  constructor() {
    this.status = "ready";
    this.error = undefined;
    this.messages = [];
  }
  pushMessage(m) { this.messages = this.messages.concat(m); }
  popMessage() { this.messages = this.messages.slice(0, -1); }
  replaceMessage(i, m) { this.messages = [...this.messages.slice(0, i), m, ...this.messages.slice(i + 1)]; }
  snapshot(thing) { return structuredClone(thing); }
}

class Chat extends AbstractChat {
  constructor(init) { super({ ...init, state: new State() }); }
}

async function settle(chat) {
  // sendAutomaticallyWhen starts the follow-up request on its own: wait until quiet.
  for (let quiet = 0; quiet < 5; ) {
    await new Promise((r) => setTimeout(r, 40));
    quiet = chat.status === "ready" || chat.status === "error" ? quiet + 1 : 0;
  }
}

async function ui() {
  const requests = [];
  const transport = new DefaultChatTransport({
    api: url,
    fetch: async (input, init) => {
      requests.push(JSON.parse(init.body));
      return fetch(input, init);
    },
  });
  let chat;
  chat = new Chat({
    transport,
    sendAutomaticallyWhen:
      scenario === "ui-approve" ? lastAssistantMessageIsCompleteWithApprovalResponses : scenario === "ui-external" ? lastAssistantMessageIsCompleteWithToolCalls : undefined,
    onToolCall: ({ toolCall }) => {
      if (scenario === "ui-external") {
        chat.addToolOutput({ tool: toolCall.toolName, toolCallId: toolCall.toolCallId, output: { done: `ran ${toolCall.toolName} in the browser` } });
      }
    },
  });
  await chat.sendMessage({ text });
  await settle(chat);
  if (scenario === "ui-twice") {
    await chat.sendMessage({ text: arg });
    await settle(chat);
  }
  if (scenario === "ui-approve") {
    const part = chat.messages.at(-1).parts.find((p) => p.state === "approval-requested");
    if (!part) throw new Error("no approval was requested: " + JSON.stringify(chat.messages.at(-1)));
    await chat.addToolApprovalResponse({ id: part.approval.id, approved: arg === "yes" });
    await settle(chat);
  }
  return { messages: chat.messages, status: chat.status, error: chat.error ? String(chat.error) : null, requests: requests.length };
}

async function agui() {
  const agent = new HttpAgent({ url, threadId: "thread-1" });
  agent.messages = [{ id: "u1", role: "user", content: text }];
  const runs = [];
  runs.push(await agent.runAgent({ runId: "run-1" }));
  const interrupts = agent.pendingInterrupts.map((i) => ({ ...i }));
  if ((scenario === "agui-approve" || scenario === "agui-external") && interrupts.length) {
    const payload = (i) => (scenario === "agui-approve" ? { approved: arg === "yes" } : { output: `ran ${i.toolCallId} outside` });
    runs.push(await agent.runAgent({ runId: "run-2", resume: interrupts.map((i) => ({ interruptId: i.id, status: "resolved", payload: payload(i) })) }));
  }
  if (scenario === "agui-twice") {
    agent.messages = [...agent.messages, { id: "u2", role: "user", content: arg }];
    runs.push(await agent.runAgent({ runId: "run-2" }));
  }
  return { messages: agent.messages, interrupts, pending: agent.pendingInterrupts, runs: runs.map((r) => ({ newMessages: r.newMessages.length, result: r.result ?? null })) };
}

async function uiResume() {
  // The first page: its connection is lost after N chunks of the reply (the body is cut
  // under the client, so the server sees the client leave).
  const cut = Number(arg);
  const first = new Chat({
    id: "chat-1",
    transport: new DefaultChatTransport({
      api: url,
      fetch: async (input, init) => {
        const response = await fetch(input, init);
        const reader = response.body.getReader();
        let n = 0;
        const body = new ReadableStream({
          async pull(controller) {
            if (n++ >= cut) { await reader.cancel(); controller.error(new TypeError("network error")); return; }
            const { value, done } = await reader.read();
            if (done) controller.close(); else controller.enqueue(value);
          },
        });
        return new Response(body, { status: response.status, headers: response.headers });
      },
    }),
  });
  await first.sendMessage({ text }).catch(() => {});
  await settle(first);
  const partial = first.messages.at(-1);
  const token = partial.metadata?.resumeToken;
  // The reloaded page: the conversation as it was persisted, then resumeStream().
  const second = new Chat({
    id: "chat-1",
    messages: [first.messages[0]],
    transport: new DefaultChatTransport({ api: url, headers: () => ({ "x-modelwire-resume-token": token }) }),
  });
  await second.resumeStream();
  await settle(second);
  const stranger = new Chat({ id: "chat-1", transport: new DefaultChatTransport({ api: url, headers: { "x-modelwire-resume-token": "not-it" } }) });
  await stranger.resumeStream();
  await settle(stranger);
  return { partial, token: token ?? null, messages: second.messages, status: second.status, stranger: stranger.messages.length };
}

const out = scenario === "ui-resume" ? await uiResume() : scenario.startsWith("ui-") ? await ui() : await agui();
process.stdout.write(JSON.stringify(out));
