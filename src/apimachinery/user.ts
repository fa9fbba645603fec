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

/** One value of one OwnedAccessKey: the key (a key created again under the name is another key) and which value. */
export interface AccessKeyValue {
  name: string;
  uid: string;
  /** Which value of the key: status.rotations when it was current (0 before any rotation). */
  generation: number;
}

/**
 * Which value of which OwnedAccessKey a request authenticated with (a symbol beside the user, so no copy of the user
 * into a review, an audit event or a log line carries it): what is issued to the request (a direct cluster endpoint
 * token, a key it creates) names it, so that it can be refused once that value stops working
 * (AccessKeyAuthenticator.valueRefused).
 */
export const ACCESS_KEY_USE = Symbol('access key use');

export interface AccessKeyUse extends AccessKeyValue {
  /** When the value stops working (ms since the epoch): the key's expiry, the end of a rotation's grace, or the same of a key it was created with. */
  until?: number;
  /** The values the key was created with (its status.issuedWith), the nearest first. */
  issuedWith?: AccessKeyValue[];
}

/** The access key value a request authenticated with, if it did with one. */
export function accessKeyUseOf(user: UserInfo | undefined): AccessKeyUse | undefined {
  return (user as { [ACCESS_KEY_USE]?: AccessKeyUse } | undefined)?.[ACCESS_KEY_USE];
}
