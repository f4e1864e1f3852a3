/**
 * A minimal browser for tests that play one through HTTP: a cookie jar per host name, manual
 * redirects, form posts. Host names under `localDomain` (e.g. the tenants' ERP hosts) resolve to
 * 127.0.0.1, as a browser with a hosts entry would: the request keeps its Host.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { Agent, fetch as undiciFetch } from 'undici';

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** An undici dispatcher resolving every host under `domain` to 127.0.0.1, others as usual. */
export function loopbackFor(domain: string): Agent {
  return new Agent({
    connect: {
      lookup: (hostname: string, options: { all?: boolean }, cb: LookupCallback) => {
        if (hostname === domain || hostname.endsWith(`.${domain}`))
          return options.all ? cb(null, [{ address: '127.0.0.1', family: 4 }]) : cb(null, '127.0.0.1', 4);
        dnsLookup(hostname, options as never, cb as never);
      },
    } as never,
  });
}

/** A minimal browser: a cookie jar per host name, manual redirects, form posts. */
export class Browser {
  private jar = new Map<string, Map<string, string>>();
  private readonly dispatcher?: Agent;

  constructor(opts: { localDomain?: string } = {}) {
    if (opts.localDomain) this.dispatcher = loopbackFor(opts.localDomain);
  }

  private remember(url: URL, res: { headers: Headers }) {
    const cookies = this.jar.get(url.hostname) ?? new Map<string, string>();
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const i = pair!.indexOf('=');
      const name = pair!.slice(0, i);
      const value = pair!.slice(i + 1);
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(c)) cookies.delete(name);
      else cookies.set(name, value);
    }
    this.jar.set(url.hostname, cookies);
  }

  cookie(host: string, name: string) {
    return this.jar.get(host)?.get(name);
  }

  /** Forgets the cookies of `host` (e.g. the ERP's session, keeping the provider's). */
  forget(host: string) {
    this.jar.delete(host);
  }

  setCookie(host: string, name: string, value: string) {
    const cookies = this.jar.get(host) ?? new Map<string, string>();
    cookies.set(name, value);
    this.jar.set(host, cookies);
  }

  /**
   * Follows redirects; with `stopBefore`, returns the first redirect target starting with it instead;
   * `onRedirect` sees every redirect target followed or stopped before.
   * Every answer's body is read here, as a browser reads every page: the one returned is handed back
   * buffered, the redirects' are dropped. An undici body left unread pauses its connection, which
   * trips undici's assert(!this.paused) (an uncatchable error) when the server then closes the socket.
   */
  async request(
    url: string,
    init: {
      method?: string;
      form?: Record<string, string>;
      stopBefore?: string;
      onRedirect?: (url: string) => void;
    } = {},
  ): Promise<{ url: string; res: Response }> {
    let current = new URL(url);
    let method = init.method ?? 'GET';
    let body: string | undefined = init.form ? new URLSearchParams(init.form).toString() : undefined;
    for (let hops = 0; hops < 20; hops++) {
      const cookies = [...(this.jar.get(current.hostname) ?? new Map())].map(([k, v]) => `${k}=${v}`).join('; ');
      const fetchInit = {
        method,
        redirect: 'manual' as const,
        headers: {
          ...(cookies ? { cookie: cookies } : {}),
          ...(body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
        },
        body,
      };
      const res = (
        this.dispatcher
          ? await undiciFetch(current, { ...fetchInit, dispatcher: this.dispatcher })
          : await fetch(current, fetchInit)
      ) as Response;
      this.remember(current, res);
      const location = res.headers.get('location');
      if (res.status >= 300 && res.status < 400 && location) {
        current = new URL(location, current);
        init.onRedirect?.(current.toString());
        if (init.stopBefore && current.toString().startsWith(init.stopBefore))
          return { url: current.toString(), res: await buffered(res) };
        await res.arrayBuffer();
        method = 'GET';
        body = undefined;
        continue;
      }
      return { url: current.toString(), res: await buffered(res) };
    }
    throw new Error('too many redirects');
  }

  /** Submits the one form of an HTML page of the provider with the given fields. */
  async submit(page: { url: string; res: Response }, fields: Record<string, string>, stopBefore?: string) {
    const html = await page.res.text();
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    if (!action) throw new Error(`no form on ${page.url}: ${html.slice(0, 200)}`);
    const hidden = Object.fromEntries(
      [...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]),
    );
    return this.request(new URL(action, page.url).toString(), {
      method: 'POST',
      form: { ...hidden, ...fields },
      stopBefore,
    });
  }
}

/** The answer with its body read to the end: a Response of the same status and headers over the bytes. */
async function buffered(res: Response): Promise<Response> {
  const bytes = await res.arrayBuffer();
  const nullBody = [204, 205, 304].includes(res.status);
  return new Response(nullBody ? null : bytes, {
    status: res.status,
    statusText: res.statusText,
    headers: res.headers,
  });
}

/** The target of the link whose text includes `label` on an HTML page (entities in the href decoded), if any. */
export function linkTo(html: string, label: string): string | undefined {
  for (const m of html.matchAll(/<a\b[^>]*\bhref="([^"]*)"[^>]*>([\s\S]*?)<\/a>/g)) {
    if (m[2]!.replace(/<[^>]*>/g, '').includes(label))
      return m[1]!.replace(/&#(\d+);/g, (_s, c: string) => String.fromCharCode(Number(c))).replace(/&amp;/g, '&');
  }
  return undefined;
}
