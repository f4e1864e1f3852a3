/**
 * A stand-in for the support chat, which lives outside the platform: a real HTTP server that
 * answers the part of Mattermost's REST API v4 the platform uses, with Mattermost's paths,
 * authentication (`Authorization: Bearer <token>`), JSON shapes and error bodies
 * (`{ id, message, detailed_error, request_id, status_code }`).
 *
 *   GET    /api/v4/system/ping                                   (no authentication)
 *   POST   /api/v4/channels                                      create a channel in a team
 *   GET    /api/v4/channels/{channel_id}
 *   GET    /api/v4/teams/{team_id}/channels/name/{channel_name}  ?include_deleted=true
 *   DELETE /api/v4/channels/{channel_id}                         archive (sets delete_at)
 *   POST   /api/v4/channels/{channel_id}/restore                 unarchive
 *
 * One team, one bot token. Channels live in memory and, with `dir`, in `dir/channels.json`, so a
 * restarted stand-in keeps them.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';

export interface Channel {
  id: string;
  create_at: number;
  update_at: number;
  delete_at: number;
  team_id: string;
  type: 'O' | 'P';
  display_name: string;
  name: string;
  header: string;
  purpose: string;
  last_post_at: number;
  total_msg_count: number;
  extra_update_at: number;
  creator_id: string;
  scheme_id: string | null;
  props: null;
  group_constrained: boolean | null;
  shared: boolean | null;
  total_msg_count_root: number;
  policy_id: string | null;
  last_root_post_at: number;
}

export interface ChatStandIn {
  url: string;
  teamId: string;
  close(): Promise<void>;
}

/** The team the stand-in serves unless told otherwise (the CHAT_TEAM_ID default). */
export const DEFAULT_TEAM_ID = 'planasupportteam0000000000';

// Mattermost ids: 16 random bytes in base32 with its own alphabet, 26 lower-case characters.
const ID_ALPHABET = 'ybndrfg8ejkmcpqxot1uwisza345h769';
export function newMattermostId(): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of randomBytes(16)) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += ID_ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += ID_ALPHABET[(value << (5 - bits)) & 31];
  return out;
}

const VALID_ID = /^[a-z0-9]{26}$/;
// model.IsValidChannelIdentifier: lower-case letters, digits, '-' and '_', starting and ending with a letter or digit
const VALID_NAME = /^[a-z0-9]([a-z0-9_-]*[a-z0-9])?$/;

class MattermostError extends Error {
  constructor(
    readonly statusCode: number,
    readonly id: string,
    message: string,
    readonly where = '',
  ) {
    super(message);
  }
}

