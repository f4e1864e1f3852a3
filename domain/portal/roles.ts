/** The roles of a workspace's members (memberships.role). */
export type Role = 'admin' | 'member';
