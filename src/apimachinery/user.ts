/** Who is asking (kube's user.Info): what authentication yields and what registry rules may look at. */
export interface UserInfo {
  name: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

export const MASTERS_GROUP = 'system:masters';
export const AUTHENTICATED_GROUP = 'system:authenticated';

export function isMaster(user: UserInfo | undefined): boolean {
  return !!user?.groups.includes(MASTERS_GROUP);
}
