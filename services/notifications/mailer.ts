import nodemailer, { type Transporter } from 'nodemailer';
import { inChildSpan } from '../../lib/tracing.js';

export interface Mail {
  to: string;
  subject: string;
  text: string;
  html?: string;
  headers?: Record<string, string>;
}

export interface Mailer {
  send(mail: Mail): Promise<{ messageId: string }>;
  close(): void;
}

/** SMTP through nodemailer (the local SMTP sink in dev and tests, a relay in production). */
export function createSmtpMailer(opts: { host: string; port: number; from: string }): Mailer {
  const transport: Transporter = nodemailer.createTransport({
    host: opts.host,
    port: opts.port,
    secure: false,
    ignoreTLS: opts.host === '127.0.0.1' || opts.host === 'localhost',
    connectionTimeout: 5_000,
    greetingTimeout: 5_000,
    socketTimeout: 10_000,
  });
  return {
    async send(mail) {
      // inside a trace, the SMTP exchange is a span of it (the recipient is personal data: not an attribute)
      return inChildSpan('smtp send', { 'server.address': opts.host, 'server.port': opts.port }, async (span) => {
        const info = await transport.sendMail({ from: opts.from, ...mail });
        span?.setAttribute('plana.mail.message_id', info.messageId);
        return { messageId: info.messageId };
      });
    },
    close: () => transport.close(),
  };
}
