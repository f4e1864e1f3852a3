/** The team's types and the writes its page makes from the member and invitation lists. */
import { useState } from 'react';
import { api, call } from '../api/client';
import type { paths } from '../api/schema';
import { useAction } from '../hooks';
import type { WorkspaceRef } from '../nav';

type TeamAnswer = paths['/api/portal/team']['get']['responses']['200']['content']['application/json'];
export type Member = TeamAnswer['members'][number];
export type Invitation = NonNullable<TeamAnswer['invitations']>[number];
export type Role = 'admin' | 'member';

/** A role change and a re-invite, with the notice saying what they did; `reload` shows the team afterwards. */
export function useTeamActions(workspace: WorkspaceRef, me: string | undefined, reload: () => void) {
  const query = { workspace: workspace.slug };
  const action = useAction();
  const [notice, setNotice] = useState<string>();

  const changeRole = (m: Member, role: Role) =>
    action.run(async () => {
      setNotice(undefined);
      await call(() =>
        api.PATCH('/api/portal/team/{userId}', { params: { path: { userId: m.id }, query }, body: { role } }),
      );
      // one's own role shapes the whole portal (menu, admin pages): start it afresh
      if (m.id === me) return window.location.reload();
      setNotice(
        role === 'admin'
          ? `${m.name || m.email} is an admin now.`
          : `${m.name || m.email} is a member now (no admin actions).`,
      );
      reload();
    });

  const resend = (inv: Invitation) =>
    action.run(async () => {
      await call(() =>
        api.POST('/api/portal/team/invitations/{id}/resend', { params: { path: { id: inv.id }, query } }),
      );
      setNotice(`A new invitation link was mailed to ${inv.email}; the previous link no longer works.`);
      reload();
    });

  return { action, notice, setNotice, changeRole, resend };
}
