/** The workspace's settings: display name, locale, time zone, notifications. Members read them; admins change them. */
import { useState, type FormEvent } from 'react';
import { api, call } from '../api/client';
import type { paths } from '../api/schema';
import { ErrorMessage, Loaded, Notice } from '../components';
import { formatDate } from '../format';
import { useAction, useLoad } from '../hooks';
import type { WorkspaceRef } from '../nav';

type Put = NonNullable<paths['/api/portal/settings']['put']['requestBody']>['content']['application/json'];
type Notifications =
  paths['/api/portal/settings']['get']['responses']['200']['content']['application/json']['notifications'];

const NOTIFICATIONS: Record<keyof Notifications, string> = {
  billing: 'Invoices and payment problems (to the admins)',
  integrations: 'An integration needs attention: ERP, bank consent, webhook endpoint (to the admins)',
  productUpdates: 'Product news',
};
const zones = (current: string) => [...new Set([current, 'UTC', ...Intl.supportedValuesOf('timeZone')])].sort();

export function Settings({ workspace }: { workspace: WorkspaceRef }) {
  const query = { query: { workspace: workspace.slug } };
  const settings = useLoad(() => call(() => api.GET('/api/portal/settings', { params: query })), [workspace.slug]);
  const action = useAction();
  const [saved, setSaved] = useState(false);
  const isAdmin = workspace.role === 'admin';

  async function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    setSaved(false);
    const f = new FormData(e.currentTarget);
    const body: Put = {
      displayName: String(f.get('displayName')).trim(),
      locale: String(f.get('locale')).trim(),
      timeZone: String(f.get('timeZone')) as Put['timeZone'],
      notifications: Object.fromEntries(Object.keys(NOTIFICATIONS).map((k) => [k, f.get(k) === 'on'])),
    };
    const ok = await action.run(() => call(() => api.PUT('/api/portal/settings', { params: query, body })));
    if (ok) {
      setSaved(true);
      settings.reload();
    }
  }

  return (
    <>
      <h1>Settings</h1>
      {!isAdmin && <p className="muted">Only the workspace’s admins can change these.</p>}
      <Loaded state={settings} what="the settings">
        {(s) => (
          <form onSubmit={submit} className="card narrow" key={s.updatedAt ?? 'new'}>
            <fieldset disabled={!isAdmin} className="plain">
              <label>
                Display name
                <input name="displayName" required maxLength={100} defaultValue={s.displayName} />
              </label>
              <label>
                Language and region <span className="muted small">(BCP 47, e.g. en, de-CH)</span>
                <input
                  name="locale"
                  required
                  maxLength={35}
                  pattern="[A-Za-z]{2,3}(-[A-Za-z]{4})?(-([A-Za-z]{2}|[0-9]{3}))?"
                  defaultValue={s.locale}
                />
              </label>
              <label>
                Time zone
                <select name="timeZone" defaultValue={s.timeZone}>
                  {zones(s.timeZone).map((z) => (
                    <option key={z}>{z}</option>
                  ))}
                </select>
              </label>
              <fieldset>
                <legend>E-mail notifications</legend>
                {(Object.keys(NOTIFICATIONS) as (keyof Notifications)[]).map((k) => (
                  <label key={k} className="check">
                    <input type="checkbox" name={k} defaultChecked={s.notifications[k]} /> {NOTIFICATIONS[k]}
                  </label>
                ))}
              </fieldset>
            </fieldset>
            <ErrorMessage error={action.error} />
            <Notice>{saved && 'Settings saved.'}</Notice>
            <p className="muted small">Last changed: {formatDate(s.updatedAt)}</p>
            {isAdmin && (
              <button type="submit" disabled={action.busy}>
                {action.busy ? 'Saving…' : 'Save settings'}
              </button>
            )}
          </form>
        )}
      </Loaded>
    </>
  );
}
