/**
 * The workspace's sections, in menu order: the one place a new page plugs in. `adminOnly`
 * sections are neither listed nor opened for a member (and their routes answer a member 403).
 */
import type { ComponentType } from 'react';
import { Dashboard } from './pages/Dashboard';
import { ApiKeys } from './pages/ApiKeys';
import { ExecutionLog } from './pages/ExecutionLog';
import { Webhooks } from './pages/Webhooks';
import { Team } from './pages/Team';
import { Billing } from './pages/Billing';
import { Integrations } from './pages/Integrations';
import { Settings } from './pages/Settings';
import { Profile } from './pages/Profile';

export interface WorkspaceRef {
  slug: string;
  name: string;
  role: 'admin' | 'member';
}

export interface Section {
  /** the path under /app/w/<slug>/ ('' = the workspace's home) */
  path: string;
  label: string;
  adminOnly: boolean;
  /** true when the section has pages of its own under its path (e.g. webhooks/<endpoint id>) */
  nested?: boolean;
  /** `subpath`: what follows the section's path ('' on the section's own page) */
  page: ComponentType<{ workspace: WorkspaceRef; subpath: string }>;
}

export const sections: Section[] = [
  { path: '', label: 'Dashboard', adminOnly: false, page: Dashboard },
  { path: 'keys', label: 'API keys', adminOnly: true, page: ApiKeys },
  { path: 'log', label: 'Execution log', adminOnly: true, page: ExecutionLog },
  { path: 'webhooks', label: 'Webhooks', adminOnly: true, nested: true, page: Webhooks },
  { path: 'team', label: 'Team', adminOnly: false, page: Team },
  { path: 'billing', label: 'Subscription', adminOnly: false, page: Billing },
  { path: 'integrations', label: 'Integrations', adminOnly: false, page: Integrations },
  { path: 'settings', label: 'Settings', adminOnly: false, page: Settings },
  { path: 'profile', label: 'Profile', adminOnly: false, page: Profile },
];
