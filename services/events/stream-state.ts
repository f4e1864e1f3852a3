/** What `GET /api/v1/events/info` reports: the stream's length and ends, its groups and their consumers. */
import type { Redis } from 'ioredis';
import { Type, type Static } from 'typebox';

export const StreamInfoSchema = Type.Object({
  stream: Type.String(),
  length: Type.Integer(),
  maxLen: Type.Integer(),
  firstId: Type.Union([Type.String(), Type.Null()]),
  lastId: Type.Union([Type.String(), Type.Null()]),
  entriesAdded: Type.Integer(),
  groups: Type.Array(
    Type.Object({
      name: Type.String(),
      lastDeliveredId: Type.String(),
      pending: Type.Integer(),
      lag: Type.Union([Type.Integer(), Type.Null()], {
        description: 'entries not yet delivered to the group; null when Redis cannot tell (after deletions)',
      }),
      consumers: Type.Array(Type.Object({ name: Type.String(), pending: Type.Integer(), idleMs: Type.Integer() })),
    }),
  ),
});

type XInfo = (string | number | null | XInfo)[];
const asRecord = (flat: XInfo): Record<string, unknown> => {
  const out: Record<string, unknown> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) out[String(flat[i])] = flat[i + 1];
  return out;
};

export async function streamState(
  redis: Redis,
  stream: string,
  maxLen: number,
): Promise<Static<typeof StreamInfoSchema>> {
  const empty = { stream, length: 0, maxLen, firstId: null, lastId: null, entriesAdded: 0, groups: [] };
  const exists = await redis.exists(stream);
  if (!exists) return empty;
  const info = asRecord((await redis.xinfo('STREAM', stream)) as XInfo);
  const first = info['first-entry'] as XInfo | null;
  const last = info['last-entry'] as XInfo | null;
  const rawGroups = (await redis.xinfo('GROUPS', stream)) as XInfo[];
  const groups = await Promise.all(rawGroups.map((raw) => groupState(redis, stream, asRecord(raw))));
  return {
    ...empty,
    length: Number(info.length),
    firstId: first ? String(first[0]) : null,
    lastId: last ? String(last[0]) : null,
    entriesAdded: Number(info['entries-added'] ?? 0),
    groups,
  };
}

async function groupState(redis: Redis, stream: string, g: Record<string, unknown>) {
  const name = String(g.name);
  const consumers = ((await redis.xinfo('CONSUMERS', stream, name)) as XInfo[]).map((c) => {
    const r = asRecord(c);
    return { name: String(r.name), pending: Number(r.pending), idleMs: Number(r.idle) };
  });
  return {
    name,
    lastDeliveredId: String(g['last-delivered-id']),
    pending: Number(g.pending),
    lag: g.lag === null || g.lag === undefined ? null : Number(g.lag),
    consumers,
  };
}
