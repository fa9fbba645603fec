/** What a ProjectSecret's schema cannot say: valid data keys, and a reference naming a SharedSecret, with an owner. */
import { Path, fieldError, type FieldError } from '../../apimachinery/field.js';
import { isConfigMapKey, isDNS1123Label, isDNS1123Subdomain } from '../../apimachinery/validation.js';
import { secretDataErrors } from '../sharedsecret/validation.js';
import { deliveryErrors } from './delivery.js';
import { sharedSecretRef } from './reference.js';
import type { ProjectSecret } from './types.js';

const spec = Path.root('spec');
const refPath = spec.child('sharedSecretRef');

export const validateSpec = (obj: ProjectSecret): FieldError[] => {
  const ref = sharedSecretRef(obj);
  const errs = [...secretDataErrors(obj), ...deliveryErrors(obj, !!ref)];
  if (!ref) return errs;
  if (!ref.namespace) errs.push(fieldError.required(refPath.child('namespace'), 'the namespace of the SharedSecret'));
  else
    for (const msg of isDNS1123Label(ref.namespace))
      errs.push(fieldError.invalid(refPath.child('namespace'), ref.namespace, msg));
  if (!ref.name) errs.push(fieldError.required(refPath.child('name'), 'the name of the SharedSecret'));
  else
    for (const msg of isDNS1123Subdomain(ref.name)) errs.push(fieldError.invalid(refPath.child('name'), ref.name, msg));
  const seen = new Set<string>();
  (ref.keys ?? []).forEach((key, i) => {
    const at = refPath.child('keys').index(i);
    if (seen.has(key)) errs.push(fieldError.duplicate(at, key));
    for (const msg of isConfigMapKey(key)) errs.push(fieldError.invalid(at, key, msg));
    seen.add(key);
  });
  const owner = obj.spec?.owner ?? {};
  if (!owner.user && !owner.team)
    errs.push(
      fieldError.required(
        spec.child('owner'),
        'a ProjectSecret synced from a SharedSecret needs an owner: its data is kept only while the owner may get the SharedSecret',
      ),
    );
  return errs;
};
