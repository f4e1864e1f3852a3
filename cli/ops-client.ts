/**
 * The CLI talks to the internal ops API over HTTP with the ops service key, like any operator
 * tool: one code path for a request, whether it comes from the CLI or from another system.
 */
import { config } from '../lib/config.js';

export class OpsApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export async function opsRequest<T>(method: string, path: string, body?: unknown): Promise<T> {
  const cfg = config();
  const base = process.env.PLANA_API_URL ?? cfg.API_PUBLIC_URL;
  let res: Response;
  try {
    res = await fetch(new URL(path, base), {
      method,
      headers: {
        'x-api-key': cfg.OPS_API_KEY,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    throw new OpsApiError(0, `Cannot reach the account API at ${base} (${(err as Error).message}). Is \`npm run dev\` running?`);
  }
  const text = await res.text();
  const json = text ? JSON.parse(text) : undefined;
  if (!res.ok) throw new OpsApiError(res.status, json?.detail ?? `${res.status} ${res.statusText}`);
  return json as T;
}
