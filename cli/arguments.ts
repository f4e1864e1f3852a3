/**
 * What the CLI checks itself before it calls the ops API, so a mistake is named by the flag or
 * argument the person typed (commander's parsers: a thrown InvalidArgumentError becomes
 * "error: option '--x <x>' argument 'y' is invalid. <why>").
 */
import { InvalidArgumentError, Option } from 'commander';
import { tenantNameSchema } from '../domain/tenants/tenant-client.js';

const fail = (why: string): never => {
  throw new InvalidArgumentError(why);
};

/** A tenant name (= subdomain, = workspace slug): a DNS label of at most 30 characters. */
export function tenantName(value: string): string {
  const parsed = tenantNameSchema.safeParse(value);
  return parsed.success ? parsed.data : fail(`A tenant name ${parsed.error.issues[0]!.message}.`);
}

/** A service name of a caller → target pair (service-keys lists them). */
export function serviceName(value: string): string {
  return /^[a-z][a-z0-9-]{0,39}$/.test(value)
    ? value
    : fail('A service name is lowercase letters, digits and hyphens (see `service-keys`).');
}

export function positiveInteger(value: string): number {
  const n = Number(value);
  return Number.isInteger(n) && n >= 1 ? n : fail('It must be a whole number of at least 1.');
}

export function positiveNumber(value: string): number {
  const n = Number(value);
  return value.trim() !== '' && Number.isFinite(n) && n > 0 ? n : fail('It must be a number greater than 0.');
}

/** YYYY-MM-DD, a real day. */
export function isoDate(value: string): string {
  const ok =
    /^\d{4}-\d{2}-\d{2}$/.test(value) &&
    !Number.isNaN(Date.parse(`${value}T00:00:00Z`)) &&
    new Date(`${value}T00:00:00Z`).toISOString().startsWith(value);
  return ok ? value : fail('It must be a date such as 2026-11-20 (YYYY-MM-DD).');
}

/** An ISO 8601 time with a zone, e.g. 2026-11-20T00:00:00Z. */
export function isoTime(value: string): string {
  const ok =
    /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(value) &&
    !Number.isNaN(Date.parse(value));
  return ok ? value : fail('It must be an ISO time with a zone, such as 2026-11-20T00:00:00Z.');
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export function uuid(what: string) {
  return (value: string): string =>
    UUID.test(value) ? value : fail(`${what} is a UUID such as 3f6c1e2a-…-…; list them to copy one.`);
}

export function pattern(re: RegExp, why: string) {
  return (value: string): string => (re.test(value) ? value : fail(why));
}

/** `-o, --output` with the formats a command prints. */
export function outputOption(formats: string[]): Option {
  return new Option('-o, --output <format>', formats.join(' or ')).choices(formats).default(formats[0]);
}
