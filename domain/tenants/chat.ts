/**
 * The support chat client (Mattermost REST API v4; locally the stand-in in sandbox/chat).
 * Support rooms are private channels of one team, found by name, so every operation is
 * idempotent: ensuring a room that exists returns it (restoring it when archived), archiving a
 * room that is already archived or absent changes nothing.
 *
 * Errors: an unreachable server throws a plain Error (worth retrying); any other answer than the
 * expected one throws a ChatError whose message says what the chat server answered.
 */
import { setTimeout as sleep } from 'node:timers/promises';

export interface ChatChannel {
  id: string;
  name: string;
  display_name: string;
  purpose: string;
  type: 'O' | 'P';
  team_id: string;
  create_at: number;
  /** 0 while active; the archive time (ms) once archived. */
  delete_at: number;
}

export class ChatError extends Error {
  override name = 'ChatError';
  constructor(
    message: string,
    readonly status: number,
    /** Mattermost's error id, e.g. `store.sql_channel.save_channel.exists.app_error`. */
    readonly errorId: string | undefined,
  ) {
    super(message);
  }
}

const EXISTS = 'store.sql_channel.save_channel.exists.app_error';

export interface ChatClient {
  ensureChannel(room: {
    name: string;
    displayName: string;
    purpose: string;
  }): Promise<{ id: string; created: boolean; restored: boolean }>;
  archiveChannel(name: string): Promise<'archived' | 'absent'>;
  getChannel(name: string): Promise<ChatChannel | null>;
}

export interface ChatClientOptions {
  baseUrl: string;
  token: string;
  teamId: string;
  /** Channel type of new rooms: private (default) or open. */
  channelType?: 'O' | 'P';
  timeoutMs?: number;
}

/** One call of the REST API; an unreachable server (after one retry) is a plain Error. */
async function chatRequest<T>(
  opts: ChatClientOptions,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: T }> {
  const send = () =>
    fetch(new URL(`/api/v4${path}`, opts.baseUrl), {
      method,
      headers: {
        authorization: `Bearer ${opts.token}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: body !== undefined ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(opts.timeoutMs ?? 10_000),
    });
  let res: Response;
  try {
    res = await send().catch(async () => {
      // once more on a fresh connection: a kept-alive one may have been closed by a restarted server
      await sleep(100);
      return send();
    });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    const why = cause ? ` (${cause.code ?? cause.message})` : '';
    throw new Error(`chat server unreachable at ${opts.baseUrl}: ${(err as Error).message}${why}`);
  }
  const parsed = (await res.json().catch(() => ({}))) as T;
  return { status: res.status, body: parsed };
}

/** The ChatError of an unexpected answer, saying what the chat server answered. */
const chatError = (what: string, status: number, body: unknown) => {
  const { id, message } = (body ?? {}) as { id?: string; message?: string };
  return new ChatError(
    `chat server answered ${status} to ${what}: ${message ?? 'no message'}${id ? ` (${id})` : ''}`,
    status,
    id,
  );
};

export function createChatClient(opts: ChatClientOptions): ChatClient {
  const call = <T>(method: string, path: string, body?: unknown) => chatRequest<T>(opts, method, path, body);
  const fail = chatError;

  async function getChannel(name: string): Promise<ChatChannel | null> {
    const path = `/teams/${encodeURIComponent(opts.teamId)}/channels/name/${encodeURIComponent(name)}?include_deleted=true`;
    const res = await call<ChatChannel>('GET', path);
    if (res.status === 200) return res.body;
    if (res.status === 404) return null;
    throw fail(`looking up channel ${name}`, res.status, res.body);
  }

  async function restore(channel: ChatChannel) {
    const res = await call<ChatChannel>('POST', `/channels/${channel.id}/restore`);
    // 400 "restored": someone else restored it in the meantime, which is what we wanted
    if (res.status !== 200 && !(res.status === 400 && (res.body as { id?: string }).id?.includes('restored'))) {
      throw fail(`restoring channel ${channel.name}`, res.status, res.body);
    }
  }

  return {
    getChannel,

    async ensureChannel(room) {
      const existing = await getChannel(room.name);
      if (existing) {
        if (existing.delete_at > 0) {
          await restore(existing);
          return { id: existing.id, created: false, restored: true };
        }
        return { id: existing.id, created: false, restored: false };
      }
      const res = await call<ChatChannel>('POST', '/channels', {
        team_id: opts.teamId,
        name: room.name,
        display_name: room.displayName,
        purpose: room.purpose,
        type: opts.channelType ?? 'P',
      });
      if (res.status === 201) return { id: res.body.id, created: true, restored: false };
      if (res.status === 400 && (res.body as { id?: string }).id === EXISTS) {
        // created by a concurrent call between our lookup and our create
        const raced = await getChannel(room.name);
        if (raced) return { id: raced.id, created: false, restored: false };
      }
      throw fail(`creating channel ${room.name}`, res.status, res.body);
    },

    async archiveChannel(name) {
      const existing = await getChannel(name);
      if (!existing) return 'absent';
      if (existing.delete_at > 0) return 'archived';
      const res = await call('DELETE', `/channels/${existing.id}`);
      const alreadyArchived =
        res.status === 400 && (res.body as { id?: string }).id === 'api.channel.delete_channel.deleted.app_error';
      if (res.status !== 200 && !alreadyArchived) throw fail(`archiving channel ${name}`, res.status, res.body);
      return 'archived';
    },
  };
}
