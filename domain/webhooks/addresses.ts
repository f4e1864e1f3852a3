/**
 * Where webhooks may go ("URL rules" in the docs). Checked twice:
 * - when an endpoint is saved (`urlProblems`): scheme, credentials, length, a literal address;
 * - when a socket connects (`guardedLookup`, the `lookup` of the sending agents): the address the
 *   name resolved to, the one the socket then connects to. A name that resolves to a public
 *   address when saved and to 10.0.0.1 later (DNS rebinding) is refused on that connect.
 * Only ordinary unicast addresses pass (ipaddr.js's ranges: private, loopback, link-local incl.
 * 169.254.169.254 metadata, CGNAT 100.64/10, unique-local, multicast, reserved … are refused),
 * unless the address is in the allow-list (CIDRs, for dev and tests).
 */
import { lookup as systemLookup, Resolver, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

export class ForbiddenAddressError extends Error {
  override name = 'ForbiddenAddressError';
  readonly code = 'EWEBHOOKADDRESS';
}

export class AddressPolicy {
  private readonly allowed: [ipaddr.IPv4 | ipaddr.IPv6, number][];

  constructor(allowList: string) {
    this.allowed = allowList
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean)
      .map((cidr) =>
        cidr.includes('/')
          ? ipaddr.parseCIDR(cidr)
          : [ipaddr.parse(cidr), ipaddr.parse(cidr).kind() === 'ipv4' ? 32 : 128],
      );
  }

  /** Why `ip` may not be connected to, or undefined when it may. */
  refusal(ip: string): string | undefined {
    if (!ipaddr.isValid(ip)) return `"${ip}" is not an IP address`;
    let addr = ipaddr.parse(ip);
    if (addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress())
      addr = (addr as ipaddr.IPv6).toIPv4Address();
    for (const [net, bits] of this.allowed) if (net.kind() === addr.kind() && addr.match(net, bits)) return undefined;
    const range = addr.range();
    return range === 'unicast' ? undefined : `${ip} is a ${range} address`;
  }

  /**
   * A `lookup` for http.Agent / net.connect: resolves (system resolver, or `dnsServers`), then
   * refuses the connection when any address is not allowed.
   */
  guardedLookup(dnsServers: string[] = []) {
    const resolver = dnsServers.length > 0 ? new Resolver() : undefined;
    resolver?.setServers(dnsServers);
    const resolve = (hostname: string, cb: (err: Error | null, addrs: LookupAddress[]) => void) => {
      if (!resolver) return systemLookup(hostname, { all: true }, (err, addrs) => cb(err, addrs ?? []));
      resolver.resolve4(hostname, (err, addrs) =>
        cb(
          err,
          (addrs ?? []).map((address) => ({ address, family: 4 })),
        ),
      );
    };
    return (hostname: string, options: { all?: boolean } | number, callback: (...args: unknown[]) => void) => {
      resolve(hostname, (err, addrs) => {
        if (err) return callback(err);
        if (addrs.length === 0)
          return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }));
        for (const a of addrs) {
          const why = this.refusal(a.address);
          if (why) return callback(new ForbiddenAddressError(`${hostname} resolves to a forbidden address: ${why}`));
        }
        if (typeof options === 'object' && options.all) return callback(null, addrs);
        callback(null, addrs[0]!.address, addrs[0]!.family);
      });
    };
  }
}

const MAX_URL_LENGTH = 2048;

/** What is wrong with `raw` as a webhook URL (checked when saved; the address is checked again at connect time). */
export function urlProblems(raw: string, opts: { allowHttp: boolean; policy: AddressPolicy }): string[] {
  if (raw.length > MAX_URL_LENGTH) return [`url must be at most ${MAX_URL_LENGTH} characters`];
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return ['url must be an absolute URL such as https://example.com/webhooks'];
  }
  const problems: string[] = [];
  if (url.protocol !== 'https:' && !(opts.allowHttp && url.protocol === 'http:')) {
    problems.push(opts.allowHttp ? 'url must use https or http' : 'url must use https');
  }
  if (url.username || url.password) problems.push('url must not contain credentials (user:password@)');
  if (url.hash) problems.push('url must not contain a fragment');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!host) problems.push('url must name a host');
  else if (isIP(host)) {
    const why = opts.policy.refusal(host);
    if (why) problems.push(`url must not point at a private, loopback, link-local or metadata address (${why})`);
  } else if (host === 'localhost' || host.endsWith('.localhost')) {
    const why = opts.policy.refusal('127.0.0.1');
    if (why) problems.push('url must not point at localhost');
  }
  return problems;
}
