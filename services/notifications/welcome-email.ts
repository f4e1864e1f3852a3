import type { Mail } from './mailer.js';

/** The owner's single-use link to choose a password (domain/portal/activation.ts). */
export interface WelcomeActivation {
  link: string;
  expiresAt: Date;
}

const when = (d: Date) => d.toISOString().replace('T', ' ').slice(0, 16) + ' UTC';

/**
 * The welcome e-mail sent once a tenant is provisioned (specification §6). An owner without a
 * password yet gets the activation link; an owner who has one signs in at the workspace's address.
 */
export function welcomeEmail(input: {
  email: string;
  workspace: string;
  appUrl: string;
  activation?: WelcomeActivation;
}): Mail {
  const link = `${input.appUrl}/w/${encodeURIComponent(input.workspace)}`;
  const howToStart = input.activation
    ? [
        `Choose your password and open your workspace here:`,
        input.activation.link,
        ``,
        `The link works once and until ${when(input.activation.expiresAt)}. Afterwards, sign in at ${link}.`,
      ]
    : [`Sign in at ${link} to see your dashboards, invite your team and create API keys.`];
  return {
    to: input.email,
    subject: `Welcome to Plana: your workspace "${input.workspace}" is ready`,
    text: [`Hello,`, ``, `your workspace "${input.workspace}" is ready.`, ...howToStart, ``, `The Plana team`].join(
      '\n',
    ),
    headers: { 'X-Plana-Workspace': input.workspace },
  };
}
