/**
 * OwnedAccessKey rotation: `POST {api}/ownedaccesskeys/<name>/rotate` gives the key a new value and answers the key
 * with it in `spec.key`, once, as the create does. The value it replaces keeps working for `spec.rotationGracePeriod`
 * seconds of the request (default 300, at most 86400; 0 ends it at once), so that what uses the key can switch
 * without an outage; from then on it is 401 with a message naming the rotation (auth/accesskeys.ts). The body is an
 * OwnedAccessKey (as `kubectl get -o yaml` shows it) or empty; of it only spec.rotationGracePeriod is read.
 *
 * - Whoever may update the key may rotate it: its holder and admins (403 for others). A credential with a scope or
 *   rules may not (as it may not change keys), since the new value would carry the key's whole identity. A request
 *   made with an access key rotates only that key and the keys made with it (status.issuedWith), as a key it
 *   creates falls with it: a leaked key's holder gets no value that outlives the leaked key's revocation.
 * - A rotation changes nothing but the value: not the identity, scope or expiry (a key counts its ttl from its
 *   creation or last activity, never from a rotation). Spec fields in the body other than rotationGracePeriod are
 *   not applied; a Warning names those that differ from the key's. `spec.key` in the body is 422: the server
 *   generates the new value (a client-chosen one could be a value in use elsewhere).
 * - A disabled or expired key is 409 (its new value would not work either), and so is a key whose previous value
 *   is still in its grace: a second rotation then would end that grace at once, cutting off whoever has not switched
 *   yet. Rotations are not chained; to stop every value at once, disable the key.
 * - One write stores the new value's hash, the replaced value's hash (status.previousKey, never shown) and the
 *   status recording the rotation (rotations, lastRotationTimestamp, previousKeyExpirationTimestamp): the server's
 *   own write (the strategy accepts a new value from it alone), made after the caller's checks.
 */
import { jsonEqual } from '../apimachinery/equality.js';
import { Path, fieldError, type FieldError } from '../apimachinery/field.js';
import { GROUP_NAME } from '../apimachinery/group.js';
import { isDateTime, type StructuralSchema } from '../apimachinery/schema.js';
import * as errors from '../apimachinery/status.js';
import { nowRFC3339 } from '../apimachinery/time.js';
import { isPlainObject, type KubeObject } from '../apimachinery/types.js';
import type { ResourceDefinition } from '../registry/definitions.js';
import type { Registry } from '../registry/registry.js';
import { expiresAt } from '../kinds/ownedaccesskey/expiry.js';
import {
  KEY_SHOWN_ONCE_WARNING,
  RESOURCE,
  creationRefusal,
  fallsWith,
  generateAccessKey,
} from '../kinds/ownedaccesskey/strategy.js';
import { OwnedAccessKey } from '../kinds/ownedaccesskey/types.js';
import { accessKeyUseOf, type UserInfo } from '../apimachinery/user.js';
import type { Action, ActionCall } from './action.js';
import { requestSchema } from './action.js';

const KIND = 'OwnedAccessKey';
const VERSION = 'v1';
const groupResource = { group: GROUP_NAME, resource: RESOURCE };
/** How long the replaced value works when the request does not say (s). */
export const DEFAULT_ROTATION_GRACE_SECONDS = 300;
/** The longest grace a rotation gives (s): a replaced value is not to live on beside the new one for long. */
export const MAX_ROTATION_GRACE_SECONDS = 86_400;

const gracePath = Path.root('spec').child('rotationGracePeriod');

/** The request: an OwnedAccessKey, with spec.rotationGracePeriod beside the key's own fields. */
function rotateSchema(keyDefinition: ResourceDefinition | undefined): StructuralSchema {
  const keySpec = keyDefinition?.schema.properties?.spec;
  if (!keySpec?.properties) throw new Error('the OwnedAccessKey schema has no spec to share');
  const spec: StructuralSchema = {
    ...keySpec,
    properties: { ...keySpec.properties, rotationGracePeriod: { type: 'integer', format: 'int64' } },
  };
  return requestSchema({ spec, status: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } });
}

export function rotateAccessKeyAction(registry: Registry): Action {
  const store = registry.store(OwnedAccessKey);
  return {
    group: GROUP_NAME,
    version: VERSION,
    resource: RESOURCE,
    subresource: 'rotate',
    kind: KIND,
    namespaced: false,
    verbs: ['create'],
    emptyBody: true,
    schema: rotateSchema(registry.definitions.find((d) => d.group === GROUP_NAME && d.kind === KIND)),
    // A typo in the spec (a grace period misspelt) is refused rather than a rotation made with the default.
    restrictingFields: [['spec']],
    // Before admission and the audit log: a key value sent in the body goes nowhere.
    validate: (body) => void graceSeconds(String(body.metadata.name ?? ''), specOf(body)),
    async serve(call: ActionCall): Promise<KubeObject> {
      const { name, user } = call;
      const body = call.object!;
      if (body.metadata.name !== undefined && body.metadata.name !== name)
        throw errors.badRequest(
          `the name of the object (${String(body.metadata.name)}) does not match the name on the URL (${name})`,
        );
      const spec = specOf(body);
      const grace = graceSeconds(name, spec);
      await checkMayRotate(call);
      const value = generateAccessKey();
      let replacedUntil = '';
      const stored = await store.update(
        undefined,
        name,
        {
          patch: (current) => {
            const now = Date.now();
            // The new value is the key as it is: outside system:masters, only for who could have made it so.
            const why = creationRefusal(current, user);
            if (why)
              throw rotateForbidden(name, user, `only whoever could create the key as it is may rotate it: ${why}`);
            const use = accessKeyUseOf(user);
            if (use && !fallsWith(current, use))
              throw rotateForbidden(
                name,
                user,
                `a request made with access key ${JSON.stringify(use.name)} may rotate only that key and the keys made with it (status.issuedWith): the new value would outlive ${JSON.stringify(use.name)}; rotate it with another credential`,
              );
            checkRotatable(current, now);
            replacedUntil = nowRFC3339(new Date(now + grace * 1000));
            return {
              ...current,
              spec: { ...current.spec, key: value },
              status: {
                ...current.status,
                rotations: (current.status?.rotations ?? 0) + 1,
                lastRotationTimestamp: nowRFC3339(new Date(now)),
                previousKeyExpirationTimestamp: replacedUntil,
              },
            };
          },
        },
        undefined,
        { withStatus: true },
      );
      call.warnings.push(...ignoredFields(spec, stored), KEY_SHOWN_ONCE_WARNING);
      call.warnings.push(
        `the previous value of access key ${JSON.stringify(name)} works until ${replacedUntil}; switch to the new value before then`,
      );
      return { ...stored, spec: { ...stored.spec, key: value } };
    },
  };
}

