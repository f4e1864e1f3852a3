import type { Mail } from './mailer.js';

/** The welcome e-mail sent once a tenant is provisioned (specification §6). */
export function welcomeEmail(input: { email: string; workspace: string; appUrl: string }): Mail {
  const link = `${input.appUrl}/w/${encodeURIComponent(input.workspace)}`;
  return {
    to: input.email,
    subject: `Welcome to Plana: your workspace "${input.workspace}" is ready`,
    text: [
      `Hello,`,
      ``,
      `your workspace "${input.workspace}" is ready.`,
      `Sign in at ${link} to see your dashboards, invite your team and create API keys.`,
      ``,
      `The Plana team`,
    ].join('\n'),
    headers: { 'X-Plana-Workspace': input.workspace },
  };
}
