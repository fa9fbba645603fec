/**
 * kube's rules for core v1 Secrets, as the stand-in applies them to every write (the REST verbs and the test's own):
 *
 * - decoding: each `data` value is padded standard base64 (a 400 on create and update, as kube cannot read the
 *   body; a patch that leaves bad base64 is a 422 on field `patch`);
 * - defaulting and conversion: `type` defaults to Opaque; `stringData` is merged into `data` (its keys win) and
 *   never stored;
 * - validation (ValidateSecret, ValidateSecretUpdate): the name is a DNS subdomain; `data` keys are config keys
 *   (`data[<key>]`) and the values total at most 1 MiB; the keys each built-in type requires; `type` is immutable;
 *   an `immutable: true` Secret keeps its data and stays immutable.
 *
 * Not modelled: the JSON check of docker config keys. Messages never carry secret data.
 */
import { fieldError, Path, type FieldError } from '../../../src/apimachinery/field.js';
import { isConfigMapKey, nameIsDNSSubdomain } from '../../../src/apimachinery/validation.js';
import { bytesError, canonical, clone, type KubeObj } from './objects.js';

/** core.MaxSecretSize: the most a Secret's data may hold, in bytes. */
export const MAX_SECRET_SIZE = 1024 * 1024;
const IMMUTABLE = 'field is immutable when `immutable` is set';
const data = Path.root('data');

/** The data keys a Secret of each built-in type must have (basic-auth: one of them; ssh-auth: not empty). */
const REQUIRED_KEYS: Record<string, { keys: string[]; anyOf?: boolean }> = {
  'kubernetes.io/dockercfg': { keys: ['.dockercfg'] },
  'kubernetes.io/dockerconfigjson': { keys: ['.dockerconfigjson'] },
  'kubernetes.io/basic-auth': { keys: ['username', 'password'], anyOf: true },
  'kubernetes.io/ssh-auth': { keys: ['ssh-privatekey'] },
  'kubernetes.io/tls': { keys: ['tls.crt', 'tls.key'] },
};

/** Go's decode error for a Secret body that is not one (data not a map of base64 strings); undefined when it reads. */
export function secretDecodeError(obj: KubeObj): string | undefined {
  if (obj.data === undefined || obj.data === null) return undefined;
  if (typeof obj.data !== 'object' || Array.isArray(obj.data))
    return `json: cannot unmarshal ${Array.isArray(obj.data) ? 'array' : typeof obj.data} into Go struct field Secret.data of type map[string][]uint8`;
  for (const value of Object.values(obj.data)) {
    const why = bytesError('Secret.data', value);
    if (why) return why;
  }
  return undefined;
}

/** kube's defaulting (type Opaque) and conversion (stringData merged into data as base64); a new object. */
export function normalizeSecret(obj: KubeObj): KubeObj {
  const out = clone(obj);
  if (!out.type) out.type = 'Opaque';
  if (out.stringData && typeof out.stringData === 'object') {
    const encoded = Object.entries(out.stringData).map(([k, v]) => [k, Buffer.from(String(v)).toString('base64')]);
    out.data = { ...out.data, ...Object.fromEntries(encoded) };
  }
  delete out.stringData;
  return out;
}

/** ValidateSecretUpdate (with `previous`) or ValidateSecret. */
export function validateSecret(obj: KubeObj, previous?: KubeObj): FieldError[] {
  const errs: FieldError[] = [];
  if (previous) {
    if (obj.type !== previous.type) errs.push(fieldError.invalid('type', obj.type, 'field is immutable'));
    if (previous.immutable === true) {
      if (obj.immutable !== true) errs.push(fieldError.forbidden('immutable', IMMUTABLE));
      if (canonical(obj.data ?? {}) !== canonical(previous.data ?? {}))
        errs.push(fieldError.forbidden('data', IMMUTABLE));
    }
  }
  const name = obj.metadata?.name ?? '';
  for (const msg of nameIsDNSSubdomain(name, false)) errs.push(fieldError.invalid('metadata.name', name, msg));
  const values: Record<string, string> = obj.data ?? {};
  let size = 0;
  for (const [key, value] of Object.entries(values)) {
    for (const msg of isConfigMapKey(key)) errs.push(fieldError.invalid(data.key(key), key, msg));
    size += Buffer.from(value ?? '', 'base64').length;
  }
  if (size > MAX_SECRET_SIZE) errs.push(fieldError.tooLong(data, MAX_SECRET_SIZE));
  errs.push(...typeErrors(obj, values));
  return errs;
}

/** What a built-in type requires (the service-account-token type: its service account's name annotation). */
function typeErrors(obj: KubeObj, values: Record<string, string>): FieldError[] {
  if (obj.type === 'kubernetes.io/service-account-token') {
    return obj.metadata?.annotations?.['kubernetes.io/service-account.name']
      ? []
      : [fieldError.required(Path.root('metadata').child('annotations').key('kubernetes.io/service-account.name'))];
  }
  const required = REQUIRED_KEYS[obj.type];
  if (!required) return [];
  const present = (k: string) => Object.hasOwn(values, k) && (obj.type !== 'kubernetes.io/ssh-auth' || !!values[k]);
  if (required.anyOf)
    return required.keys.some(present) ? [] : required.keys.map((k) => fieldError.required(data.key(k)));
  return required.keys.filter((k) => !present(k)).map((k) => fieldError.required(data.key(k)));
}
