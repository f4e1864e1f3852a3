/**
 * The demo tenant, provisioned like any other: a TenantClient applied on the Kubernetes API
 * (unchanged on a restart), and its workspace's subscription sent through the real payment webhook.
 */
import type { Config } from '../lib/config.js';
import type { Tier } from '../domain/tenants/types.js';
import {
  event as stripeEvent,
  sandboxIds,
  sandboxIdsFile,
  sendEvent,
  subscription as stripeSubscription,
} from '../sandbox/stripe/sender.js';
import { applyDemoTenantClient, DEMO } from './seed.js';

export async function provisionDemoTenant(cfg: Config, kubeconfigPath: string, step: (msg: string) => void) {
  step(`provisioning the demo tenant "${DEMO.tenant}" (kubectl apply, workflow tenant:${DEMO.tenant})`);
  const tier = cfg.ERP_BACKEND === 'odoo' ? 'starter' : 'pro';
  const demo = await applyDemoTenantClient(kubeconfigPath, tier);
  const state =
    demo.ready === 'True'
      ? 'Ready'
      : `${demo.phase}, not Ready yet (kubectl describe tenantclient ${DEMO.tenant} says why)`;
  step(`demo tenant ${demo.result}: ${state}`);
  // the demo workspace's subscription, as the payment provider stand-in reports it (once: a repeat is a no-op by event id)
  return { subscription: await subscribeDemo(cfg, DEMO.tenant, tier) };
}

/** Sends the demo workspace's `customer.subscription.created` (the demo tenant's tier, 3 seats) through the real webhook; returns its id. */
async function subscribeDemo(cfg: Config, workspace: string, tier: Tier): Promise<string> {
  const ids = sandboxIds(workspace, 1, sandboxIdsFile(cfg.DATA_DIR));
  // a fixed event id: on the next start the same event is a duplicate and changes nothing
  const created = stripeEvent(
    'customer.subscription.created',
    stripeSubscription({ ...ids, id: ids.subscription, workspace, tier, seats: 3 }),
    { id: `evt_devdemo${Buffer.from(workspace).toString('hex')}` },
  );
  const url = new URL('/api/webhooks/stripe', cfg.ACCOUNT_API_URL).toString();
  const res = await sendEvent(url, cfg.STRIPE_WEBHOOK_SECRET, created);
  if (res.status !== 200)
    throw new Error(`the demo subscription was refused: ${res.status} ${JSON.stringify(res.body)}`);
  return ids.subscription;
}
