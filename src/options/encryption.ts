/** Encryption at rest: the EncryptionConfiguration file and its reloads. */
import { GROUP_NAME } from '../apimachinery/group.js';
import { FlagError, type Options } from './flag.js';
import { bool } from './values.js';

export interface EncryptionConfig {
  /** EncryptionConfiguration file (encryption at rest); unset: the embedded default's, or none with external etcd. */
  encryptionProviderConfig?: string;
  /** Watch that file and put a changed, valid one in force without a restart. */
  encryptionProviderConfigAutomaticReload: boolean;
  /** How often the file is looked at when reloading (kube: 1m). */
  encryptionProviderConfigReloadIntervalMs: number;
}

export const encryptionOptions: Options<EncryptionConfig> = {
  concern: 'encryption',
  flags: [
    {
      name: 'encryption-provider-config',
      arg: 'file',
      help: `EncryptionConfiguration (apiserver.config.k8s.io/v1, YAML or JSON) saying how objects are encrypted in etcd, as kube-apiserver's: resources such as sharedsecrets.${GROUP_NAME}, ownedaccesskeys.${GROUP_NAME}, signingkeys.${GROUP_NAME} (the token signing keys) or *.${GROUP_NAME}, each with providers aescbc, aesgcm, secretbox, kms (v2) or identity; the first provider writes, all read. Default with the embedded etcd: <data-dir>/encryption-config.yaml, made on first start with a random secretbox key; with --etcd-servers: none (stored in clear).`,
      apply: (c, v) => (c.encryptionProviderConfig = v),
    },
    {
      name: 'encryption-provider-config-automatic-reload',
      arg: 'bool',
      default: 'false',
      help: 'Look at --encryption-provider-config every minute and put a changed file in force without a restart; an invalid file is logged and the previous configuration kept ({default}).',
      apply: (c, v) =>
        (c.encryptionProviderConfigAutomaticReload = bool('encryption-provider-config-automatic-reload', v)),
    },
  ],
  settings: {
    encryptionProviderConfigReloadIntervalMs: 60_000,
  },
  validate(config) {
    if (config.encryptionProviderConfigAutomaticReload && !config.encryptionProviderConfig)
      throw new FlagError(
        '--encryption-provider-config-automatic-reload must be set with --encryption-provider-config',
      );
  },
};
