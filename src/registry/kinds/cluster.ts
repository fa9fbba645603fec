/** Cluster: a connected cluster needs the secret with its connection config, unless it is local or peered. */
import { Path, fieldError, type FieldError } from '../../apimachinery/field.js';
import type { KubeObject } from '../../apimachinery/types.js';
import type { UserInfo } from '../../apimachinery/user.js';
import { isDNS1123Label, isDNS1123Subdomain } from '../../apimachinery/validation.js';
import type { Strategy } from '../strategy.js';
import { guardAccessChanges, validateAccess, validateOwner } from './access.js';

const spec = Path.root('spec');

export const clusterStrategy: Strategy = {
  prepareForUpdate(obj: KubeObject, old: KubeObject, user: UserInfo | undefined): void {
    guardAccessChanges('clusters', obj, old, user);
  },

  validate(obj: KubeObject): FieldError[] {
    const s = obj.spec ?? {};
    const errs: FieldError[] = [];
    const config = spec.child('config');
    if (!s.config?.secretName) {
      if (!s.local && !s.networkPeer) {
        errs.push(fieldError.required(config.child('secretName'), 'the secret holding the connection config is required unless spec.local or spec.networkPeer is true'));
      }
    } else {
      for (const msg of isDNS1123Subdomain(s.config.secretName)) errs.push(fieldError.invalid(config.child('secretName'), s.config.secretName, msg));
    }
    if (s.config?.secretNamespace) {
      for (const msg of isDNS1123Label(s.config.secretNamespace)) errs.push(fieldError.invalid(config.child('secretNamespace'), s.config.secretNamespace, msg));
    }
    if (s.managementNamespace) {
      for (const msg of isDNS1123Label(s.managementNamespace)) errs.push(fieldError.invalid(spec.child('managementNamespace'), s.managementNamespace, msg));
    }
    errs.push(...validateOwner(s.owner, spec.child('owner')));
    errs.push(...validateAccess(s.access, spec.child('access')));
    return errs;
  },
};
