/**
 * Which methods a path has, for the 405 answers (with `Allow`): the platform's route patterns as
 * resources. The most specific pattern matching a path is its resource, as for the router
 * (`/apikeys/self` is not `/apikeys/:id`).
 */
import type { FastifyReply } from 'fastify';
import { sendProblem } from './http-problems.js';

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'QUERY'];

function patternOf(url: string): RegExp {
  const source = url
    .split('/')
    .map((seg) => (seg.startsWith(':') ? '[^/]+' : seg === '*' ? '.*' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^${source}$`);
}

const sampleOf = (url: string) => url.replace(/:[^/]+/g, 'x').replace('*', 'x');

type Resource = { url: string; pattern: RegExp; staticSegments: number; methods: Set<string> };

/** The resources (route patterns) of one server and their methods, filled as its routes are added. */
export class ResourceTable {
  private readonly routes: Resource[] = [];
  /** Per route pattern, the more specific resources it overlaps (found once, on first use). */
  private readonly shadowed = new Map<string, Resource[]>();

  add(url: string, method: string | string[]): void {
    const pattern = patternOf(url);
    let entry = this.routes.find((r) => r.pattern.source === pattern.source);
    if (!entry) {
      const segments = url.split('/').filter(Boolean);
      const staticSegments =
        segments.filter((s) => !s.startsWith(':') && s !== '*').length - (segments.includes('*') ? 0.5 : 0);
      this.routes.push((entry = { url, pattern, staticSegments, methods: new Set() }));
    }
    for (const m of [method].flat()) entry.methods.add(m.toUpperCase());
  }

  /**
   * A route with parameters can shadow a more specific resource for other methods: DELETE
   * /apikeys/self reaches DELETE /apikeys/:id, yet /apikeys/self is a resource of its own with GET
   * only, so that is a 405. Answers the methods of the resource `path` really is, when the route
   * `routeUrl` (which the router chose) does not take `method` there; undefined otherwise. Most
   * routes shadow nothing and pay one map look-up.
   */
  shadowingMethods(routeUrl: string, path: string, method: string): Set<string> | undefined {
    const shadows = this.shadowedBy(routeUrl);
    if (shadows.length === 0) return undefined;
    const resource = shadows.find((r) => r.pattern.test(path));
    if (!resource || resource.methods.has(method)) return undefined;
    return new Set(resource.methods);
  }

  /** Whether the route `routeUrl` overlaps any more specific resource (one map look-up once known). */
  shadowsAny(routeUrl: string): boolean {
    return this.shadowedBy(routeUrl).length > 0;
  }

  /** The methods of the most specific resources matching `path` (empty when none does). */
  allowedMethods(path: string): Set<string> {
    const matching = this.routes.filter((r) => r.pattern.test(path));
    const best = Math.max(-1, ...matching.map((r) => r.staticSegments));
    const allowed = new Set<string>();
    for (const r of matching) if (r.staticSegments === best) for (const m of r.methods) allowed.add(m);
    return allowed;
  }

  private shadowedBy(url: string): Resource[] {
    let found = this.shadowed.get(url);
    if (!found) {
      const own = patternOf(url);
      const mine = this.routes.find((r) => r.pattern.source === own.source);
      found = this.routes.filter(
        (r) => r !== mine && r.staticSegments > (mine?.staticSegments ?? 0) && own.test(sampleOf(r.url)),
      );
      this.shadowed.set(url, found);
    }
    return found;
  }
}

/** 405 with `Allow` (HEAD wherever GET is). */
export function methodNotAllowed(reply: FastifyReply, method: string, path: string, allowed: Set<string>) {
  if (allowed.has('GET')) allowed.add('HEAD');
  const allow = METHODS.filter((m) => allowed.has(m)).join(', ');
  reply.header('allow', allow);
  return sendProblem(reply, 'METHOD_NOT_ALLOWED', `${method} is not allowed on ${path}; allowed: ${allow}.`);
}
