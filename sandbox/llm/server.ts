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
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { chatCompletion, openAiError, type LlmRequest } from './completions.js';

export type { LlmRequest } from './completions.js';

export interface LlmStandIn {
  url: string;
  requests: LlmRequest[];
  close(): Promise<void>;
}

export async function startLlmStandIn(
  opts: { host?: string; port?: number; apiKey?: string; chunkDelayMs?: number } = {},
): Promise<LlmStandIn> {
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
      return res.end(
        JSON.stringify({
          object: 'list',
          data: [{ id: 'plana-standin-1', object: 'model', created: 0, owned_by: 'plana-sandbox' }],
        }),
      );
    }
    if (req.method !== 'POST' || path !== '/v1/chat/completions')
      return openAiError(res, 404, `Unknown request URL: ${req.method} ${path}.`, 'invalid_request_error');
    return chatCompletion(req, res, requests, delay);
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

/** Run directly: `npm run start:llm` on LLM_STANDIN_PORT (8091), accepting LLM_KEY, pausing LLM_STANDIN_CHUNK_DELAY_MS (15) between chunks. */
if (import.meta.url === `file://${process.argv[1]}`) {
  const env = process.env;
  const llm = await startLlmStandIn({
    port: Number(env.LLM_STANDIN_PORT ?? 8091),
    apiKey: env.LLM_KEY ?? 'dev-llm-key-not-secret',
    chunkDelayMs: Number(env.LLM_STANDIN_CHUNK_DELAY_MS ?? 15),
  });
  console.log(`LLM stand-in (OpenAI Chat Completions) on ${llm.url}`);
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => void llm.close());
}
