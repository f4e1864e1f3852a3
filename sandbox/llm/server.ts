/**
 * A stand-in for the model behind the agents, which lives outside the platform: a real HTTP server
 * speaking OpenAI's Chat Completions API, as any OpenAI-compatible server does.
 *
 *   POST /v1/chat/completions   `Authorization: Bearer <key>`; `stream: true` answers Server-Sent
 *                                Events of `chat.completion.chunk` objects (`choices[0].delta` with
 *                                `role`, `content` or `tool_calls`, then `finish_reason`, then a
 *                                `usage` chunk when `stream_options.include_usage`), ending `data: [DONE]`;
 *                                otherwise one `chat.completion`.
 *   GET  /v1/models
 *
 * Errors are OpenAI's shape (`{ error: { message, type, param, code } }`). What it answers is
 * deterministic (policy.ts). Every request is remembered in `requests` (model, stream, tools
 * offered, what it decided, whether the client went away before the end), so tests can assert
 * what the platform sent and that a cancelled call reached the model as an abort.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { config } from '../../lib/config.js';
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

export interface LlmStandIn {
  url: string;
  requests: LlmRequest[];
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function openAiError(res: http.ServerResponse, status: number, message: string, type: string, code: string | null = null, param: string | null = null) {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message, type, param, code } }));
}

export async function startLlmStandIn(opts: { host?: string; port?: number; apiKey?: string; chunkDelayMs?: number } = {}): Promise<LlmStandIn> {
  const requests: LlmRequest[] = [];
  const delay = opts.chunkDelayMs ?? 0;

  const server = http.createServer((req, res) => {
    void handle(req, res).catch(() => {
      if (!res.headersSent) openAiError(res, 500, 'The stand-in failed.', 'server_error');
      else res.destroy();
    });
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse) {
    const path = (req.url ?? '').split('?')[0];
    if (opts.apiKey && req.headers.authorization !== `Bearer ${opts.apiKey}`) {
      return openAiError(res, 401, 'Incorrect API key provided.', 'invalid_request_error', 'invalid_api_key');
    }
    if (req.method === 'GET' && path === '/v1/models') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ object: 'list', data: [{ id: 'plana-standin-1', object: 'model', created: 0, owned_by: 'plana-sandbox' }] }));
    }
    if (req.method !== 'POST' || path !== '/v1/chat/completions') return openAiError(res, 404, `Unknown request URL: ${req.method} ${path}.`, 'invalid_request_error');

    let raw = '';
    for await (const chunk of req) raw += chunk;
    let body: { model?: string; messages?: Message[]; stream?: boolean; stream_options?: { include_usage?: boolean }; tools?: { function?: { name?: string } }[] };
    try {
      body = JSON.parse(raw);
    } catch {
      return openAiError(res, 400, 'We could not parse the JSON body of your request.', 'invalid_request_error');
    }
    if (typeof body.model !== 'string' || !body.model) return openAiError(res, 400, "Missing required parameter: 'model'.", 'invalid_request_error', null, 'model');
    if (!Array.isArray(body.messages) || body.messages.length === 0) {
      return openAiError(res, 400, "Missing required parameter: 'messages'.", 'invalid_request_error', null, 'messages');
    }

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

    const toolCalls = decision.kind === 'tools' ? decision.calls.map((c, i) => ({ index: i, id: `call_${randomUUID().slice(0, 8)}`, type: 'function' as const, function: { name: c.name, arguments: JSON.stringify(c.arguments) } })) : [];
    const answer = decision.kind === 'answer' ? decision.text : '';
    const finish = decision.kind === 'tools' ? 'tool_calls' : 'stop';
    const usage = { prompt_tokens: tokens(promptText(body.messages)), completion_tokens: tokens(answer + JSON.stringify(toolCalls)), total_tokens: 0 };
    usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
    const created = Math.floor(Date.now() / 1000);

    if (!record.stream) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: record.id,
          object: 'chat.completion',
          created,
          model: body.model,
          choices: [{ index: 0, message: { role: 'assistant', content: answer || null, ...(toolCalls.length ? { tool_calls: toolCalls.map(({ index: _i, ...t }) => t) } : {}) }, finish_reason: finish, logprobs: null }],
          usage,
        }),
      );
      record.completed = true;
      return;
    }

    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    const send = async (choices: unknown[], extra: Record<string, unknown> = {}) => {
      if (res.destroyed || record.aborted) return false;
      res.write(`data: ${JSON.stringify({ id: record.id, object: 'chat.completion.chunk', created, model: body.model, choices, ...extra })}\n\n`);
      record.chunksSent++;
      if (delay) await sleep(delay);
      return !record.aborted;
    };
    const delta = (d: Record<string, unknown>, finishReason: string | null = null) => [{ index: 0, delta: d, finish_reason: finishReason, logprobs: null }];

    if (!(await send(delta({ role: 'assistant', content: toolCalls.length ? null : '' })))) return;
    for (const tc of toolCalls) {
      // the name first, the arguments after it, as OpenAI streams them
      if (!(await send(delta({ tool_calls: [{ index: tc.index, id: tc.id, type: 'function', function: { name: tc.function.name, arguments: '' } }] })))) return;
      if (!(await send(delta({ tool_calls: [{ index: tc.index, function: { arguments: tc.function.arguments } }] })))) return;
    }
    for (const piece of answer ? pieces(answer) : []) if (!(await send(delta({ content: piece })))) return;
    if (!(await send(delta({}, finish)))) return;
    if (body.stream_options?.include_usage && !(await send([], { usage }))) return;
    res.end('data: [DONE]\n\n');
    record.completed = true;
  }

  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${opts.host ?? '127.0.0.1'}:${port}/v1`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const cfg = config();
  const llm = await startLlmStandIn({ port: cfg.LLM_STANDIN_PORT, apiKey: cfg.LLM_KEY, chunkDelayMs: cfg.LLM_STANDIN_CHUNK_DELAY_MS });
  console.log(`LLM stand-in (OpenAI Chat Completions) on ${llm.url}`);
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => void llm.close());
}
