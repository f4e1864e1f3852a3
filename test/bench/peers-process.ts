/**
 * The peers outside the platform as one process of their own, for `npm run bench:provision`: the
 * ERP stand-in, the support chat stand-in and the SMTP sink, on the ports of the bench's
 * environment (ERP_PORT, CHAT_PORT, SMTP_PORT), so their CPU time is theirs and not the platform's.
 * Writes "ready" on stdout once all three listen; stops on SIGTERM.
 */
import path from 'node:path';
import { parseConfig } from '../../lib/config.js';
import { createLogger } from '../../lib/logger.js';
import { startChatStandIn } from '../../sandbox/chat/server.js';
import { startErpStandIn } from '../../sandbox/erp/server.js';
import { startSmtpSink } from '../../sandbox/smtp/sink.js';

const cfg = parseConfig(process.env);
const sink = await startSmtpSink({ port: cfg.SMTP_PORT, dir: path.join(process.env.BENCH_DIR!, 'mail') });
const erp = await startErpStandIn({
  host: '127.0.0.1',
  port: cfg.ERP_PORT,
  platformDatabaseUrl: cfg.DATABASE_URL,
  erpDatabaseUrl: cfg.ERP_DATABASE_URL,
  logger: createLogger({ level: 'silent' }),
});
const chat = await startChatStandIn({
  host: '127.0.0.1',
  port: cfg.CHAT_PORT,
  token: cfg.CHAT_TOKEN,
  teamId: cfg.CHAT_TEAM_ID,
});
process.stdout.write('ready\n');
process.once('SIGTERM', () => {
  void Promise.allSettled([sink.close(), erp.close(), chat.close()]).then(() => process.exit(0));
});
