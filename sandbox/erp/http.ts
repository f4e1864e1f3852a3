/** The ERP stand-in's plain HTTP plumbing: request bodies, answers, and HTTP-level refusals. */
import type { IncomingMessage, ServerResponse } from 'node:http';

const MAX_BODY = 10 * 1024 * 1024;

/** A refusal at the HTTP level (not an Odoo fault): answered as plain text with its status. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** The tenant host a request is for (its Host without the port). */
export const hostOf = (req: IncomingMessage) => (req.headers.host ?? '').replace(/:\d+$/, '').toLowerCase();

/** The request's body; more than 10 MiB is an HttpError 413. */
export function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) {
        reject(new HttpError(413, '413 Request Entity Too Large'));
        req.destroy();
      } else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

export const json = (res: ServerResponse, status: number, body: unknown) =>
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
export const text = (res: ServerResponse, status: number, body: string) =>
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' }).end(body);
export const html = (res: ServerResponse, status: number, body: string) =>
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8' }).end(body);
