/** Debian's Chromium (or CHROMIUM_PATH), headless, driven by playwright-core: the portal's tests and bench. */
import { chromium, type Browser } from 'playwright-core';

/** `extraArgs`: more command-line switches (e.g. `--host-resolver-rules` for the tenants' host names). */
export function launchChromium(extraArgs: string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      ...extraArgs,
    ],
  });
}
