/**
 * Your profile: name, e-mail address (changed once confirmed from the new address) and password
 * (needs the current one; ends your other sessions).
 */
import { useState, type FormEvent } from 'react';
import { api, call } from '../api/client';
import { ErrorMessage, Loaded, Notice } from '../components';
import { formatDate } from '../format';
import { useAction, useLoad } from '../hooks';

export function Profile() {
  const profile = useLoad(() => call(() => api.GET('/api/portal/profile')), []);
  return (
    <>
      <h1>Your profile</h1>
      <Loaded state={profile} what="your profile">
        {(p) => (
          <>
            <NameForm name={p.name} onSaved={profile.reload} />
            <EmailForm email={p.email} pending={p.pendingEmail} hasPassword={p.hasPassword} onSaved={profile.reload} />
            {p.hasPassword ? (
              <PasswordForm />
            ) : (
              <section className="card narrow">
                <h2>Password</h2>
                <p className="muted">You sign in through your organisation’s account; this account has no password.</p>
              </section>
            )}
            <section className="card narrow">
              <h2>Your workspaces</h2>
              <ul className="list">
                {p.workspaces.map((w) => (
                  <li key={w.id}>
                    {w.name} <span className="muted">({w.role})</span>
                  </li>
                ))}
              </ul>
            </section>
          </>
        )}
      </Loaded>
    </>
  );
}

function NameForm({ name, onSaved }: { name: string; onSaved: () => void }) {
  const action = useAction();
  const [done, setDone] = useState(false);
  async function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    setDone(false);
    const value = String(new FormData(e.currentTarget).get('name')).trim();
    if (await action.run(() => call(() => api.PUT('/api/portal/profile', { body: { name: value } })))) {
      setDone(true);
      onSaved();
    }
  }
  return (
    <form className="card narrow" onSubmit={submit} aria-labelledby="name-title">
      <h2 id="name-title">Name</h2>
      <label>
        Your name
        <input name="name" required maxLength={200} defaultValue={name} autoComplete="name" />
      </label>
      <ErrorMessage error={action.error} />
      <Notice>{done && 'Name saved.'}</Notice>
      <button type="submit" disabled={action.busy}>
        Save name
      </button>
    </form>
  );
}

function EmailForm({
  email,
  pending,
  hasPassword,
  onSaved,
}: {
  email: string;
  pending: { email: string; expiresAt: string } | null;
  hasPassword: boolean;
  onSaved: () => void;
}) {
  const action = useAction();
  async function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    const form = e.currentTarget;
    const body = { email: String(f.get('email')).trim(), currentPassword: String(f.get('currentPassword')) };
    if (await action.run(() => call(() => api.PUT('/api/portal/profile', { body })))) {
      form.reset();
      onSaved();
    }
  }
  return (
    <form className="card narrow" onSubmit={submit} aria-labelledby="email-title">
      <h2 id="email-title">E-mail address</h2>
      <p>
        You sign in as <strong>{email}</strong>.
      </p>
      {pending && (
        <p className="notice" role="status">
          Change to {pending.email} pending: we sent a confirmation link to that address (valid until{' '}
          {formatDate(pending.expiresAt)}). Until it is confirmed from there, you keep signing in as {email}.
        </p>
      )}
      {hasPassword ? (
        <>
          <label>
            New e-mail address
            <input name="email" type="email" required maxLength={254} autoComplete="email" />
          </label>
          <label>
            Current password
            <input name="currentPassword" type="password" required autoComplete="current-password" />
          </label>
          <ErrorMessage error={action.error} />
          <button type="submit" disabled={action.busy}>
            Change e-mail address
          </button>
        </>
      ) : (
        <p className="muted">Your organisation’s account decides your e-mail address.</p>
      )}
    </form>
  );
}

function PasswordForm() {
  const action = useAction();
  const [done, setDone] = useState<string>();
  async function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    setDone(undefined);
    const form = e.currentTarget;
    const f = new FormData(form);
    const newPassword = String(f.get('newPassword'));
    if (newPassword !== String(f.get('repeat'))) return action.setError(new Error('The two new passwords differ.'));
    const changed = await action.run(() =>
      call(() =>
        api.PUT('/api/portal/profile', { body: { currentPassword: String(f.get('currentPassword')), newPassword } }),
      ),
    );
    if (changed) {
      form.reset();
      setDone(
        `Password changed${changed.otherSessionsEnded ? `; ${changed.otherSessionsEnded} other session${changed.otherSessionsEnded === 1 ? ' was' : 's were'} signed out` : ''}.`,
      );
    }
  }
  return (
    <form className="card narrow" onSubmit={submit} aria-labelledby="password-title">
      <h2 id="password-title">Password</h2>
      <label>
        Current password
        <input name="currentPassword" type="password" required autoComplete="current-password" />
      </label>
      <label>
        New password <span className="muted small">(at least 10 characters)</span>
        <input name="newPassword" type="password" required minLength={10} autoComplete="new-password" />
      </label>
      <label>
        New password again
        <input name="repeat" type="password" required minLength={10} autoComplete="new-password" />
      </label>
      <ErrorMessage error={action.error} />
      <Notice>{done}</Notice>
      <button type="submit" disabled={action.busy}>
        Change password
      </button>
    </form>
  );
}
