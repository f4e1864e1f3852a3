/**
 * `POST /v1/chat/completions` as OpenAI answers it: the request checked, the policy's decision
 * (policy.ts) turned into a completion, answered as one `chat.completion` or streamed as Server-Sent
 * Events of `chat.completion.chunk` objects.
 */
import { randomUUID } from 'node:crypto';
import type http from 'node:http';
import { decide, pieces, promptText, tokens, type Decision, type Message } from './policy.js';

export interface LlmRequest {
  id: string;
  model: string;
  stream: boolean;
  tools: string[];
  decision: Decision['kind'];
  toolCalls: { name: string; arguments: Record<string, unknown> }[];
  /** Chunks written before the end or the abort (streaming only). */
  chunksSent: number;
  completed: boolean;
  /** The client closed the connection before the answer was complete. */
  aborted: boolean;
}

interface CompletionRequest {
  model: string;
  messages: Message[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  tools?: { function?: { name?: string } }[];
}

/** What the model answers, in OpenAI's terms. */
interface Completion {
  id: string;
  created: number;
  model: string;
  toolCalls: { index: number; id: string; type: 'function'; function: { name: string; arguments: string } }[];
  answer: string;
  finish: 'tool_calls' | 'stop';
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function openAiError(
  res: http.ServerResponse,
  status: number,
  message: string,
  type: string,
  code: string | null = null,
  param: string | null = null,
) {
  res
    .writeHead(status, { 'content-type': 'application/json' })
    .end(JSON.stringify({ error: { message, type, param, code } }));
}

/** Answers one chat completion request, remembered in `requests`; `delay` is the pause after each streamed chunk. */
export async function chatCompletion(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  requests: LlmRequest[],
  delay: number,
) {
  const body = await completionRequest(req, res);
  if (!body) return;
  const offered = (body.tools ?? []).map((t) => t.function?.name ?? '').filter(Boolean);
  const decision = decide(body.messages, offered);
  const record: LlmRequest = {
    id: `chatcmpl-${randomUUID()}`,
    model: body.model,
    stream: body.stream === true,
    tools: offered,
    decision: decision.kind,
    toolCalls: decision.kind === 'tools' ? decision.calls : [],
    chunksSent: 0,
    completed: false,
    aborted: false,
  };
  requests.push(record);
  res.on('close', () => {
    if (!res.writableFinished) record.aborted = true;
  });
  const completion = completionOf(record.id, body, decision);
  if (!record.stream) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(completionObject(completion)));
    record.completed = true;
    return;
  }
  await streamCompletion(res, record, completion, Boolean(body.stream_options?.include_usage), delay);
}

/** The request's body, checked; undefined once an error has been answered. */
async function completionRequest(
  req: http.IncomingMessage,
  res: http.ServerResponse,
): Promise<CompletionRequest | undefined> {
  let raw = '';
  for await (const chunk of req) raw += chunk;
  let body: Partial<CompletionRequest>;
  try {
    body = JSON.parse(raw);
  } catch {
    return void openAiError(res, 400, 'We could not parse the JSON body of your request.', 'invalid_request_error');
  }
  if (typeof body.model !== 'string' || !body.model)
    return void openAiError(res, 400, "Missing required parameter: 'model'.", 'invalid_request_error', null, 'model');
  if (!Array.isArray(body.messages) || body.messages.length === 0) {
    return void openAiError(
      res,
      400,
      "Missing required parameter: 'messages'.",
      'invalid_request_error',
      null,
      'messages',
    );
  }
  return body as CompletionRequest;
}

function completionOf(id: string, body: CompletionRequest, decision: Decision): Completion {
  const toolCalls =
    decision.kind === 'tools'
      ? decision.calls.map((c, i) => ({
          index: i,
          id: `call_${randomUUID().slice(0, 8)}`,
          type: 'function' as const,
          function: { name: c.name, arguments: JSON.stringify(c.arguments) },
        }))
      : [];
  const answer = decision.kind === 'answer' ? decision.text : '';
  const usage = {
    prompt_tokens: tokens(promptText(body.messages)),
    completion_tokens: tokens(answer + JSON.stringify(toolCalls)),
    total_tokens: 0,
  };
  usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
  return {
    id,
    created: Math.floor(Date.now() / 1000),
    model: body.model,
    toolCalls,
    answer,
    finish: decision.kind === 'tools' ? 'tool_calls' : 'stop',
    usage,
  };
}

const completionObject = (c: Completion) => ({
  id: c.id,
  object: 'chat.completion',
  created: c.created,
  model: c.model,
  choices: [
    {
      index: 0,
      message: {
        role: 'assistant',
        content: c.answer || null,
        ...(c.toolCalls.length ? { tool_calls: c.toolCalls.map(({ index: _i, ...t }) => t) } : {}),
      },
      finish_reason: c.finish,
      logprobs: null,
    },
  ],
  usage: c.usage,
});

/** The completion as OpenAI streams it, stopping when the client goes away. */
async function streamCompletion(
  res: http.ServerResponse,
  record: LlmRequest,
  c: Completion,
  includeUsage: boolean,
  delay: number,
) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  const send = async (choices: unknown[], extra: Record<string, unknown> = {}) => {
    if (res.destroyed || record.aborted) return false;
    res.write(
      `data: ${JSON.stringify({ id: c.id, object: 'chat.completion.chunk', created: c.created, model: c.model, choices, ...extra })}\n\n`,
    );
    record.chunksSent++;
    if (delay) await sleep(delay);
    return !record.aborted;
  };
  const delta = (d: Record<string, unknown>, finishReason: string | null = null) => [
    { index: 0, delta: d, finish_reason: finishReason, logprobs: null },
  ];

  if (!(await send(delta({ role: 'assistant', content: c.toolCalls.length ? null : '' })))) return;
  for (const tc of c.toolCalls) {
    // the name first, the arguments after it, as OpenAI streams them
    if (
      !(await send(
        delta({
          tool_calls: [
            { index: tc.index, id: tc.id, type: 'function', function: { name: tc.function.name, arguments: '' } },
          ],
        }),
      ))
    )
      return;
    if (!(await send(delta({ tool_calls: [{ index: tc.index, function: { arguments: tc.function.arguments } }] }))))
      return;
  }
  for (const piece of c.answer ? pieces(c.answer) : []) if (!(await send(delta({ content: piece })))) return;
  if (!(await send(delta({}, c.finish)))) return;
  if (includeUsage && !(await send([], { usage: c.usage }))) return;
  res.end('data: [DONE]\n\n');
  record.completed = true;
}
