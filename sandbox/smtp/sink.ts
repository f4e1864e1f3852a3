/**
 * A stand-in for the outside mail relay: a real SMTP server (the `smtp-server` package) that
 * accepts every message and stores it in a folder, one `.eml` (the raw message) and one `.json`
 * (envelope, subject, text) per message, where tests and a person can read them.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { SMTPServer } from 'smtp-server';
import { simpleParser } from 'mailparser';

export interface StoredMail {
  id: string;
  receivedAt: string;
  from: string;
  to: string[];
  subject: string;
  text: string;
  headers: Record<string, string>;
}

export interface SmtpSink {
  port: number;
  dir: string;
  close(): Promise<void>;
}

export async function startSmtpSink(opts: { host?: string; port: number; dir: string }): Promise<SmtpSink> {
  mkdirSync(opts.dir, { recursive: true });
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    size: 10 * 1024 * 1024,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', async () => {
        try {
          const raw = Buffer.concat(chunks);
          const parsed = await simpleParser(raw);
          const receivedAt = new Date().toISOString();
          const id = `${receivedAt.replace(/[:.]/g, '-')}-${randomUUID().slice(0, 8)}`;
          const headers: Record<string, string> = {};
          for (const [k, v] of parsed.headers) if (typeof v === 'string') headers[k] = v;
          const mail: StoredMail = {
            id,
            receivedAt,
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            to: session.envelope.rcptTo.map((r) => r.address),
            subject: parsed.subject ?? '',
            text: parsed.text ?? '',
            headers,
          };
          writeFileSync(path.join(opts.dir, `${id}.eml`), raw);
          writeFileSync(path.join(opts.dir, `${id}.json`), JSON.stringify(mail, null, 2));
          callback();
        } catch (err) {
          callback(err as Error);
        }
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host ?? '127.0.0.1', () => resolve());
  });
  return {
    port: opts.port,
    dir: opts.dir,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** The messages stored in a sink folder, oldest first. */
export function readMailbox(dir: string): StoredMail[] {
  let files: string[];
  try {
    files = readdirSync(dir)
      .filter((f) => f.endsWith('.json'))
      .sort();
  } catch {
    return [];
  }
  return files.map((f) => JSON.parse(readFileSync(path.join(dir, f), 'utf8')) as StoredMail);
}
