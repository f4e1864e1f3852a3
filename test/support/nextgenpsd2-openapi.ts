/**
 * The Berlin Group NextGenPSD2 XS2A 1.3.11 OpenAPI document as a contract a test holds HTTP
 * exchanges to. scripts/bootstrap.sh puts the document into the cache folder (it comes from
 * adorsys' xs2a-impl jar on Maven Central, pinned by SHA-256); it is not part of the repository.
 *
 * Validation is openapi-backend's (the document dereferenced by @apidevtools/json-schema-ref-parser,
 * schemas compiled with Ajv, the formats date, date-time, uri, uuid and ipv4 checked by ajv-formats).
 * On top of what openapi-backend checks, `checkResponse` also requires that the operation declares
 * the status, that the content type is one the document lists for it, and that every response header
 * the document marks `required` is there (openapi-backend validates only the headers present).
 */
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import addFormats from 'ajv-formats';
import { OpenAPIBackend, type Document, type Operation } from 'openapi-backend';
import { parse } from 'yaml';

export const NEXTGENPSD2_OPENAPI = path.join(
  process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'),
  'plana',
  'nextgenpsd2-1.3.11',
  'psd2-api_v1.3.11-2021-10-01v1.yaml',
);

export interface Exchange {
  method: string;
  /** path with query string, e.g. `/v1/accounts/x/transactions?bookingStatus=booked` */
  url: string;
  headers: Record<string, string>;
  body?: unknown;
}

interface HeaderObject {
  required?: boolean;
  schema?: unknown;
}
interface ResponseObject {
  headers?: Record<string, HeaderObject>;
  content?: Record<string, unknown>;
}

export interface NextGenPsd2Contract {
  /** The operation the document has for this request, and what in the request breaks the document. */
  checkRequest(req: Exchange): { operation: Operation; errors: string[] };
  /** What in the response breaks the document for this operation. */
  checkResponse(operation: Operation, res: { status: number; headers: Headers; body: unknown }): string[];
}

/**
 * Prepares the document's schemas for Ajv, in place:
 * - OpenAPI 3.0 writes `exclusiveMinimum`/`exclusiveMaximum` as booleans next to `minimum`/`maximum`
 *   (JSON Schema draft 4); Ajv and openapi-backend's own check of the document read them as draft 7
 *   numbers. The document has one (`frequencyPerDay`: `minimum: 1, exclusiveMinimum: false`): such
 *   pairs are rewritten to their draft 7 meaning.
 * - With `closed`, an object schema that lists its `properties` and says nothing about others gets
 *   `additionalProperties: false`. The document leaves its objects open, so without this a misspelt
 *   optional field (`bookingdate`) or a body that is not NextGenPSD2 at all would pass.
 */
function prepareSchemas(node: unknown, closed: boolean): void {
  if (Array.isArray(node)) return node.forEach((n) => prepareSchemas(n, closed));
  if (!node || typeof node !== 'object') return;
  const o = node as Record<string, unknown>;
  for (const [flag, bound] of [
    ['exclusiveMinimum', 'minimum'],
    ['exclusiveMaximum', 'maximum'],
  ] as const) {
    if (typeof o[flag] !== 'boolean') continue;
    if (o[flag] && typeof o[bound] === 'number') {
      o[flag] = o[bound];
      delete o[bound];
    } else delete o[flag];
  }
  if (
    closed &&
    o.type === 'object' &&
    o.properties &&
    typeof o.properties === 'object' &&
    !('additionalProperties' in o)
  )
    o.additionalProperties = false;
  // examples are data, not schemas
  for (const [key, value] of Object.entries(o))
    if (key !== 'examples' && key !== 'example') prepareSchemas(value, closed);
}

const describeErrors = (
  where: string,
  errors: { instancePath?: string; message?: string; params?: unknown }[] | null | undefined,
) =>
  (errors ?? []).map(
    (e) => `${where}${e.instancePath ?? ''}: ${e.message ?? 'invalid'} ${JSON.stringify(e.params ?? {})}`,
  );

export async function nextGenPsd2Contract(opts: { closed?: boolean } = {}): Promise<NextGenPsd2Contract> {
  if (!existsSync(NEXTGENPSD2_OPENAPI))
    throw new Error(`${NEXTGENPSD2_OPENAPI} is missing: run \`npm run bootstrap\` first.`);
  const definition = parse(readFileSync(NEXTGENPSD2_OPENAPI, 'utf8')) as Document;
  prepareSchemas(definition, opts.closed ?? true);
  const api = new OpenAPIBackend({
    definition,
    strict: true,
    validate: true,
    // the document's patterns are written for JavaScript regular expressions without the u flag (`\-`)
    ajvOpts: { unicodeRegExp: false },
    customizeAjv: (ajv) => {
      addFormats.default(ajv, ['date', 'date-time', 'uri', 'uuid', 'ipv4']);
      // the document uses the non-standard `format: url` for hrefs that may be relative
      ajv.addFormat('url', true);
      return ajv;
    },
  });
  await api.init();

  return {
    checkRequest(req) {
      const u = new URL(req.url, 'http://bank.invalid');
      const request = {
        method: req.method,
        path: u.pathname,
        query: Object.fromEntries(u.searchParams),
        headers: req.headers,
        body: req.body,
      };
      const operation = api.matchOperation(request);
      if (!operation)
        return {
          operation: undefined as unknown as Operation,
          errors: [`the document has no operation ${req.method} ${u.pathname}`],
        };
      return { operation, errors: describeErrors('request', api.validateRequest(request, operation).errors) };
    },

    checkResponse(operation, res) {
      const id = operation.operationId!;
      const responses = operation.responses as Record<string, ResponseObject>;
      const declared = responses[String(res.status)] ?? responses[`${String(res.status)[0]}XX`] ?? responses.default;
      if (!declared)
        return [`${id}: status ${res.status} is not one the document declares (${Object.keys(responses).join(', ')})`];
      const errors: string[] = [];
      for (const [name, header] of Object.entries(declared.headers ?? {})) {
        if (header.required && !res.headers.has(name))
          errors.push(`${id} ${res.status}: required header ${name} is missing`);
      }
      const headers = Object.fromEntries(res.headers);
      errors.push(
        ...describeErrors(
          `${id} ${res.status} headers`,
          api.validateResponseHeaders(headers, operation, { statusCode: res.status }).errors,
        ),
      );
      const types = Object.keys(declared.content ?? {});
      const contentType = (res.headers.get('content-type') ?? '').split(';')[0]!.trim();
      if (types.length === 0) {
        if (res.body !== undefined) errors.push(`${id} ${res.status}: the document declares no body, got one`);
        return errors;
      }
      if (!types.includes(contentType))
        errors.push(`${id} ${res.status}: content type "${contentType}" is not one of ${types.join(', ')}`);
      errors.push(
        ...describeErrors(`${id} ${res.status} body`, api.validateResponse(res.body, operation, res.status).errors),
      );
      return errors;
    },
  };
}
