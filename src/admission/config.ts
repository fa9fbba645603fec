/**
 * kube-apiserver's --admission-control-config-file: an AdmissionConfiguration (apiserver.config.k8s.io/v1, YAML or
 * JSON) giving plugins their configuration inline or in a file of its own. The webhook plugins take a
 * WebhookAdmissionConfiguration whose kubeConfigFile holds the credentials this server presents to webhooks,
 * chosen by the webhook's host as kube's AuthenticationInfoResolver chooses them. An invalid file stops the start,
 * naming the field.
 */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import yaml from 'js-yaml';
import { isPlainObject } from '../apimachinery/types.js';
import { kubeconfigUsers, type UserCredentials } from '../host/kubeconfigfile.js';
import { MUTATING_ADMISSION_WEBHOOK, VALIDATING_ADMISSION_WEBHOOK } from './webhooks.js';

const CONFIG_VERSIONS = ['apiserver.config.k8s.io/v1', 'apiserver.config.k8s.io/v1alpha1', 'apiserver.k8s.io/v1alpha1'];

/** Picks the credentials for a webhook at `url`; undefined: call it without any. */
export type WebhookCredentials = (url: URL) => UserCredentials | undefined;

export interface AdmissionConfiguration {
  /** By plugin: the credentials of the webhook plugins, when configured. */
  webhookCredentials: Map<string, WebhookCredentials>;
}

export class AdmissionConfigError extends Error {}

export function loadAdmissionConfiguration(path: string | undefined): AdmissionConfiguration {
  const config: AdmissionConfiguration = { webhookCredentials: new Map() };
  if (!path) return config;
  const doc = readDocument(path, 'AdmissionConfiguration');
  const plugins = doc.plugins ?? [];
  if (!Array.isArray(plugins)) throw new AdmissionConfigError(`${path}: plugins must be a list`);
  plugins.forEach((plugin: unknown, i: number) => {
    const at = `${path}: plugins[${i}]`;
    if (!isPlainObject(plugin) || typeof plugin.name !== 'string' || !plugin.name)
      throw new AdmissionConfigError(`${at}.name: Required value`);
    if (plugin.configuration !== undefined && plugin.path !== undefined)
      throw new AdmissionConfigError(`${at}: give configuration or path, not both`);
    if (plugin.name !== MUTATING_ADMISSION_WEBHOOK && plugin.name !== VALIDATING_ADMISSION_WEBHOOK) return;
    let pluginConfig: Record<string, unknown>;
    if (typeof plugin.path === 'string') {
      const file = isAbsolute(plugin.path) ? plugin.path : join(dirname(path), plugin.path);
      pluginConfig = readDocument(file, 'WebhookAdmissionConfiguration', 'WebhookAdmission');
    } else if (isPlainObject(plugin.configuration)) {
      pluginConfig = checkedDocument(plugin.configuration, `${at}.configuration`, [
        'WebhookAdmissionConfiguration',
        'WebhookAdmission',
      ]);
    } else return;
    const kubeConfigFile = pluginConfig.kubeConfigFile;
    if (kubeConfigFile === undefined || kubeConfigFile === '') return;
    if (typeof kubeConfigFile !== 'string' || !isAbsolute(kubeConfigFile))
      throw new AdmissionConfigError(
        `${at}: kubeConfigFile: Invalid value: ${JSON.stringify(kubeConfigFile)}: must be an absolute file path`,
      );
    let users: Map<string, UserCredentials>;
    try {
      users = kubeconfigUsers(kubeConfigFile);
    } catch (err) {
      throw new AdmissionConfigError(`${at}: kubeConfigFile ${kubeConfigFile}: ${(err as Error).message}`);
    }
    config.webhookCredentials.set(plugin.name, credentialsByHost(users));
  });
  return config;
}

/**
 * kube's defaultAuthenticationInfoResolver: the user named `host:port`, then `*.<parent domains>`, then (port 443)
 * the same without the port, then `*`; else none.
 */
export function credentialsByHost(users: Map<string, UserCredentials>): WebhookCredentials {
  return (url) => {
    const port = url.port || '443';
    const candidates = (target: string) => {
      const steps = target.split('.');
      return [target, ...steps.slice(1).map((_, i) => `*.${steps.slice(i + 1).join('.')}`)];
    };
    const names = [...candidates(`${url.hostname}:${port}`)];
    if (port === '443') names.push(...candidates(url.hostname));
    names.push('*');
    for (const name of names) {
      const user = users.get(name);
      if (user) return user;
    }
    return undefined;
  };
}

function readDocument(path: string, ...kinds: string[]): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new AdmissionConfigError(`${path}: cannot read the file (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  let doc: unknown;
  try {
    doc = yaml.load(text);
  } catch (err) {
    throw new AdmissionConfigError(`${path}: not YAML or JSON: ${(err as Error).message.split('\n')[0]}`);
  }
  if (!isPlainObject(doc)) throw new AdmissionConfigError(`${path}: not a YAML or JSON object`);
  return checkedDocument(doc, path, kinds);
}

function checkedDocument(doc: Record<string, unknown>, at: string, kinds: string[]): Record<string, unknown> {
  if (!CONFIG_VERSIONS.includes(String(doc.apiVersion)) || !kinds.includes(String(doc.kind)))
    throw new AdmissionConfigError(
      `${at}: expected apiVersion apiserver.config.k8s.io/v1 and kind ${kinds[0]}, got ${JSON.stringify(doc.apiVersion ?? '')} ${JSON.stringify(doc.kind ?? '')}`,
    );
  return doc;
}
