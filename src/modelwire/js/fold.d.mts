// Types of modelwire's message and event JSON (the forms `Msg.to_dict()` and
// `event_to_json` write, compatible with AgentScope 2.x), and of fold.mjs.

export type Role = "user" | "assistant" | "system";
export type ToolCallState = "pending" | "asking" | "allowed" | "submitted" | "finished";
export type ToolResultState = "running" | "success" | "error" | "denied" | "interrupted";
export type ReplyFinishedReason = "completed" | "interrupted" | "exceed_max_iters" | "error";

export interface Base64Source { type: "base64"; data: string; media_type: string }
export interface URLSource { type: "url"; url: string; media_type: string }

interface Timed { id: string; created_at: string; finished_at: string | null }

/** Blocks carry provider extras (a thinking `signature`, text `citations` ...) beside their fields. */
export interface TextBlock extends Timed { type: "text"; text: string; [extra: string]: unknown }
export interface ThinkingBlock extends Timed { type: "thinking"; thinking: string; [extra: string]: unknown }
export interface DataBlock extends Timed { type: "data"; source: Base64Source | URLSource; name: string | null; [extra: string]: unknown }
export interface HintBlock extends Timed { type: "hint"; hint: string | Array<TextBlock | DataBlock>; source: string | null }
export interface PermissionRule { tool_name: string; rule_content: string | null; behavior: "allow" | "deny" | "ask" | "passthrough"; source: string }
export interface ToolCallBlock extends Timed {
  type: "tool_call"; name: string; input: string; state: ToolCallState; suggested_rules: PermissionRule[]; [extra: string]: unknown;
}
export interface ToolResultBlock extends Timed {
  type: "tool_result"; name: string; output: string | Array<TextBlock | DataBlock>; state: ToolResultState; metadata: Record<string, unknown>;
}
export type ContentBlock = TextBlock | ThinkingBlock | DataBlock | HintBlock | ToolCallBlock | ToolResultBlock;

export interface Usage {
  input_tokens: number; output_tokens: number; cache_input_tokens: number; cache_creation_input_tokens: number; reasoning_tokens: number;
}
export interface Cost {
  currency: string; total: number | null; input: number | null; output: number | null;
  calls: number; unpriced: string[]; complete: boolean; source?: string;
}
export interface ErrorInfo { type: string; message: string }

export interface Msg {
  name: string; content: ContentBlock[]; role: Role; id: string; metadata: Record<string, unknown>; created_at: string;
  usage: Usage | null; finished_at: string | null; finished_reason: ReplyFinishedReason | null;
  structured_output: Record<string, unknown> | null; error: ErrorInfo | null; cost: Cost | null;
}

interface Base { id: string; created_at: string; metadata: Record<string, unknown> }
interface Block extends Base { reply_id: string; block_id: string }
interface Tool extends Base { reply_id: string; tool_call_id: string }
type Extras = Record<string, unknown> | null;

