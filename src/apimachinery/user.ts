/** Who is asking (kube's user.Info): what authentication yields and what registry rules may look at. */
export interface UserInfo {
  name: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
  /** What the credential itself limits (an access key's scope and rules): it narrows, never widens, access. */
  restriction?: Restriction;
}

/** The parts of a request a credential's restriction looks at. */
export interface RequestAttributesLite {
  isResourceRequest: boolean;
  verb: string;
  apiGroup: string;
  resource: string;
  subresource: string;
  namespace: string;
  name: string;
  path: string;
}

export interface Restriction {
  check(req: RequestAttributesLite): { allowed: boolean; reason?: string };
}

export const MASTERS_GROUP = 'system:masters';
export const AUTHENTICATED_GROUP = 'system:authenticated';
/** The group of a request without credentials (kube's user.AllUnauthenticated). */
export const UNAUTHENTICATED_GROUP = 'system:unauthenticated';

export function isMaster(user: UserInfo | undefined): boolean {
  return !!user?.groups.includes(MASTERS_GROUP);
}

/** Teams are groups named platform:team:<team> (as Loft uses loft:team:<team>). */
export const TEAM_GROUP_PREFIX = 'platform:team:';

/** The teams a user belongs to: its groups named platform:team:<team>. */
export function teamsOf(user: UserInfo): string[] {
  return user.groups.filter((g) => g.startsWith(TEAM_GROUP_PREFIX)).map((g) => g.slice(TEAM_GROUP_PREFIX.length));
}
