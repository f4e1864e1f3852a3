/**
 * The workspace's sections, in menu order: the one place a new page plugs in (webhooks, team,
 * billing, integrations, settings, profile come with their routes). `adminOnly` sections are
 * neither listed nor opened for a member.
 */
import type { ComponentType } from 'react';
import { Dashboard } from './pages/Dashboard';
import { ApiKeys } from './pages/ApiKeys';
import { ExecutionLog } from './pages/ExecutionLog';

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
  page: ComponentType<{ workspace: WorkspaceRef }>;
}

export const sections: Section[] = [
  { path: '', label: 'Dashboard', adminOnly: false, page: Dashboard },
  { path: 'keys', label: 'API keys', adminOnly: true, page: ApiKeys },
  { path: 'log', label: 'Execution log', adminOnly: true, page: ExecutionLog },
];
