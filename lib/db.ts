/** The one PostgreSQL pool module: parameters only, typed rows, transactions on one client. */
import pg from 'pg';

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;
export type Queryable = Pick<pg.Pool, 'query'> | Pick<pg.PoolClient, 'query'>;

export function createPool(connectionString: string, max = 10): pg.Pool {
  const pool = new pg.Pool({ connectionString, max, idleTimeoutMillis: 30_000 });
  // An idle client losing its connection must not crash the process; the next query reconnects.
  pool.on('error', () => {});
  return pool;
}

/** Runs `fn` in one transaction on one checked-out client; rolls back on any error. */
export async function withTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

export interface ChannelListener {
  /** The PostgreSQL backend of the listening connection, while it is up (diagnostics, tests). */
  readonly pid: number | undefined;
  close(): Promise<void>;
}

/**
 * LISTEN on a channel with a connection of its own (never one of a pool's), calling `onNotice` with
 * each notification's payload. A lost connection is made again every `retryMs`; `onReconnect` runs
 * once it listens again, since notifications sent meanwhile are lost. Resolves once it listens.
 */
export async function listenToChannel(
  connection: string | pg.ClientConfig,
  channel: string,
  handlers: { onNotice: (payload: string) => void; onReconnect: () => void; onError: (err: Error) => void },
  retryMs = 1_000,
): Promise<ChannelListener> {
  let closed = false;
  let client: pg.Client | undefined;
  let retry: NodeJS.Timeout | undefined;

  async function connect(): Promise<void> {
    const c = new pg.Client(typeof connection === 'string' ? { connectionString: connection } : connection);
    const lost = (err?: Error) => {
      if (client !== c) return;
      client = undefined;
      c.end().catch(() => {});
      if (err) handlers.onError(err);
      if (!closed) retry = setTimeout(() => void reconnect(), retryMs);
    };
    c.on('error', lost);
    c.on('end', () => lost());
    c.on('notification', (msg) => msg.channel === channel && handlers.onNotice(msg.payload ?? ''));
    try {
      await c.connect();
      await c.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    } catch (err) {
      c.removeAllListeners();
      await c.end().catch(() => {});
      throw err;
    }
    client = c;
  }

  async function reconnect(): Promise<void> {
    try {
      await connect();
      handlers.onReconnect();
    } catch (err) {
      handlers.onError(err as Error);
      if (!closed) retry = setTimeout(() => void reconnect(), retryMs);
    }
  }

  await connect();
  return {
    get pid() {
      return (client as (pg.Client & { processID?: number }) | undefined)?.processID;
    },
    async close() {
      closed = true;
      clearTimeout(retry);
      const c = client;
      client = undefined;
      if (c) {
        c.removeAllListeners('notification');
        await c.end().catch(() => {});
      }
    },
  };
}
