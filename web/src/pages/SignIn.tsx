import { useState, type FormEvent } from 'react';
import { api, call, signIn } from '../api/client';
import { ErrorMessage, Notice } from '../components';
import { useAction, useLoad } from '../hooks';
import { useRoute } from '../router';

/** Why an organisation sign-in came back to this page (GET /api/auth/oidc/start's `?oidc=`). */
const OIDC_PROBLEMS: Record<string, string> = {
  'not-configured': 'Signing in with an organisation’s account is not available here. Sign in with your password.',
  unreachable: 'Your organisation’s sign-in cannot be reached just now. Retry later, or sign in with your password.',
};

/** Sign-in; on a workspace's address (/app/w/<slug>/…, e.g. from the e-mails' /w/<slug> link) both ways lead back to it. */
export function SignIn() {
  const workspace = /^w\/([a-z0-9-]+)(\/|$)/.exec(useRoute())?.[1];
  const oidcStart = `/api/auth/oidc/start?portal=true${workspace ? `&workspace=${workspace}` : ''}`;
  const oidcProblem = OIDC_PROBLEMS[new URLSearchParams(location.search).get('oidc') ?? ''];
  const methods = useLoad(() => call(() => api.GET('/api/auth/methods')), []);
  const [forgot, setForgot] = useState(false);
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
  if (forgot)
    return (
      <main className="signin">
        <h1>Forgot your password?</h1>
        <div className="card">
          <ForgotPassword />
          <p>
            <button type="button" className="link" onClick={() => setForgot(false)}>
              Back to sign-in
            </button>
          </p>
        </div>
      </main>
    );
  return (
    <main className="signin">
      <h1>Sign in to Plana</h1>
      {oidcProblem && (
        <p className="error" role="alert">
          {oidcProblem}
        </p>
      )}
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
        <p>
          <button type="button" className="link" onClick={() => setForgot(true)}>
            Forgot your password?
          </button>
        </p>
        {methods.data?.oidc && (
          <p className="muted">
            Or <a href={oidcStart}>sign in with your organisation’s account</a>.
          </p>
        )}
      </form>
    </main>
  );
}

/** "Forgot your password?": a link to choose a new one, mailed to the address (the same answer for any address). */
export function ForgotPassword() {
  const action = useAction();
  const [sent, setSent] = useState<string>();
  async function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const email = String(new FormData(e.currentTarget).get('email'));
    const r = await action.run(() => call(() => api.POST('/api/auth/password/forgot', { body: { email } })));
    if (r) setSent(r.message);
  }
  if (sent) return <Notice>{sent}</Notice>;
  return (
    <form onSubmit={submit}>
      <p>We e-mail you a link to choose a new password.</p>
      <label>
        E-mail
        <input name="email" type="email" autoComplete="username" required />
      </label>
      <ErrorMessage error={action.error} />
      <button type="submit" disabled={action.busy}>
        {action.busy ? 'Sending…' : 'Send me a link'}
      </button>
    </form>
  );
}
