/** The team page's dialogs: invite someone, revoke an invitation, remove a member (or leave). */
import { type FormEvent } from 'react';
import { api, ApiError, call, signOut } from '../api/client';
import { ConfirmDialog, Dialog, FormActions } from '../components';
import { useAction } from '../hooks';
import type { WorkspaceRef } from '../nav';
import type { Invitation, Member } from './useTeamActions';

export function InviteDialog({ workspace, onClose }: { workspace: WorkspaceRef; onClose: (email?: string) => void }) {
  const action = useAction();
  async function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    const email = String(f.get('email')).trim();
    const role = f.get('role') === 'admin' ? 'admin' : 'member';
    const sent = await action.run(async () => {
      try {
        return await call(() =>
          api.POST('/api/portal/team/invite', {
            params: { query: { workspace: workspace.slug } },
            body: { email, role },
          }),
        );
      } catch (err) {
        // the API's message names its routes; here the list below has the buttons
        if (err instanceof ApiError && err.status === 409 && 'invitationId' in err.problem)
          throw new Error(
            `${email} already has an open invitation: use Re-invite or Revoke in the list of open invitations.`,
          );
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
            <input type="radio" name="role" value="member" defaultChecked /> Member{' '}
            <span className="muted">sees the dashboards, team and plan</span>
          </label>
          <label className="check">
            <input type="radio" name="role" value="admin" /> Admin{' '}
            <span className="muted">also manages keys, webhooks, team, billing and settings</span>
          </label>
        </fieldset>
        <p className="muted small">The link in the e-mail works once, for 7 days.</p>
        <FormActions
          error={action.error}
          busy={action.busy}
          onCancel={() => onClose()}
          submit="Send invitation"
          busyText="Sending…"
        />
      </form>
    </Dialog>
  );
}

export function RevokeInvitationDialog({
  workspace,
  invitation,
  onClose,
}: {
  workspace: WorkspaceRef;
  invitation: Invitation;
  onClose: () => void;
}) {
  const revoke = async () => {
    await call(() =>
      api.DELETE('/api/portal/team/invitations/{id}', {
        params: { path: { id: invitation.id }, query: { workspace: workspace.slug } },
      }),
    );
    onClose();
  };
  return (
    <ConfirmDialog
      title={`Revoke the invitation of ${invitation.email}?`}
      confirm="Revoke invitation"
      busyText="Revoking…"
      onConfirm={revoke}
      onCancel={onClose}
    >
      <p>The link mailed to {invitation.email} stops working at once. You can invite the address again later.</p>
    </ConfirmDialog>
  );
}

/** Removes a member; `self`: the person leaves the workspace, and is signed out. */
export function RemoveMemberDialog({
  workspace,
  member,
  self,
  onClose,
}: {
  workspace: WorkspaceRef;
  member: Member;
  self: boolean;
  onClose: (removed?: Member) => void;
}) {
  const remove = async () => {
    await call(() =>
      api.DELETE('/api/portal/team/{userId}', {
        params: { path: { userId: member.id }, query: { workspace: workspace.slug } },
      }),
    );
    // removing oneself ends one's own sessions too: back to the sign-in page
    if (self) return void (await signOut(), window.location.assign('/app/'));
    onClose(member);
  };
  const who = member.name || member.email;
  return (
    <ConfirmDialog
      title={self ? `Leave ${workspace.name}?` : `Remove ${who} from ${workspace.name}?`}
      confirm={self ? 'Leave the workspace' : 'Remove member'}
      busyText="Removing…"
      onConfirm={remove}
      onCancel={() => onClose()}
    >
      <p>
        {self ? 'You lose' : `${who} (${member.email}) loses`} access to this workspace at once: every session of{' '}
        {self ? 'yours' : 'theirs'} ends, and the portal and the Workspace API refuse {self ? 'you' : 'them'} from the
        next request on. The workspace’s API keys keep working. You can invite the address again later.
      </p>
    </ConfirmDialog>
  );
}
