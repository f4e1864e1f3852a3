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
import path from 'node:path';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { ChannelStore, MattermostError, newMattermostId, type Channel } from './channels.js';

export { newMattermostId, type Channel } from './channels.js';

export interface ChatStandIn {
  url: string;
  teamId: string;
  close(): Promise<void>;
}

/** The team the stand-in serves unless told otherwise (the CHAT_TEAM_ID default). */
export const DEFAULT_TEAM_ID = 'planasupportteam0000000000';

export async function startChatStandIn(opts: {
  host?: string;
  port: number;
  token: string;
  teamId?: string;
  dir?: string;
}): Promise<ChatStandIn> {
  const teamId = opts.teamId ?? DEFAULT_TEAM_ID;
  const botUserId = newMattermostId();
  const channels = new ChannelStore(opts.dir ? path.join(opts.dir, 'channels.json') : undefined);
  const app = Fastify({ logger: false, genReqId: () => newMattermostId() });
  app.setErrorHandler(answerError);
  app.setNotFoundHandler(answerNotFound);
  app.addHook('onRequest', requireBotToken(opts.token));
  app.get('/api/v4/system/ping', async () => ({ status: 'OK', ActiveSearchBackend: 'database' }));
  addChannelRoutes(app, channels, teamId, botUserId);
  app.addHook('onSend', async (req, reply) => {
    reply.header('x-request-id', req.id);
    reply.header('x-version-id', '10.5.0.standin');
  });

  const host = opts.host ?? '127.0.0.1';
  await app.listen({ host, port: opts.port });
  return { url: `http://${host}:${opts.port}`, teamId, close: () => app.close() };
}

/** Mattermost's answer to a path it has no API call for. */
function answerNotFound(req: FastifyRequest, reply: FastifyReply) {
  return reply.code(404).send({
    id: 'api.context.404.app_error',
    message: 'Sorry, we could not find the page.',
    detailed_error: `There doesn't appear to be an api call for the url='${req.url.split('?')[0]}'.`,
    request_id: req.id,
    status_code: 404,
  });
}

/** Every call but the ping carries the bot's token (`Bearer` or `Token`), else Mattermost's 401. */
function requireBotToken(botToken: string) {
  return async (req: FastifyRequest) => {
    if (req.url.startsWith('/api/v4/system/ping')) return;
    const auth = req.headers.authorization ?? '';
    const [scheme, token] = auth.split(' ');
    if (!token || !/^(bearer|token)$/i.test(scheme ?? '') || token !== botToken) {
      throw new MattermostError(
        401,
        'api.context.session_expired.app_error',
        'Invalid or expired session, please login again.',
        'token=',
      );
    }
  };
}

/** The channel calls: create, read by id or by name, archive and restore. */
function addChannelRoutes(app: FastifyInstance, channels: ChannelStore, teamId: string, botUserId: string) {
  app.post('/api/v4/channels', async (req, reply) => {
    const channel = channels.create((req.body ?? {}) as Partial<Record<keyof Channel, unknown>>, teamId, botUserId);
    return reply.code(201).send(channel);
  });

  app.get<{ Params: { channel_id: string } }>('/api/v4/channels/:channel_id', async (req) =>
    channels.byId(req.params.channel_id),
  );

  app.get<{ Params: { team_id: string; channel_name: string }; Querystring: { include_deleted?: string } }>(
    '/api/v4/teams/:team_id/channels/name/:channel_name',
    async (req) => {
      const c = channels.byName(req.params.team_id, req.params.channel_name);
      if (!c || (c.delete_at > 0 && req.query.include_deleted !== 'true')) {
        throw new MattermostError(
          404,
          'app.channel.get_by_name.missing.app_error',
          'Channel does not exist.',
          'GetChannelByName',
        );
      }
      return c;
    },
  );

  app.delete<{ Params: { channel_id: string } }>('/api/v4/channels/:channel_id', async (req) => {
    channels.archive(req.params.channel_id);
    return { status: 'OK' };
  });

  app.post<{ Params: { channel_id: string } }>('/api/v4/channels/:channel_id/restore', async (req) =>
    channels.restore(req.params.channel_id),
  );
}

/** Any error in Mattermost's error shape; a body Fastify cannot read is Mattermost's invalid body. */
function answerError(err: Error & { statusCode?: number }, req: FastifyRequest, reply: FastifyReply) {
  const e =
    err instanceof MattermostError
      ? err
      : err.statusCode === 400 || err.statusCode === 415
        ? new MattermostError(
            400,
            'api.context.invalid_body_param.app_error',
            'Invalid or missing channel in request body.',
          )
        : new MattermostError(500, 'app.internal_error', 'An internal error occurred.');
  return reply.code(e.statusCode).send({
    id: e.id,
    message: e.message,
    detailed_error: e.where,
    request_id: req.id,
    status_code: e.statusCode,
  });
}

/**
 * Run directly: `npm run start:chat` (CHAT_HOST, CHAT_PORT, CHAT_TOKEN, CHAT_TEAM_ID, with the
 * development defaults of `npm run dev`; channels under DATA_DIR/chat).
 */
if (import.meta.url === `file://${process.argv[1]}`) {
  const env = process.env;
  const chat = await startChatStandIn({
    host: env.CHAT_HOST ?? '127.0.0.1',
    port: Number(env.CHAT_PORT ?? 8065),
    token: env.CHAT_TOKEN ?? 'dev-chat-bot-token-000000000000',
    teamId: env.CHAT_TEAM_ID ?? 'planasupportteam0000000000',
    dir: path.join(process.env.DATA_DIR ?? (process.env.ERP_BACKEND === 'odoo' ? '.data/odoo' : '.data'), 'chat'),
  });
  console.log(`chat stand-in (Mattermost API v4) on ${chat.url}, team ${chat.teamId}`);
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => void chat.close());
}
