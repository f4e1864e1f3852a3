/**
 * The pages the portal's e-mails open (the token is in the URL's fragment, which no request
 * carries): accept an invitation and set a password (/app/w/<slug>/join#token=…), an owner's
 * activation (/app/w/<slug>/activate#token=…), a forgotten password (/app/account/reset-password#token=…),
 * and confirm a new e-mail address (/app/account/confirm-email#token=…). Opening a page changes
 * nothing (mail scanners open links); the form sends the token. An invitation or activation page
 * first asks the API what its link can still do (POST …/invitations/check, which uses nothing): a
 * dead link (used, expired, replaced, revoked) says so at once, with what to do (sign in, or a new
 * link), and no password form.
 */
import { useState, type FormEvent, type ReactNode } from 'react';
import { ApiError, acceptInvitation, api, call, resetPassword } from '../api/client';
import { ErrorMessage, Loading, Notice } from '../components';
import { useAction, useLoad } from '../hooks';
import { Link, navigate } from '../router';
import { ForgotPassword } from './SignIn';

const tokenOfLink = () => new URLSearchParams(location.hash.slice(1)).get('token') ?? '';
const isDeadLink = (error: unknown) => error instanceof ApiError && [404, 409, 410].includes(error.status);

/**
 * An invitation or activation link: what its token can still do (asking uses nothing), and
 * `accept`, which looks again when the acceptance finds the link dead (used meanwhile, say).
 */
function useInvitationLink(token: string) {
  const state = useLoad(
    async () => (token ? call(() => api.POST('/api/portal/team/invitations/check', { body: { token } })) : undefined),
    [token],
  );
  const action = useAction();
  const accept = (body: { password: string; name?: string }) =>
    action.run(async () => {
      try {
        return await acceptInvitation({ token, ...body });
      } catch (error) {
        if (isDeadLink(error)) state.reload();
        throw error;
      }
    });
  return { state, action, accept };
}

/**
 * The page of an invitation or activation link: "Loading your link…", then the password form
 * (`children`) for a link that works, else why it does not and what to do. A check that failed
 * for another reason than an unknown link (the network) shows the form: accepting tells the same.
 */
function LinkGate({
  token,
  slug,
  state,
  children,
}: {
  token: string;
  slug: string;
  state: ReturnType<typeof useInvitationLink>['state'];
  children: ReactNode;
}) {
  if (state.loading && !state.data && !state.error) return <Loading what="your link" />;
  if (state.error instanceof ApiError && state.error.status === 404)
    return <DeadLink token={token} slug={slug} message={state.error.message} renewable={false} />;
  if (state.data && state.data.state !== 'open')
    return <DeadLink token={token} slug={slug} message={state.data.message} renewable={state.data.renewable} />;
  return <>{children}</>;
}

/** A used, expired, replaced or revoked link: why, a way to sign in, and (when `renewable`) a new link sent to the old one's address. */
function DeadLink({
  token,
  slug,
  message,
  renewable,
}: {
  token: string;
  slug: string;
  message: string;
  renewable: boolean;
}) {
  const renewal = useAction();
  const [sent, setSent] = useState<string>();
  const renew = () =>
    renewal.run(async () => {
      const r = await call(() => api.POST('/api/portal/team/invitations/renew', { body: { token } }));
      setSent(r.message);
    });
  return (
    <div className="card" data-dead-link>
      <p className="error" role="alert">
        {message}
      </p>
      <div className="toolbar">
        <Link to={`w/${slug}/`} className="button">
          Sign in
        </Link>
        {renewable && !sent && (
          <button type="button" className="secondary" onClick={() => void renew()} disabled={renewal.busy}>
            {renewal.busy ? 'Sending…' : 'Send me a new link'}
          </button>
        )}
      </div>
      <ErrorMessage error={renewal.error} />
      <Notice>{sent}</Notice>
    </div>
  );
}

/** The owner's activation link from the welcome e-mail: choose a password, then on to the workspace. */
export function ActivateAccount({ slug }: { slug: string }) {
  const [token] = useState(tokenOfLink);
  const { state, action, accept } = useInvitationLink(token);
  async function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const password = String(new FormData(e.currentTarget).get('password'));
    const accepted = await accept({ password });
    if (accepted) navigate(`w/${accepted.workspace.slug}/`, { replace: true });
  }
  return (
    <main className="signin">
      <h1>Welcome to your workspace “{slug}”</h1>
      {!token ? (
        <p className="error" role="alert">
          This link is incomplete: open the whole link from the welcome e-mail.
        </p>
      ) : (
        <LinkGate token={token} slug={slug} state={state}>
          <form onSubmit={submit} className="card">
            <p>Choose the password of your Plana account. You sign in with it from now on.</p>
            <label>
              Password <span className="muted small">(at least 10 characters)</span>
              <input name="password" type="password" autoComplete="new-password" required autoFocus />
            </label>
            <ErrorMessage error={action.error} />
            <button type="submit" disabled={action.busy}>
              {action.busy ? 'Saving…' : 'Set my password'}
            </button>
          </form>
        </LinkGate>
      )}
    </main>
  );
}

