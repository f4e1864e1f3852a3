/**
 * How service keys sit in a Kubernetes Secret (SECRET_STORE=kubernetes). One Secret per caller by
 * default (KUBERNETES_SECRET_NAME `plana-service-keys-{caller}`, so a service mounts only its own
 * keys; a name without `{caller}` puts every pair in one Secret). Per caller → target pair two data
 * keys, each a JSON document `{ keyId, key, version, createdAt }`:
 *   `<caller>.<target>`       the current version (what consumers send)
 *   `<caller>.<target>.next`  the other version: the pending one during a rotation, the previous one
 *                             after the switch (so a roll-back is one more switch)
 * The writer (kubernetes-secret-writer.ts) and the consumer's volume (kubernetes-secret-volume.ts)
 * share these rules.
 */

/** What one data key of the Secret (one file of the volume) holds. */
export interface StoredVersion {
  keyId: string;
  key: string;
  version: number;
  createdAt: string;
}

/** A change to a Secret's data: a new JSON document per data key, null removes the key. */
export type DataChange = Record<string, string | null>;

export const secretDataKey = (caller: string, target: string) => `${caller}.${target}`;
export const nextDataKey = (caller: string, target: string) => `${secretDataKey(caller, target)}.next`;

/** A stored document, or undefined when absent or not one (its content is never echoed: it may hold a key). */
export function parseVersion(raw: string | undefined): StoredVersion | undefined {
  if (raw === undefined) return undefined;
  try {
    const v = JSON.parse(raw) as Partial<StoredVersion>;
    if (typeof v.key === 'string' && typeof v.keyId === 'string' && Number.isInteger(v.version)) {
      return {
        key: v.key,
        keyId: v.keyId,
        version: v.version!,
        createdAt: typeof v.createdAt === 'string' ? v.createdAt : new Date(0).toISOString(),
      };
    }
  } catch {
    // fall through
  }
  return undefined;
}

/** The pair's two versions as the Secret's (decoded) data holds them. */
export function pairVersions(data: Record<string, string>, caller: string, target: string) {
  return {
    current: parseVersion(data[secretDataKey(caller, target)]),
    next: parseVersion(data[nextDataKey(caller, target)]),
  };
}

/** A new version as `.next`, or as current (the old current kept as `.next`). */
export function placeVersion(
  caller: string,
  target: string,
  current: StoredVersion | undefined,
  v: StoredVersion,
  makeCurrent: boolean,
): DataChange {
  if (!makeCurrent) return { [nextDataKey(caller, target)]: JSON.stringify(v) };
  return swap(caller, target, current, v);
}

/** `next` becomes current; the old current stays as `.next` for a roll-back. */
export function swap(caller: string, target: string, current: StoredVersion | undefined, next: StoredVersion) {
  return {
    [secretDataKey(caller, target)]: JSON.stringify(next),
    [nextDataKey(caller, target)]: current ? JSON.stringify(current) : null,
  };
}
