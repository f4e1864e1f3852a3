/**
 * What an endpoint's page does to it: a test event, enable or disable, reveal and rotate the signing
 * secret, replay one message or every failed one in a time range. One at a time (`action.busy`);
 * `notice` says what the last one did; `refresh` shows the endpoint and its attempts as they are now.
 */
import { useState, type FormEvent } from 'react';
import { api, call, inWorkspace } from '../../api/client';
import { isoOf, plural } from '../../format';
import { useAction } from '../../hooks';
import type { WorkspaceRef } from '../../nav';
import type { Endpoint, Secrets } from './endpoints';

export function useEndpointActions(workspace: WorkspaceRef, endpoint: Endpoint, refresh: () => void) {
  const ws = inWorkspace(workspace.slug);
  const path = { path: { id: endpoint.id } };
  const action = useAction();
  const [secrets, setSecrets] = useState<Secrets>();
  const [notice, setNotice] = useState<string>();
  const done = (text: string) => {
    setNotice(text);
    refresh();
  };

  const sendTest = () =>
    action.run(async () => {
      const a = await call(() => api.POST('/api/portal/webhooks/{id}/test', { params: path, ...ws }));
      done(
        a.outcome === 'ok'
          ? `Test event delivered: ${a.statusCode} in ${a.durationMs} ms.`
          : `Test event not delivered: ${a.error ?? a.statusCode ?? a.outcome}.`,
      );
    });
  const setEnabled = (enabled: boolean) =>
    action.run(async () => {
      await call(() => api.PATCH('/api/portal/webhooks/{id}', { params: path, body: { enabled }, ...ws }));
      done(enabled ? 'The endpoint is enabled.' : 'The endpoint is disabled: it receives nothing until enabled.');
    });
  const revealSecret = () =>
    action.run(async () =>
      setSecrets(await call(() => api.GET('/api/portal/webhooks/{id}/secret', { params: path, ...ws }))),
    );
  const rotateSecret = () =>
    action.run(async () => {
      setSecrets(await call(() => api.POST('/api/portal/webhooks/{id}/secret/rotate', { params: path, ...ws })));
      setNotice('A new signing secret is in use; the previous one keeps signing as well until it expires.');
    });
  const replayOne = (messageId: string) =>
    action.run(async () => {
      const r = await call(() =>
        api.POST('/api/portal/webhooks/{id}/replay', { params: path, body: { messageId }, ...ws }),
      );
      done(
        r.replayed.length ? `Message ${messageId} is being sent again.` : `Message ${messageId} is being sent already.`,
      );
    });
  /** The "Replay failed messages" form's submit. */
  function replayRange(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    const since = isoOf(f.get('since'));
    if (!since) return action.setError(new Error('Choose from when to replay.'));
    const until = isoOf(f.get('until'));
    void action.run(async () => {
      const r = await call(() =>
        api.POST('/api/portal/webhooks/{id}/replay', {
          params: path,
          body: { since, ...(until ? { until } : {}) },
          ...ws,
        }),
      );
      const inProgress = r.inProgress.length ? `; ${r.inProgress.length} being sent already` : '';
      done(
        r.replayed.length + r.inProgress.length === 0
          ? 'No failed message in that time range.'
          : `${plural(r.replayed.length, 'failed message')} sent again${inProgress}.`,
      );
    });
  }

  return { action, notice, secrets, sendTest, setEnabled, revealSecret, rotateSecret, replayOne, replayRange };
}

export type EndpointActions = ReturnType<typeof useEndpointActions>;
