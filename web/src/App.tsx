/**
 * The portal's shell: restores the session from the refresh cookie, shows sign-in without one,
 * and otherwise the workspace's menu (nav.ts) and the page of the current path:
 *   /app/                      the workspaces of the user (straight to the only one)
 *   /app/w/<slug>/<section>    a section of a workspace (/<section>/<id>: a page of its own, e.g. an endpoint)
 *   /app/w/<slug>/join         accept an invitation (the e-mail's link; with or without a session)
 *   /app/w/<slug>/activate     an owner chooses a password (the welcome e-mail's link)
 *   /app/account/reset-password a forgotten password's link: choose a new one
 *   /app/account/confirm-email confirm a new e-mail address (the e-mail's link)
 */
import { useEffect, useState } from 'react';
import { call, api, onSessionChange, refresh, signOut, type User } from './api/client';
import { ErrorMessage, Loading } from './components';
import { useLoad } from './hooks';
import { sections, type WorkspaceRef } from './nav';
import { Link, navigate, useRoute } from './router';
import { SignIn } from './pages/SignIn';
import { ActivateAccount, ConfirmEmail, JoinWorkspace, ResetPassword } from './pages/LinkPages';

export function App() {
  const path = useRoute();
  const join = /^w\/([^/]+)\/join\/?$/.exec(path);
  if (join) return <JoinWorkspace slug={decodeURIComponent(join[1]!)} />;
  const activate = /^w\/([^/]+)\/activate\/?$/.exec(path);
  if (activate) return <ActivateAccount slug={decodeURIComponent(activate[1]!)} />;
  if (/^account\/reset-password\/?$/.test(path)) return <ResetPassword />;
  if (/^account\/confirm-email\/?$/.test(path)) return <ConfirmEmail />;
  return <Session />;
}

function Session() {
  const [user, setUser] = useState<User | undefined | null>(null); // null: not known yet
  useEffect(() => {
    const off = onSessionChange(setUser);
    void refresh().then((u) => setUser(u));
    return off;
  }, []);
  if (user === null) return <Loading what="your session" />;
  if (!user) return <SignIn />;
  return <SignedIn user={user} />;
}

function SignedIn({ user }: { user: User }) {
  const path = useRoute();
  const me = useLoad(() => call(() => api.GET('/api/auth/me')), [user.id]);
  const workspaces = me.data?.workspaces ?? [];
  const match = /^w\/([^/]+)\/?(.*)$/.exec(path);
  const workspace = match ? workspaces.find((w) => w.slug === match[1]) : undefined;

  useEffect(() => {
    if (!match && workspaces.length === 1) navigate(`w/${workspaces[0]!.slug}/`, { replace: true });
  }, [match, workspaces]);

  return (
    <div className="shell">
      <header className="topbar">
        <Link to="" className="brand">
          Plana
        </Link>
        {workspace && <span className="workspace-name">{workspace.name}</span>}
        <span className="spacer" />
        <span className="muted user">{user.email}</span>
        <button
          type="button"
          className="secondary"
          onClick={() => void signOut().then(() => navigate('', { replace: true }))}
        >
          Sign out
        </button>
      </header>
      {me.loading && !me.data ? (
        <Loading what="your workspaces" />
      ) : me.error ? (
        <ErrorMessage error={me.error} />
      ) : match ? (
        workspace ? (
          <WorkspaceView workspace={workspace} section={match[2] ?? ''} />
        ) : (
          <main className="content">
            <p className="error" role="alert">
              You are not a member of workspace “{match[1]}”.
            </p>
            <Link to="">Your workspaces</Link>
          </main>
        )
      ) : (
        <main className="content">
          <h1>Your workspaces</h1>
          {workspaces.length === 0 ? (
            <p className="empty">You are not a member of any workspace yet.</p>
          ) : (
            <ul className="list">
              {workspaces.map((w) => (
                <li key={w.slug}>
                  <Link to={`w/${w.slug}/`}>{w.name}</Link> <span className="muted">({w.role})</span>
                </li>
              ))}
            </ul>
          )}
        </main>
      )}
    </div>
  );
}

function WorkspaceView({ workspace, section }: { workspace: WorkspaceRef; section: string }) {
  const visible = sections.filter((s) => !s.adminOnly || workspace.role === 'admin');
  const [head = '', ...rest] = section.replace(/\/$/, '').split('/');
  const subpath = rest.join('/');
  const current = visible.find((s) => s.path === head && (subpath === '' || s.nested));
  return (
    <div className="workspace">
      <nav className="sidenav" aria-label="Workspace">
        <ul>
          {visible.map((s) => (
            <li key={s.path}>
              <Link to={`w/${workspace.slug}/${s.path}`} aria-current={s === current ? 'page' : undefined}>
                {s.label}
              </Link>
            </li>
          ))}
        </ul>
      </nav>
      <main className="content">
        {current ? (
          <current.page workspace={workspace} subpath={subpath} />
        ) : (
          <p className="empty">
            There is no page “{section}” here{workspace.role === 'member' ? ' for a member' : ''}.
          </p>
        )}
      </main>
    </div>
  );
}
