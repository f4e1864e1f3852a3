import { useState, type FormEvent } from 'react';
import { signIn } from '../api/client';
import { ErrorMessage } from '../components';
import { useRoute } from '../router';

/** Sign-in; on a workspace's address (/app/w/<slug>/…, e.g. from the e-mails' /w/<slug> link) both ways lead back to it. */
export function SignIn() {
  const workspace = /^w\/([a-z0-9-]+)(\/|$)/.exec(useRoute())?.[1];
  const oidcStart = `/api/auth/oidc/start?portal=true${workspace ? `&workspace=${workspace}` : ''}`;
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  async function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    setBusy(true);
    setError(undefined);
    try {
      await signIn(String(form.get('email')), String(form.get('password')));
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  }
  return (
    <main className="signin">
      <h1>Sign in to Plana</h1>
      <form onSubmit={submit} className="card">
        <label>
          E-mail
          <input name="email" type="email" autoComplete="username" required autoFocus />
        </label>
        <label>
          Password
          <input name="password" type="password" autoComplete="current-password" required />
        </label>
        <ErrorMessage error={error} />
        <button type="submit" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
        <p className="muted">
          Or <a href={oidcStart}>sign in with your organisation’s account</a>.
        </p>
      </form>
    </main>
  );
}
