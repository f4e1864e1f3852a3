/**
 * The team: every member sees who is in the workspace and their roles; admins also change a
 * member's role, remove a member (after a confirmation: they lose access at once), see the open
 * invitations and invite (admin or member), re-invite and revoke. A member is shown none of that
 * (and the API refuses it: 403). The only admin is offered neither "Make member" nor "Remove" (the
 * workspace would have no admin; the API refuses both with 409), and the row says why.
 */
import { useState } from 'react';
import { api, call, currentUser } from '../api/client';
import { ACTIONS, Empty, ErrorMessage, Loaded, Notice, Table } from '../components';
import { formatDate } from '../format';
import { useLoad } from '../hooks';
import type { WorkspaceRef } from '../nav';
import { type Invitation, type Member, type Role, useTeamActions } from './useTeamActions';
import { InviteDialog, RemoveMemberDialog, RevokeInvitationDialog } from './TeamDialogs';

export function Team({ workspace }: { workspace: WorkspaceRef }) {
  const team = useLoad(
    () => call(() => api.GET('/api/portal/team', { params: { query: { workspace: workspace.slug } } })),
    [workspace.slug],
  );
  const isAdmin = workspace.role === 'admin';
  const me = currentUser()?.id;
  const { action, notice, setNotice, changeRole, resend } = useTeamActions(workspace, me, team.reload);
  const [inviting, setInviting] = useState(false);
  const [revoking, setRevoking] = useState<Invitation>();
  const [removing, setRemoving] = useState<Member>();
  const remove = (m: Member) => (setNotice(undefined), action.setError(undefined), setRemoving(m));

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
      <Notice>{notice}</Notice>
      <ErrorMessage error={action.error} />
      <Loaded state={team} what="the team">
        {(d) => (
          <>
            <MemberTable
              members={d.members}
              me={me}
              admin={isAdmin ? { busy: action.busy, changeRole, remove } : undefined}
            />
            {isAdmin && d.invitations && (
              <OpenInvitations
                invitations={d.invitations}
                busy={action.busy}
                onResend={resend}
                onRevoke={setRevoking}
              />
            )}
          </>
        )}
      </Loaded>
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
      {revoking && (
        <RevokeInvitationDialog
          workspace={workspace}
          invitation={revoking}
          onClose={() => (setRevoking(undefined), team.reload())}
        />
      )}
    </>
  );
}

/** What an admin does in a member's row. */
interface MemberActions {
  busy: boolean;
  changeRole: (m: Member, role: Role) => unknown;
  remove: (m: Member) => void;
}

/** The members; with `admin`, each row has its role switch and Remove. */
function MemberTable({ members, me, admin }: { members: Member[]; me: string | undefined; admin?: MemberActions }) {
  const onlyAdmin = members.filter((m) => m.role === 'admin').length === 1;
  return (
    <Table columns={['Name', 'E-mail', 'Role', 'Joined', ...(admin ? [ACTIONS] : [])]} caption="Members">
      {members.map((m) => (
        <tr key={m.id} data-member={m.email}>
          <td>
            {m.name} {m.id === me && <span className="muted small">(you)</span>}
          </td>
          <td>{m.email}</td>
          <td>{m.role}</td>
          <td>{formatDate(m.joinedAt)}</td>
          {admin &&
            (onlyAdmin && m.role === 'admin' ? (
              <td className="wrap muted small" data-only-admin>
                The only admin: make another member admin before stepping down or leaving.
              </td>
            ) : (
              <td>
                <MemberButtons member={m} actions={admin} />
              </td>
            ))}
        </tr>
      ))}
    </Table>
  );
}

function MemberButtons({ member: m, actions }: { member: Member; actions: MemberActions }) {
  const isAdmin = m.role === 'admin';
  return (
    <div className="row-actions">
      <button
        type="button"
        className="secondary"
        disabled={actions.busy}
        onClick={() => void actions.changeRole(m, isAdmin ? 'member' : 'admin')}
        aria-label={isAdmin ? `Make ${m.email} a member` : `Make ${m.email} an admin`}
      >
        {isAdmin ? 'Make member' : 'Make admin'}
      </button>
      <button type="button" className="danger" onClick={() => actions.remove(m)} aria-label={`Remove ${m.email}`}>
        Remove
      </button>
    </div>
  );
}

function OpenInvitations({
  invitations,
  busy,
  onResend,
  onRevoke,
}: {
  invitations: Invitation[];
  busy: boolean;
  onResend: (inv: Invitation) => unknown;
  onRevoke: (inv: Invitation) => void;
}) {
  return (
    <>
      <h2>Open invitations</h2>
      {invitations.length === 0 ? (
        <Empty>No open invitations.</Empty>
      ) : (
        <Table columns={['E-mail', 'Role', 'State', 'Last sent', ACTIONS]}>
          {invitations.map((inv) => (
            <tr key={inv.id} data-invitation={inv.email}>
              <td>{inv.email}</td>
              <td>{inv.role}</td>
              <td>
                {inv.status === 'expired' ? (
                  <span className="badge warn">expired</span>
                ) : (
                  `valid until ${formatDate(inv.expiresAt)}`
                )}
              </td>
              <td>
                {formatDate(inv.lastSentAt)}{' '}
                {inv.sentCount > 1 && <span className="muted small">({inv.sentCount}×)</span>}
              </td>
              <td>
                <div className="row-actions">
                  <button
                    type="button"
                    className="secondary"
                    disabled={busy}
                    onClick={() => void onResend(inv)}
                    aria-label={`Re-invite ${inv.email}`}
                  >
                    Re-invite
                  </button>
                  <button
                    type="button"
                    className="danger"
                    onClick={() => onRevoke(inv)}
                    aria-label={`Revoke the invitation of ${inv.email}`}
                  >
                    Revoke
                  </button>
                </div>
              </td>
            </tr>
          ))}
        </Table>
      )}
    </>
  );
}
