/** The texts of the portal's e-mails (sent through the notifications service's POST /v1/email). */
import type { OutgoingMail } from '../notifications/mail-client.js';

const when = (d: Date) => d.toISOString().replace('T', ' ').slice(0, 16) + ' UTC';

export function invitationEmail(i: {
  to: string;
  workspaceName: string;
  slug: string;
  role: 'admin' | 'member';
  invitedBy: string;
  link: string;
  expiresAt: Date;
}): OutgoingMail {
  return {
    to: i.to,
    subject: `You are invited to the workspace "${i.workspaceName}" on Plana`,
    text:
      `Hello,\n\n${i.invitedBy} invites you to join the workspace "${i.workspaceName}" (${i.slug}) on Plana as ${i.role === 'admin' ? 'an admin' : 'a member'}.\n\n` +
      `Accept the invitation here:\n${i.link}\n\n` +
      `The link works once and until ${when(i.expiresAt)}. If you did not expect this e-mail, you can ignore it.\n`,
  };
}

export function emailChangeEmail(c: { to: string; name: string; link: string; expiresAt: Date }): OutgoingMail {
  return {
    to: c.to,
    subject: 'Confirm your new e-mail address for Plana',
    text:
      `Hello${c.name ? ` ${c.name}` : ''},\n\nsomeone (probably you) asked to use this address for a Plana account. ` +
      `The address changes only once you confirm it here:\n${c.link}\n\n` +
      `The link works once and until ${when(c.expiresAt)}. If this was not you, ignore this e-mail: nothing changes.\n`,
  };
}

/**
 * To an address another account already uses, instead of a confirmation link: the requester is
 * told the same as for a free address (no answer says which addresses have accounts), so the
 * address's owner learns of the attempt here, and nothing changes.
 */
export function emailTakenNotice(c: { to: string }): OutgoingMail {
  return {
    to: c.to,
    subject: 'Someone tried to use your e-mail address on Plana',
    text:
      `Hello,\n\nsomeone signed in to another Plana account asked to change that account's e-mail address to this one. ` +
      `This address already belongs to a Plana account, so nothing was changed and nothing will be: there is no link to confirm.\n\n` +
      `If this was you, use your existing account instead. If it was not, you need not do anything; your account is unchanged.\n`,
  };
}

export function emailChangeNotice(c: { to: string; name: string; newEmail: string }): OutgoingMail {
  return {
    to: c.to,
    subject: 'A change of your Plana e-mail address was requested',
    text:
      `Hello${c.name ? ` ${c.name}` : ''},\n\na change of your Plana account's e-mail address to ${c.newEmail} was requested. ` +
      `It takes effect only when confirmed from the new address.\n\n` +
      `If this was not you, change your password now (this ends all your other sessions).\n`,
  };
}

/** A new activation link for a workspace's owner (the welcome e-mail's link had expired or been replaced). */
export function activationEmail(a: { to: string; workspaceName: string; link: string; expiresAt: Date }): OutgoingMail {
  return {
    to: a.to,
    subject: `Your new link to the workspace "${a.workspaceName}" on Plana`,
    text:
      `Hello,\n\nhere is a new link to choose your password and open your workspace "${a.workspaceName}":\n${a.link}\n\n` +
      `The link works once and until ${when(a.expiresAt)}; earlier links no longer work. If you did not ask for it, you can ignore this e-mail.\n`,
  };
}

export function passwordResetEmail(r: { to: string; name: string; link: string; expiresAt: Date }): OutgoingMail {
  return {
    to: r.to,
    subject: 'Choose a new password for Plana',
    text:
      `Hello${r.name ? ` ${r.name}` : ''},\n\nsomeone (probably you) asked for a link to choose a new password for your Plana account:\n${r.link}\n\n` +
      `The link works once and until ${when(r.expiresAt)}. Choosing a new password signs you out everywhere else. ` +
      `If this was not you, ignore this e-mail: your password stays as it is.\n`,
  };
}
