/**
 * The admission chain (k8s.io/apiserver's admission.chainAdmissionHandler): the enabled plugins in kube's order,
 * mutating ones first, each asked only about the operations it handles. Which plugins run follows kube's flags:
 * all on by default, --enable-admission-plugins and --disable-admission-plugins name the exceptions.
 */
import type { Admission, AdmissionAttributes } from '../apimachinery/admission.js';
import { NAMESPACE_LIFECYCLE } from './namespacelifecycle.js';
import type { AdmissionPlugin } from './plugin.js';
import { VALIDATING_ADMISSION_POLICY } from './policy.js';
import { MUTATING_ADMISSION_WEBHOOK, VALIDATING_ADMISSION_WEBHOOK } from './webhooks.js';

/** The plugins this server has, in the order they run (kube's RecommendedPluginOrder for servers like this). */
export const PLUGIN_ORDER = [
  NAMESPACE_LIFECYCLE,
  MUTATING_ADMISSION_WEBHOOK,
  VALIDATING_ADMISSION_POLICY,
  VALIDATING_ADMISSION_WEBHOOK,
];

/**
 * The names to run, in order, from the flags; throws with kube's messages when a flag names a plugin this server
 * does not have or both flags name the same one.
 */
export function enabledPlugins(enable: string[], disable: string[]): string[] {
  const errs: string[] = [];
  for (const name of enable)
    if (!PLUGIN_ORDER.includes(name)) errs.push(`enable-admission-plugins plugin ${JSON.stringify(name)} is unknown`);
  for (const name of disable)
    if (!PLUGIN_ORDER.includes(name)) errs.push(`disable-admission-plugins plugin ${JSON.stringify(name)} is unknown`);
  const both = enable.filter((name) => disable.includes(name)).sort();
  if (both.length)
    errs.push(`[${both.join(' ')}] in enable-admission-plugins and disable-admission-plugins overlapped`);
  if (errs.length) throw new Error(errs.join(', '));
  return PLUGIN_ORDER.filter((name) => !disable.includes(name));
}

export class AdmissionChain implements Admission {
  constructor(private readonly plugins: AdmissionPlugin[]) {}

  get names(): string[] {
    return this.plugins.map((p) => p.name);
  }

  async admit(attrs: AdmissionAttributes): Promise<void> {
    for (const plugin of this.plugins)
      if (plugin.admit && plugin.operations.includes(attrs.operation)) await plugin.admit(attrs);
  }

  async validate(attrs: AdmissionAttributes): Promise<void> {
    for (const plugin of this.plugins)
      if (plugin.validate && plugin.operations.includes(attrs.operation)) await plugin.validate(attrs);
  }
}