export interface ReplyStartEvent extends Base { type: "REPLY_START"; session_id: string; reply_id: string; name: string; role: Role }
export interface ReplyEndEvent extends Base {
  type: "REPLY_END"; session_id: string; reply_id: string; finished_reason: ReplyFinishedReason;
  error: ErrorInfo | null; structured_output: Record<string, unknown> | null;
}
export interface ModelCallStartEvent extends Base { type: "MODEL_CALL_START"; reply_id: string; model_name: string }
export interface ModelCallEndEvent extends Base, Usage {
  type: "MODEL_CALL_END"; reply_id: string; finished_reason: "completed" | "interrupted";
  stop_reason: string | null; provider_stop_reason: string | null; cost: Partial<Cost> & { unknown?: string } | null;
}
export interface TextBlockStartEvent extends Block { type: "TEXT_BLOCK_START" }
export interface TextBlockDeltaEvent extends Block { type: "TEXT_BLOCK_DELTA"; delta: string }
export interface TextBlockEndEvent extends Block { type: "TEXT_BLOCK_END"; text: string | null; extras: Extras }
export interface ThinkingBlockStartEvent extends Block { type: "THINKING_BLOCK_START" }
export interface ThinkingBlockDeltaEvent extends Block { type: "THINKING_BLOCK_DELTA"; delta: string }
export interface ThinkingBlockEndEvent extends Block { type: "THINKING_BLOCK_END"; extras: Extras }
export interface DataBlockStartEvent extends Block { type: "DATA_BLOCK_START"; media_type: string; name: string | null }
export interface DataBlockDeltaEvent extends Block { type: "DATA_BLOCK_DELTA"; media_type: string; data: string | null; url: string | null }
export interface DataBlockEndEvent extends Block { type: "DATA_BLOCK_END"; extras: Extras }
export interface HintBlockEvent extends Block { type: "HINT_BLOCK"; source: string | null; hint: string | Array<TextBlock | DataBlock> }
export interface ToolCallStartEvent extends Tool { type: "TOOL_CALL_START"; tool_call_name: string }
export interface ToolCallDeltaEvent extends Tool { type: "TOOL_CALL_DELTA"; delta: string }
export interface ToolCallEndEvent extends Tool { type: "TOOL_CALL_END"; extras: Extras }
export interface ToolResultStartEvent extends Tool { type: "TOOL_RESULT_START"; tool_call_name: string }
export interface ToolResultTextDeltaEvent extends Tool { type: "TOOL_RESULT_TEXT_DELTA"; delta: string }
export interface ToolResultDataDeltaEvent extends Tool {
  type: "TOOL_RESULT_DATA_DELTA"; block_id: string; media_type: string; data: string | null; url: string | null;
}
export interface ToolResultEndEvent extends Tool { type: "TOOL_RESULT_END"; state: ToolResultState }
export interface ExceedMaxItersEvent extends Base { type: "EXCEED_MAX_ITERS"; reply_id: string; name: string }
export interface RequireUserConfirmEvent extends Base { type: "REQUIRE_USER_CONFIRM"; reply_id: string; tool_calls: ToolCallBlock[] }
export interface RequireExternalExecutionEvent extends Base { type: "REQUIRE_EXTERNAL_EXECUTION"; reply_id: string; tool_calls: ToolCallBlock[] }
export interface ConfirmResult { confirmed: boolean; tool_call: ToolCallBlock; rules: PermissionRule[] | null }
export interface UserConfirmResultEvent extends Base { type: "USER_CONFIRM_RESULT"; reply_id: string; confirm_results: ConfirmResult[] }
export interface UserInterruptEvent extends Base { type: "USER_INTERRUPT"; reply_id: string }
export interface ExternalExecutionResultEvent extends Base { type: "EXTERNAL_EXECUTION_RESULT"; reply_id: string; execution_results: ToolResultBlock[] }
export interface CustomEvent extends Base { type: "CUSTOM"; name: string; value: Record<string, unknown> }

export type AgentEvent =
  | ReplyStartEvent | ReplyEndEvent | ModelCallStartEvent | ModelCallEndEvent
  | TextBlockStartEvent | TextBlockDeltaEvent | TextBlockEndEvent
  | ThinkingBlockStartEvent | ThinkingBlockDeltaEvent | ThinkingBlockEndEvent
  | DataBlockStartEvent | DataBlockDeltaEvent | DataBlockEndEvent | HintBlockEvent
  | ToolCallStartEvent | ToolCallDeltaEvent | ToolCallEndEvent
  | ToolResultStartEvent | ToolResultTextDeltaEvent | ToolResultDataDeltaEvent | ToolResultEndEvent
  | ExceedMaxItersEvent | RequireUserConfirmEvent | RequireExternalExecutionEvent
  | UserConfirmResultEvent | UserInterruptEvent | ExternalExecutionResultEvent | CustomEvent;

/** An event that cannot be folded; the message is left as it was. */
export class EventApplyError extends Error { event: unknown; reason: string }
/** A block the message's role does not allow (a tool call in a user message). */
export class RoleError extends Error { role: string; blockType: string; where: string }

/** Folds one event into `msg` in place (Python's `Msg.append_event`) and returns it. */
export function appendEvent(msg: Msg, event: AgentEvent): Msg;
/** The empty message a REPLY_START opens. */
export function messageFor(replyStart: ReplyStartEvent): Msg;
/** The cost of a message after one more model call (Python's `add_costs`). */
export function addCosts(total: Cost | null, call: Partial<Cost> & { unknown?: string }): Cost;

/** The server ended the stream with an `event: error`; `events` holds those parsed before it. */
export class ServerError extends Error { events: AgentEvent[] }
/** Server-sent events of modelwire event JSON, fed piece by piece; an `event: error` throws ServerError. */
export class EventStreamParser {
  feed(chunk: string | Uint8Array): AgentEvent[];
  /** The `id:` of the last event given out (what a reconnect sends as `Last-Event-ID`). */
  lastEventId: string;
  /** Drop a frame cut off by a lost connection. */
  reset(): void;
}
/** One reply, event by event, reconnecting by itself (Last-Event-ID and the reply's resume token). */
export function readReply(
  url: string,
  options?: { body?: unknown; headers?: Record<string, string>; signal?: AbortSignal; retries?: number; delay?: number; resumeToken?: string | null; fetch?: typeof fetch },
): AsyncGenerator<AgentEvent>;
