/**
 * XML-RPC on the wire, with the `xmlrpc` package's serializer and (sax-based) deserializer: used
 * by the platform's ERP client and by the ERP stand-in, so both speak exactly the same format.
 */
import { createRequire } from 'node:module';
import { PassThrough } from 'node:stream';

const require = createRequire(import.meta.url);

interface XmlRpcDeserializer {
  deserializeMethodCall(
    stream: NodeJS.ReadableStream,
    cb: (err: Error | null, method?: string, params?: unknown[]) => void,
  ): void;
  deserializeMethodResponse(
    stream: NodeJS.ReadableStream,
    cb: (err: (Error & { faultCode?: unknown; faultString?: unknown }) | null, value?: unknown) => void,
  ): void;
}
const serializer = require('xmlrpc/lib/serializer.js') as {
  serializeMethodCall(method: string, params: unknown[]): string;
  serializeMethodResponse(value: unknown): string;
  serializeFault(fault: { faultCode: number; faultString: string }): string;
};
const Deserializer = require('xmlrpc/lib/deserializer.js') as new (encoding?: string) => XmlRpcDeserializer;

/** An XML-RPC fault as received: Odoo's codes are 1 (application error), 2 (warning / user error), 3 (access denied), 4 (access error). */
export class XmlRpcFault extends Error {
  override name = 'XmlRpcFault';
  constructor(
    readonly faultCode: number,
    readonly faultString: string,
  ) {
    super(faultString);
  }
}

const streamOf = (body: Buffer | string) => {
  const stream = new PassThrough();
  stream.end(body);
  return stream;
};

export const serializeMethodCall = (method: string, params: unknown[]) =>
  serializer.serializeMethodCall(method, params);
export const serializeMethodResponse = (value: unknown) => serializer.serializeMethodResponse(value);
export const serializeFault = (faultCode: number, faultString: string) =>
  serializer.serializeFault({ faultCode, faultString });

export function parseMethodCall(body: Buffer | string): Promise<{ method: string; params: unknown[] }> {
  return new Promise((resolve, reject) => {
    new Deserializer().deserializeMethodCall(streamOf(body), (err, method, params) =>
      err ? reject(err) : resolve({ method: method!, params: params ?? [] }),
    );
  });
}

/** The response's value; rejects with XmlRpcFault for a fault, with an Error for anything malformed. */
export function parseMethodResponse(body: Buffer | string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    new Deserializer().deserializeMethodResponse(streamOf(body), (err, value) => {
      if (!err) return resolve(value);
      if (err.faultCode !== undefined)
        return reject(new XmlRpcFault(Number(err.faultCode), String(err.faultString ?? '')));
      reject(err);
    });
  });
}
