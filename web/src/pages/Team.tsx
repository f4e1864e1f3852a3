/**
 * The team: every member sees who is in the workspace and their roles; admins also change a
 * member's role, remove a member (after a confirmation: they lose access at once), see the open
 * invitations and invite (admin or member), re-invite and revoke. A member is shown none of that
 * (and the API refuses it: 403). The last admin can be neither demoted nor removed: the API's 409
 * is shown as its message.
 */
import { useState, type FormEvent } from 'react';
import { api, ApiError, call, currentUser, signOut } from '../api/client';
import type { paths } from '../api/schema';
import { Dialog, Empty, ErrorMessage, Loading, TableWrap, formatDate, useAction, useLoad } from '../components';
import type { WorkspaceRef } from '../nav';

type Member = paths['/api/portal/team']['get']['responses']['200']['content']['application/json']['members'][number];
type Invitation = NonNullable<paths['/api/portal/team']['get']['responses']['200']['content']['application/json']['invitations']>[number];

export function Team({ workspace }: { workspace: WorkspaceRef }) {
  const query = { workspace: workspace.slug };
  const team = useLoad(() => call(() => api.GET('/api/portal/team', { params: { query } })), [workspace.slug]);
  const isAdmin = workspace.role === 'admin';
  const [inviting, setInviting] = useState(false);
  const [revoking, setRevoking] = useState<Invitation>();
  const [removing, setRemoving] = useState<Member>();
  const action = useAction();
  const [notice, setNotice] = useState<string>();
  const me = currentUser()?.id;

  const changeRole = (m: Member, role: 'admin' | 'member') =>
    action.run(async () => {
      setNotice(undefined);
      await call(() => api.PATCH('/api/portal/team/{userId}', { params: { path: { userId: m.id }, query }, body: { role } }));
      // one's own role shapes the whole portal (menu, admin pages): start it afresh
      if (m.id === me) return window.location.reload();
      setNotice(role === 'admin' ? `${m.name || m.email} is an admin now.` : `${m.name || m.email} is a member now (no admin actions).`);
      team.reload();
    });

  const resend = (inv: Invitation) =>
    action.run(async () => {
      await call(() => api.POST('/api/portal/team/invitations/{id}/resend', { params: { path: { id: inv.id }, query } }));
      setNotice(`A new invitation link was mailed to ${inv.email}; the previous link no longer works.`);
      team.reload();
    });

  return (
    <>
      <div className="page-head">
        <h1>Team</h1>
        {isAdmin && (
          <button type="button" onClick={() => setInviting(true)}>
            Invite someone
          </button>
        )}
      </div>
      {notice && (
        <p className="notice" role="status">
          {notice}
        </p>
      )}
      <ErrorMessage error={action.error} />
      {team.loading && !team.data ? (
        <Loading what="the team" />
      ) : team.error ? (
        <ErrorMessage error={team.error} />
      ) : team.data ? (
        <>
          <TableWrap>
            <table className="table">
              <caption>Members</caption>
              <thead>
                <tr>
                  <th>Name</th>
                  <th>E-mail</th>
                  <th>Role</th>
                  <th>Joined</th>
                  {isAdmin && (
                    <th>
                      <span className="sr-only">Actions</span>
                    </th>
                  )}
                </tr>
              </thead>
              <tbody>
                {team.data.members.map((m) => (
                  <tr key={m.id} data-member={m.email}>
                    <td>
                      {m.name} {m.id === me && <span className="muted small">(you)</span>}
                    </td>
                    <td>{m.email}</td>
                    <td>{m.role}</td>
                    <td>{formatDate(m.joinedAt)}</td>
                    {isAdmin && (
                      <td>
                        <div className="row-actions">
                          <button
                            type="button"
                            className="secondary"
                            disabled={action.busy}
                            onClick={() => void changeRole(m, m.role === 'admin' ? 'member' : 'admin')}
                            aria-label={m.role === 'admin' ? `Make ${m.email} a member` : `Make ${m.email} an admin`}
                          >
                            {m.role === 'admin' ? 'Make member' : 'Make admin'}
                          </button>
                          <button type="button" className="danger" onClick={() => (setNotice(undefined), action.setError(undefined), setRemoving(m))} aria-label={`Remove ${m.email}`}>
                            Remove
                          </button>
                        </div>
                      </td>
                    )}
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
          {isAdmin && team.data.invitations && (
            <>
              <h2>Open invitations</h2>
              {team.data.invitations.length === 0 ? (
                <Empty>No open invitations.</Empty>
              ) : (
                <TableWrap>
                  <table className="table">
                    <thead>
                      <tr>
                        <th>E-mail</th>
                        <th>Role</th>
                        <th>State</th>
                        <th>Last sent</th>
                        <th>
                          <span className="sr-only">Actions</span>
                        </th>
                      </tr>
                    </thead>
                    <tbody>
                      {team.data.invitations.map((inv) => (
                        <tr key={inv.id} data-invitation={inv.email}>
                          <td>{inv.email}</td>
                          <td>{inv.role}</td>
                          <td>{inv.status === 'expired' ? <span className="badge warn">expired</span> : `valid until ${formatDate(inv.expiresAt)}`}</td>
                          <td>
                            {formatDate(inv.lastSentAt)} {inv.sentCount > 1 && <span className="muted small">({inv.sentCount}×)</span>}
                          </td>
                          <td>
                            <div className="row-actions">
                            <button type="button" className="secondary" disabled={action.busy} onClick={() => void resend(inv)} aria-label={`Re-invite ${inv.email}`}>
                              Re-invite
                            </button>
                            <button type="button" className="danger" onClick={() => setRevoking(inv)} aria-label={`Revoke the invitation of ${inv.email}`}>
                              Revoke
                            </button>
                          </div>
                        </td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </TableWrap>
              )}
            </>
          )}
        </>
      ) : null}
      {inviting && (
        <InviteDialog
          workspace={workspace}
          onClose={(email) => {
            setInviting(false);
            if (email) setNotice(`An invitation was mailed to ${email}.`);
            team.reload();
          }}
        />
      )}
      {removing && (
        <RemoveMemberDialog
          workspace={workspace}
          member={removing}
          self={removing.id === me}
          onClose={(removed) => {
            setRemoving(undefined);
            if (removed) setNotice(`${removed.name || removed.email} was removed from the workspace.`);
            team.reload();
          }}
        />
      )}
      {revoking && <RevokeInvitationDialog workspace={workspace} invitation={revoking} onClose={() => (setRevoking(undefined), team.reload())} />}
    </>
  );
}

function InviteDialog({ workspace, onClose }: { workspace: WorkspaceRef; onClose: (email?: string) => void }) {
  const action = useAction();
  async function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    const email = String(f.get('email')).trim();
    const role = f.get('role') === 'admin' ? 'admin' : 'member';
    const sent = await action.run(async () => {
      try {
        return await call(() => api.POST('/api/portal/team/invite', { params: { query: { workspace: workspace.slug } }, body: { email, role } }));
      } catch (err) {
        // the API's message names its routes; here the list below has the buttons
        if (err instanceof ApiError && err.status === 409 && 'invitationId' in err.problem)
          throw new Error(`${email} already has an open invitation: use Re-invite or Revoke in the list of open invitations.`);
        throw err;
      }
    });
    if (sent) onClose(sent.email);
  }
  return (
    <Dialog title={`Invite someone to ${workspace.name}`} onClose={() => onClose()}>
      <form onSubmit={submit}>
        <label>
          E-mail
          <input name="email" type="email" required autoFocus maxLength={254} />
        </label>
        <fieldset>
          <legend>Role</legend>
          <label className="check">
            <input type="radio" name="role" value="member" defaultChecked /> Member <span className="muted">sees the dashboards, team and plan</span>
          </label>
          <label className="check">
            <input type="radio" name="role" value="admin" /> Admin <span className="muted">also manages keys, webhooks, team, billing and settings</span>
          </label>
        </fieldset>
        <p className="muted small">The link in the e-mail works once, for 7 days.</p>
        <ErrorMessage error={action.error} />
        <div className="actions">
          <button type="button" className="secondary" onClick={() => onClose()}>
            Cancel
          </button>
          <button type="submit" disabled={action.busy}>
            {action.busy ? 'Sending…' : 'Send invitation'}
          </button>
        </div>
      </form>
    </Dialog>
  );
}

function RevokeInvitationDialog({ workspace, invitation, onClose }: { workspace: WorkspaceRef; invitation: Invitation; onClose: () => void }) {
  const action = useAction();
  const revoke = () =>
    action.run(async () => {
      await call(() => api.DELETE('/api/portal/team/invitations/{id}', { params: { path: { id: invitation.id }, query: { workspace: workspace.slug } } }));
      onClose();
    });
  return (
    <Dialog title={`Revoke the invitation of ${invitation.email}?`} onClose={onClose}>
      <p>The link mailed to {invitation.email} stops working at once. You can invite the address again later.</p>
      <ErrorMessage error={action.error} />
      <div className="actions">
        <button type="button" className="secondary" onClick={onClose} autoFocus>
          Cancel
        </button>
        <button type="button" className="danger" disabled={action.busy} onClick={() => void revoke()}>
          {action.busy ? 'Revoking…' : 'Revoke invitation'}
        </button>
      </div>
    </Dialog>
  );
}

function RemoveMemberDialog({ workspace, member, self, onClose }: { workspace: WorkspaceRef; member: Member; self: boolean; onClose: (removed?: Member) => void }) {
  const action = useAction();
  const remove = () =>
    action.run(async () => {
      await call(() => api.DELETE('/api/portal/team/{userId}', { params: { path: { userId: member.id }, query: { workspace: workspace.slug } } }));
      // removing oneself ends one's own sessions too: back to the sign-in page
      if (self) return void (await signOut(), window.location.assign('/app/'));
      onClose(member);
    });
  const who = member.name || member.email;
  return (
    <Dialog title={self ? `Leave ${workspace.name}?` : `Remove ${who} from ${workspace.name}?`} onClose={() => onClose()}>
      <p>
        {self ? 'You lose' : `${who} (${member.email}) loses`} access to this workspace at once: every session of {self ? 'yours' : 'theirs'} ends, and the
        portal and the Workspace API refuse {self ? 'you' : 'them'} from the next request on. The workspace’s API keys keep working. You can invite the
        address again later.
      </p>
      <ErrorMessage error={action.error} />
      <div className="actions">
        <button type="button" className="secondary" onClick={() => onClose()} autoFocus>
          Cancel
        </button>
        <button type="button" className="danger" disabled={action.busy} onClick={() => void remove()}>
          {action.busy ? 'Removing…' : self ? 'Leave the workspace' : 'Remove member'}
        </button>
      </div>
    </Dialog>
  );
}
