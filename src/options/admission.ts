/** Admission: which plugins run, and their configuration file. */
import type { Options } from './flag.js';
import { list } from './values.js';

export interface AdmissionConfig {
  /** Admission plugins named on (all are on by default) and off; admission runs only with a host cluster. */
  enableAdmissionPlugins: string[];
  disableAdmissionPlugins: string[];
  /** kube's AdmissionConfiguration file: the plugins' own configuration (the webhooks' credentials). */
  admissionControlConfigFile?: string;
}

export const admissionOptions: Options<AdmissionConfig> = {
  concern: 'admission',
  flags: [
    {
      name: 'enable-admission-plugins',
      arg: 'names',
      default: '',
      help: 'Admission plugins to run besides those on by default (comma-separated). This server has NamespaceLifecycle, MutatingAdmissionWebhook, ValidatingAdmissionPolicy and ValidatingAdmissionWebhook, all on by default; admission runs only with a host cluster.',
      apply: (c, v) => (c.enableAdmissionPlugins = list(v)),
    },
    {
      name: 'disable-admission-plugins',
      arg: 'names',
      default: '',
      help: 'Admission plugins not to run, though on by default (comma-separated), e.g. NamespaceLifecycle.',
      apply: (c, v) => (c.disableAdmissionPlugins = list(v)),
    },
    {
      name: 'admission-control-config-file',
      arg: 'file',
      help: "kube-apiserver's AdmissionConfiguration (apiserver.config.k8s.io/v1, YAML or JSON): for MutatingAdmissionWebhook and ValidatingAdmissionWebhook a WebhookAdmissionConfiguration whose kubeConfigFile (an absolute path) holds the credentials presented to webhooks, chosen by the webhook's host:port, *.domain or *.",
      apply: (c, v) => (c.admissionControlConfigFile = v),
    },
  ],
};
