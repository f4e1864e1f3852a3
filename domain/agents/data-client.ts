/**
 * The agents' tools, as calls to the data service (services/data): `X-API-Key` of the pair
 * agents → data from the secret store (read per call, so a rotated key is picked up), and the
 * workspace grant the account API issued for this call. The workspace is fixed by the caller,
 * never taken from the model's arguments.
 */
import type { ToolName } from './catalog.js';
import { WORKSPACE_GRANT_HEADER } from './workspace-grant.js';

export interface ToolContext {
  workspaceId: string;
  grant: string;
  signal?: AbortSignal;
}

/** What a tool gives the model: the figures, or why there are none (the model explains it). */
export type ToolResult = { ok: true; data: unknown } | { ok: false; error: string; status: number };

export interface DataClient {
  call(tool: ToolName, args: Record<string, unknown>, ctx: ToolContext): Promise<ToolResult>;
}

function pathOf(tool: ToolName, args: Record<string, unknown>): string {
  switch (tool) {
    case 'get_kpis':
      return 'kpis';
    case 'get_cashflow': {
      const months = Number.isInteger(args.months) ? Math.min(Math.max(args.months as number, 1), 24) : 6;
      return `cashflow?months=${months}`;
    }
    case 'get_overdue_invoices':
      return 'overdue-invoices';
  }
}

export function createDataClient(opts: {
  baseUrl: string;
  key: () => Promise<string>;
  timeoutMs?: number;
}): DataClient {
  return {
    async call(tool, args, ctx) {
      const url = new URL(
        `/data/workspaces/${encodeURIComponent(ctx.workspaceId)}/${pathOf(tool, args)}`,
        opts.baseUrl,
      );
      const signals = [AbortSignal.timeout(opts.timeoutMs ?? 30_000), ...(ctx.signal ? [ctx.signal] : [])];
      let res: Response;
      try {
        res = await fetch(url, {
          headers: { 'x-api-key': await opts.key(), [WORKSPACE_GRANT_HEADER]: ctx.grant },
          signal: AbortSignal.any(signals),
        });
      } catch (err) {
        if (ctx.signal?.aborted) throw err;
        return { ok: false, status: 503, error: 'The data service cannot be reached right now.' };
      }
      const body = (await res.json().catch(() => undefined)) as { detail?: string } | undefined;
      if (res.ok) return { ok: true, data: body };
      return { ok: false, status: res.status, error: body?.detail ?? `The data service answered ${res.status}.` };
    },
  };
}