export async function startChatStandIn(opts: {
  host?: string;
  port: number;
  token: string;
  teamId?: string;
  dir?: string;
}): Promise<ChatStandIn> {
  const teamId = opts.teamId ?? DEFAULT_TEAM_ID;
  const botUserId = newMattermostId();
  const file = opts.dir ? path.join(opts.dir, 'channels.json') : undefined;
  const channels = new Map<string, Channel>();
  if (file && existsSync(file)) {
    for (const c of JSON.parse(readFileSync(file, 'utf8')) as Channel[]) channels.set(c.id, c);
  }
  const save = () => {
    if (!file) return;
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(`${file}.tmp`, JSON.stringify([...channels.values()], null, 2));
    renameSync(`${file}.tmp`, file);
  };
  const byName = (team: string, name: string) =>
    [...channels.values()].find((c) => c.team_id === team && c.name === name);
  const channelById = (id: string) => {
    if (!VALID_ID.test(id)) {
      throw new MattermostError(400, 'api.context.invalid_url_param.app_error', 'Invalid or missing channel_id parameter in request URL.');
    }
    const c = channels.get(id);
    if (!c) throw new MattermostError(404, 'app.channel.get.existing.app_error', 'Unable to find the existing channel.', 'GetChannel');
    return c;
  };

  const app = Fastify({ logger: false, genReqId: () => newMattermostId() });

  app.setErrorHandler((err: Error & { statusCode?: number }, req: FastifyRequest, reply: FastifyReply) => {
    const e =
      err instanceof MattermostError
        ? err
        : err.statusCode === 400 || err.statusCode === 415
          ? new MattermostError(400, 'api.context.invalid_body_param.app_error', 'Invalid or missing channel in request body.')
          : new MattermostError(500, 'app.internal_error', 'An internal error occurred.');
    return reply.code(e.statusCode).send({
      id: e.id,
      message: e.message,
      detailed_error: e.where,
      request_id: req.id,
      status_code: e.statusCode,
    });
  });
  app.setNotFoundHandler((req, reply) =>
    reply.code(404).send({
      id: 'api.context.404.app_error',
      message: 'Sorry, we could not find the page.',
      detailed_error: `There doesn't appear to be an api call for the url='${req.url.split('?')[0]}'.`,
      request_id: req.id,
      status_code: 404,
    }),
  );
  app.addHook('onRequest', async (req) => {
    if (req.url.startsWith('/api/v4/system/ping')) return;
    const auth = req.headers.authorization ?? '';
    const [scheme, token] = auth.split(' ');
    if (!token || !/^(bearer|token)$/i.test(scheme ?? '') || token !== opts.token) {
      throw new MattermostError(401, 'api.context.session_expired.app_error', 'Invalid or expired session, please login again.', 'token=');
    }
  });

  app.get('/api/v4/system/ping', async () => ({ status: 'OK', ActiveSearchBackend: 'database' }));

  app.post('/api/v4/channels', async (req, reply) => {
    const body = (req.body ?? {}) as Partial<Record<keyof Channel, unknown>>;
    if (typeof body !== 'object' || Array.isArray(body)) {
      throw new MattermostError(400, 'api.context.invalid_body_param.app_error', 'Invalid or missing channel in request body.');
    }
    const team = typeof body.team_id === 'string' ? body.team_id : '';
    if (team !== teamId) {
      throw new MattermostError(403, 'api.context.permissions.app_error', 'You do not have the appropriate permissions.');
    }
    const name = typeof body.name === 'string' ? body.name : '';
    const displayName = typeof body.display_name === 'string' ? body.display_name : '';
    const purpose = typeof body.purpose === 'string' ? body.purpose : '';
    const header = typeof body.header === 'string' ? body.header : '';
    const type = body.type;
    if (name.length < 1 || name.length > 64 || !VALID_NAME.test(name)) {
      throw new MattermostError(400, 'model.channel.is_valid.name.app_error', 'Invalid name.', `id=`);
    }
    if ([...displayName].length < 1 || [...displayName].length > 64) {
      throw new MattermostError(400, 'model.channel.is_valid.display_name.app_error', 'Invalid display name.');
    }
    if (type !== 'O' && type !== 'P') {
      throw new MattermostError(400, 'model.channel.is_valid.type.app_error', 'Invalid type.');
    }
    if ([...purpose].length > 250) {
      throw new MattermostError(400, 'model.channel.is_valid.purpose.app_error', 'Invalid purpose.');
    }
    if (byName(team, name)) {
      throw new MattermostError(
        400,
        'store.sql_channel.save_channel.exists.app_error',
        'A channel with that name already exists on the same team.',
        'CreateChannel',
      );
    }
    const now = Date.now();
    const channel: Channel = {
      id: newMattermostId(),
      create_at: now,
      update_at: now,
      delete_at: 0,
      team_id: team,
      type,
      display_name: displayName,
      name,
      header,
      purpose,
      last_post_at: now,
      total_msg_count: 0,
      extra_update_at: 0,
      creator_id: botUserId,
      scheme_id: null,
      props: null,
      group_constrained: null,
      shared: false,
      total_msg_count_root: 0,
      policy_id: null,
      last_root_post_at: now,
    };
    channels.set(channel.id, channel);
    save();
    return reply.code(201).send(channel);
  });

  app.get<{ Params: { channel_id: string } }>('/api/v4/channels/:channel_id', async (req) => channelById(req.params.channel_id));

  app.get<{ Params: { team_id: string; channel_name: string }; Querystring: { include_deleted?: string } }>(
    '/api/v4/teams/:team_id/channels/name/:channel_name',
    async (req) => {
      const c = byName(req.params.team_id, req.params.channel_name);
      if (!c || (c.delete_at > 0 && req.query.include_deleted !== 'true')) {
        throw new MattermostError(404, 'app.channel.get_by_name.missing.app_error', 'Channel does not exist.', 'GetChannelByName');
      }
      return c;
    },
  );

  app.delete<{ Params: { channel_id: string } }>('/api/v4/channels/:channel_id', async (req) => {
    const c = channelById(req.params.channel_id);
    if (c.delete_at > 0) {
      throw new MattermostError(400, 'api.channel.delete_channel.deleted.app_error', 'The channel has been archived or deleted.');
    }
    const now = Date.now();
    c.delete_at = now;
    c.update_at = now;
    save();
    return { status: 'OK' };
  });

  app.post<{ Params: { channel_id: string } }>('/api/v4/channels/:channel_id/restore', async (req) => {
    const c = channelById(req.params.channel_id);
    if (c.delete_at === 0) {
      throw new MattermostError(400, 'api.channel.restore_channel.restored.app_error', 'Unable to unarchive channel. The channel is not archived.');
    }
    c.delete_at = 0;
    c.update_at = Date.now();
    save();
    return c;
  });

  app.addHook('onSend', async (req, reply) => {
    reply.header('x-request-id', req.id);
    reply.header('x-version-id', '10.5.0.standin');
  });

  const host = opts.host ?? '127.0.0.1';
  await app.listen({ host, port: opts.port });
  return { url: `http://${host}:${opts.port}`, teamId, close: () => app.close() };
}

/** Run directly: `tsx sandbox/chat/server.ts` (CHAT_PORT, CHAT_TOKEN, CHAT_TEAM_ID; channels under DATA_DIR/chat). */
if (import.meta.url === `file://${process.argv[1]}`) {
  const { config } = await import('../../lib/config.js');
  const cfg = config();
  const chat = await startChatStandIn({
    host: cfg.CHAT_HOST,
    port: cfg.CHAT_PORT,
    token: cfg.CHAT_TOKEN,
    teamId: cfg.CHAT_TEAM_ID,
    dir: path.join(cfg.DATA_DIR, 'chat'),
  });
  console.log(`chat stand-in (Mattermost API v4) on ${chat.url}, team ${chat.teamId}`);
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => void chat.close());
}