/** spec.rotationGracePeriod in seconds (the default when absent); 422 for spec.key or a grace out of bounds. */
function graceSeconds(name: string, spec: Record<string, unknown>): number {
  const errs: FieldError[] = [];
  if (spec.key !== undefined && spec.key !== null)
    errs.push(
      fieldError.forbidden(
        Path.root('spec').child('key'),
        'a rotation generates the new value; leave spec.key out (only spec.rotationGracePeriod is read)',
      ),
    );
  const grace = spec.rotationGracePeriod ?? DEFAULT_ROTATION_GRACE_SECONDS;
  if (typeof grace === 'number' && (grace < 0 || grace > MAX_ROTATION_GRACE_SECONDS))
    errs.push(
      fieldError.invalid(
        gracePath,
        grace,
        `must be between 0 and ${MAX_ROTATION_GRACE_SECONDS} seconds (how long the previous value keeps working; default ${DEFAULT_ROTATION_GRACE_SECONDS})`,
      ),
    );
  if (errs.length) throw errors.invalid({ group: GROUP_NAME, kind: KIND }, name, errs);
  return grace as number;
}

/**
 * 403 unless the caller may update the key (its holder, an admin), with an unrestricted credential. Asked before
 * anything is read, so that a caller who may not learns nothing of the key, not even whether it exists.
 */
async function checkMayRotate({ name, user, authorize }: ActionCall): Promise<void> {
  const deny = (why: string) => rotateForbidden(name, user, why);
  if (user.restriction) throw deny('a credential with a scope or rules may not create or change access keys');
  const decision = await authorize({
    verb: 'update',
    isResourceRequest: true,
    path: `/apis/${GROUP_NAME}/${VERSION}/${RESOURCE}/${name}`,
    apiGroup: GROUP_NAME,
    apiVersion: VERSION,
    namespace: '',
    resource: RESOURCE,
    subresource: '',
    name,
  });
  if (decision.decision !== 'allow') throw deny('rotating a key needs permission to update it');
}

function rotateForbidden(name: string, user: UserInfo, why: string): errors.StatusError {
  return errors.forbidden(
    groupResource,
    name,
    `User ${JSON.stringify(user.name)} cannot rotate resource ${JSON.stringify(RESOURCE)} in API group ${JSON.stringify(GROUP_NAME)} at the cluster scope: ${why}`,
  );
}

const specOf = (body: KubeObject): Record<string, unknown> => (isPlainObject(body.spec) ? body.spec : {});

/** 409 for a key whose new value would not work, or whose previous value is still in its grace. */
function checkRotatable(key: OwnedAccessKey, now: number): void {
  const name = key.metadata.name ?? '';
  const refuse = (why: string) => errors.conflict(groupResource, name, why);
  if (key.metadata.deletionTimestamp)
    throw refuse('the key is being deleted, and its values stop working; a key being deleted is not rotated');
  if (key.spec?.disabled === true)
    throw refuse('the key is disabled, and a new value of it would not work either; a disabled key is not rotated');
  const expiry = expiresAt(key, now);
  if (expiry !== undefined && now >= expiry)
    throw refuse('the key has expired, and a rotation does not renew it; create a new key');
  // Only a time the server wrote counts (a value of another type stored by other means is none).
  const until = key.status?.previousKeyExpirationTimestamp;
  const previousUntil = isDateTime(until) ? Date.parse(until as string) : NaN;
  if (!Number.isNaN(previousUntil) && now < previousUntil)
    throw refuse(
      `the key was rotated at ${key.status?.lastRotationTimestamp ?? 'an unknown time'} and its previous value works until ${key.status?.previousKeyExpirationTimestamp}; rotate again after that (a rotation now would cut it off), or disable the key to stop every value at once`,
    );
}

/** A Warning naming the body's spec fields that differ from the key's: a rotation does not apply them. */
function ignoredFields(spec: Record<string, unknown>, stored: OwnedAccessKey): string[] {
  const storedSpec = (stored.spec ?? {}) as Record<string, unknown>;
  const differing = Object.keys(spec).filter(
    (f) => f !== 'rotationGracePeriod' && f !== 'key' && !jsonEqual(spec[f], storedSpec[f]),
  );
  if (!differing.length) return [];
  return [
    `${differing.map((f) => `spec.${f}`).join(', ')}: not changed by a rotation, which only replaces the value; update the key to change ${differing.length > 1 ? 'them' : 'it'}`,
  ];
}