/** A forgotten password's link: choose a new password; signed in, every other session ended. */
export function ResetPassword() {
  const [token] = useState(tokenOfLink);
  const action = useAction();
  async function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const password = String(new FormData(e.currentTarget).get('password'));
    if (await action.run(() => resetPassword({ token, password }))) navigate('', { replace: true });
  }
  return (
    <main className="signin">
      <h1>Choose a new password</h1>
      {!token ? (
        <p className="error" role="alert">
          This link is incomplete: open the whole link from the e-mail.
        </p>
      ) : isDeadLink(action.error) ? (
        <div className="card">
          <ErrorMessage error={action.error} />
          <ForgotPassword />
        </div>
      ) : (
        <form onSubmit={submit} className="card">
          <p>Your new password signs you out everywhere else.</p>
          <label>
            New password <span className="muted small">(at least 10 characters)</span>
            <input name="password" type="password" autoComplete="new-password" required autoFocus />
          </label>
          <ErrorMessage error={action.error} />
          <button type="submit" disabled={action.busy}>
            {action.busy ? 'Saving…' : 'Set my new password'}
          </button>
        </form>
      )}
    </main>
  );
}

export function JoinWorkspace({ slug }: { slug: string }) {
  const [token] = useState(tokenOfLink);
  const { state, action, accept } = useInvitationLink(token);
  async function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    const name = String(f.get('name') ?? '').trim();
    const password = String(f.get('password'));
    const accepted = await accept({ password, ...(name ? { name } : {}) });
    // the session has started: on to the workspace (the token leaves the address bar)
    if (accepted) navigate(`w/${accepted.workspace.slug}/`, { replace: true });
  }
  return (
    <main className="signin">
      <h1>Join the workspace “{slug}”</h1>
      {!token ? (
        <p className="error" role="alert">
          This link is incomplete: open the whole link from the invitation e-mail.
        </p>
      ) : (
        <LinkGate token={token} slug={slug} state={state}>
          <form onSubmit={submit} className="card">
            <p>
              Choose your name and a password. If you already have a Plana account with the invited address, give its
              password instead.
            </p>
            <label>
              Your name <span className="muted small">(for a new account)</span>
              <input name="name" autoComplete="name" maxLength={200} autoFocus />
            </label>
            <label>
              Password <span className="muted small">(at least 10 characters)</span>
              <input name="password" type="password" autoComplete="new-password" required />
            </label>
            <ErrorMessage error={action.error} />
            <button type="submit" disabled={action.busy}>
              {action.busy ? 'Joining…' : 'Join the workspace'}
            </button>
          </form>
        </LinkGate>
      )}
    </main>
  );
}

export function ConfirmEmail() {
  const [token] = useState(tokenOfLink);
  const action = useAction();
  const [email, setEmail] = useState<string>();
  const confirm = () =>
    action.run(async () => {
      const r = await call(() => api.POST('/api/portal/profile/email/confirm', { body: { token } }));
      setEmail(r.email);
      history.replaceState(null, '', location.pathname); // the token leaves the address bar
    });
  return (
    <main className="signin">
      <h1>Confirm your e-mail address</h1>
      {email ? (
        <p className="notice" role="status">
          Done: you sign in as {email} from now on. <Link to="">Open the portal</Link>
        </p>
      ) : !token ? (
        <p className="error" role="alert">
          This link is incomplete: open the whole link from the confirmation e-mail.
        </p>
      ) : action.error instanceof ApiError && [404, 409, 410].includes(action.error.status) ? (
        // the link is done for (used, expired, replaced): say so, with nothing left to press
        <>
          <ErrorMessage error={action.error} />
          <p>
            <Link to="">Open the portal</Link>
          </p>
        </>
      ) : (
        <div className="card">
          <p>Your Plana account’s e-mail address changes once you confirm.</p>
          <ErrorMessage error={action.error} />
          <button type="button" onClick={() => void confirm()} disabled={action.busy}>
            Confirm
          </button>
        </div>
      )}
    </main>
  );
}
