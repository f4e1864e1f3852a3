/**
 * An endpoint's delivery attempts: the newest page (looked at again on `reload`), older pages on
 * request (the API's `before` cursor), and every newer attempt seen since, so no gap opens between
 * them when new attempts push rows off the first page.
 */
import { useEffect, useState } from 'react';
import { api, call, inWorkspace } from '../../api/client';
import { useLoad } from '../../hooks';
import type { WorkspaceRef } from '../../nav';
import type { Attempt } from './endpoints';

/** The attempts of one page: the newest (looked at again every few seconds), then older ones on request. */
const ATTEMPTS_PAGE = 50;

/** Both lists in one, each attempt once, newest first; attempts of the same instant keep the API's order (ids are random). */
function mergeAttempts(a: Attempt[], b: Attempt[]): Attempt[] {
  const byId = new Map<string, Attempt>();
  for (const x of [...a, ...b]) byId.set(x.id, x);
  return [...byId.values()].sort((x, y) => y.attemptedAt.localeCompare(x.attemptedAt));
}

/** Attempts grouped by message (with its event type), newest message first. */
export function byMessage(attempts: Attempt[]) {
  const groups = new Map<string, Attempt[]>();
  for (const a of attempts) groups.set(a.messageId, [...(groups.get(a.messageId) ?? []), a]);
  return [...groups.entries()].map(([messageId, list]) => ({
    messageId,
    eventType: list[0]!.eventType,
    attempts: list,
  }));
}

export type Message = ReturnType<typeof byMessage>[number];

export function useAttempts(workspace: WorkspaceRef, endpointId: string) {
  const page = (before?: string) =>
    call(() =>
      api.GET('/api/portal/webhooks/{id}/attempts', {
        params: { path: { id: endpointId }, query: { limit: ATTEMPTS_PAGE, ...(before ? { before } : {}) } },
        ...inWorkspace(workspace.slug),
      }),
    );
  const newest = useLoad(() => page(), [endpointId]);
  const [kept, setKept] = useState<Attempt[]>([]);
  const [older, setOlder] = useState<{ more?: boolean; busy: boolean; error?: unknown }>({ busy: false });
  useEffect(() => {
    setKept([]);
    setOlder({ busy: false });
  }, [endpointId]);
  useEffect(() => {
    const latest = newest.data?.attempts;
    if (latest) setKept((k) => (k.length ? mergeAttempts(k, latest) : k));
  }, [newest.data]);
  const all = mergeAttempts(kept, newest.data?.attempts ?? []);

  async function loadOlder() {
    const oldest = all.at(-1);
    if (!oldest) return;
    setOlder((o) => ({ ...o, busy: true, error: undefined }));
    try {
      const { attempts } = await page(oldest.id);
      setKept(mergeAttempts(all, attempts));
      setOlder({ more: attempts.length === ATTEMPTS_PAGE, busy: false });
    } catch (error) {
      setOlder((o) => ({ ...o, busy: false, error }));
    }
  }

  return {
    /** the newest page as `useLoad` has it (loading, error) */
    newest,
    /** every attempt shown, newest first */
    all,
    hasOlder: older.more ?? newest.data?.attempts.length === ATTEMPTS_PAGE,
    /** older pages: `more` false once one came back short; busy, or the problem of the last one */
    older,
    loadOlder,
    reload: newest.reload,
  };
}

export type Attempts = ReturnType<typeof useAttempts>;
