/**
 * XML-RPC on the stand-in's side of the wire: method calls read and responses and faults written
 * with the `xmlrpc` package's (sax-based) deserializer and serializer, as a Python `xmlrpc.server`
 * reads and writes them for Odoo.
 */
import { createRequire } from 'node:module';
import { PassThrough } from 'node:stream';

const require = createRequire(import.meta.url);

const serializer = require('xmlrpc/lib/serializer.js') as {
  serializeMethodResponse(value: unknown): string;
  serializeFault(fault: { faultCode: number; faultString: string }): string;
};
const Deserializer = require('xmlrpc/lib/deserializer.js') as new (encoding?: string) => {
  deserializeMethodCall(
    stream: NodeJS.ReadableStream,
    cb: (err: Error | null, method?: string, params?: unknown[]) => void,
  ): void;
};

export const methodResponse = (value: unknown): string => serializer.serializeMethodResponse(value);
export const fault = (faultCode: number, faultString: string): string =>
  serializer.serializeFault({ faultCode, faultString });

/** The `<methodCall>` of a request body: its method name and parameters. */
export function readMethodCall(body: Buffer): Promise<{ method: string; params: unknown[] }> {
  const stream = new PassThrough();
  stream.end(body);
  return new Promise((resolve, reject) => {
    new Deserializer().deserializeMethodCall(stream, (err, method, params) =>
      err ? reject(err) : resolve({ method: method ?? '', params: params ?? [] }),
    );
  });
}
