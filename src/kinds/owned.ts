/**
 * The strategy of a kind whose objects carry `spec.owner` and `spec.access` (every kind of kinds/index.ts but
 * OwnedAccessKey): the access model's write rules (src/access/validation.ts) joined to the kind's own, and
 * the kind's declaration of whether the access sync makes its lists RBAC in the host cluster.
 */
import { Path, type FieldError } from '../apimachinery/field.js';
import { GROUP_NAME } from '../apimachinery/group.js';
import * as errors from '../apimachinery/status.js';
import type { KubeObject } from '../apimachinery/types.js';
import type { UserInfo } from '../apimachinery/user.js';
import {
  accessWarnings,
  guardAccessChanges,
  guardAdminFields,
  ownerGivenAway,
  refuseSystemNames,
  validateAccess,
  type AdminField,
} from '../access/validation.js';
import type { OwnedSpec } from '../access/model.js';
import type { FieldPath } from '../registry/hiddenfields.js';
import type { Strategy } from '../registry/strategy.js';

const spec = Path.root('spec');

export interface OwnedKindOptions {
  /** Whether the access sync turns the owner and access lists into Roles and bindings in the host cluster. */
  hostRbac?: boolean;
  /** Fields of `spec` only system:masters may change. */
  adminFields?: readonly AdminField[];
  /** Parts of the kind that narrow a grant, besides the owner and the access list (Strategy.restrictingFields). */
  restrictingFields?: readonly FieldPath[];
}

/** Dropping an unknown field of an owner or an access entry could make its grant wider than its author asked. */
const OWNER_AND_ACCESS: readonly FieldPath[] = [
  ['spec', 'owner'],
  ['spec', 'access'],
];

/**
 * Only the owner, a `*` entry or system:masters may change the owner and access lists, only system:masters may name
 * a `system:` user in them, set or change `adminFields` or create something owned by someone else, both are
 * validated, and `validateSpec` adds the kind's own rules. Each holds on create as on update.
 */

export function ownedKindStrategy<O extends KubeObject<OwnedSpec>>(
  resource: string,
  validateSpec: (obj: O) => FieldError[],
  options: OwnedKindOptions = {},
  extra: Partial<Strategy<O>> = {},
): Strategy<O> {
  const adminFields = options.adminFields ?? [];
  return {
    access: { hostRbac: options.hostRbac ?? false },
    restrictingFields: [...OWNER_AND_ACCESS, ...(options.restrictingFields ?? [])],
    prepareForCreate(obj: O, user: UserInfo | undefined): void {
      guardNewOwner(resource, obj, user);
      guardAdminFields(resource, adminFields, obj, undefined, user);
      refuseSystemNames(obj, undefined, user);
    },
    prepareForUpdate(obj: O, old: O, user: UserInfo | undefined): void {
      guardAccessChanges(resource, obj, old, user);
      guardAdminFields(resource, adminFields, obj, old, user);
      refuseSystemNames(obj, old, user);
    },
    validate(obj: O): FieldError[] {
      return [
        ...validateSpec(obj),
        // An owner that is both a user and a team, and an entry for nobody, are refused by rules of the CRDs.
        ...validateAccess(obj.spec?.access, spec.child('access')),
      ];
    },
    warningsOnCreate: (obj: O) => accessWarnings(obj.spec?.access, spec.child('access')),
    warningsOnUpdate: (obj: O) => accessWarnings(obj.spec?.access, spec.child('access')),
    ...extra,
  };
}

/**
 * Outside system:masters a new object is owned by its creator, a team of the creator's, or nobody (403 otherwise): an
 * owner is granted everything on the object, and an owner is whom some copies rest on (a ProjectSecret's).
 */
function guardNewOwner(resource: string, obj: KubeObject<OwnedSpec>, user: UserInfo | undefined): void {
  const givenAway = ownerGivenAway(obj.spec?.owner, user, spec.child('owner'));
  if (givenAway)
    throw errors.forbidden(
      { group: GROUP_NAME, resource },
      obj.metadata.name ?? '',
      `User ${JSON.stringify(user!.name)} cannot create this ${obj.kind}: ${givenAway}`,
    );
}
