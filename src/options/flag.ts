/**
 * The shape of one concern's flags (kube-apiserver's options per concern, k8s.io/apiserver pkg/server/options): the
 * flags with their defaults, the settings that have no flag, the values derived from others, and the checks across
 * the concern's flags. config.ts puts the concerns together into one Config.
 */

/** A flag's value that cannot be taken: the message names the flag and what it takes. */
export class FlagError extends Error {}

export interface Flag<T> {
  name: string;
  /** What the value is, shown in --help after the flag. */
  arg: string;
  /**
   * The value when the flag is not given, written as on the command line: the config's default is this parsed by
   * `apply`, and --help shows it where the help says {default}. Unset: the config has no value (or one of settings).
   */
  default?: string;
  help: string;
  apply: (config: T, value: string) => void;
}

export interface Options<T> {
  /** Named when two concerns declare the same flag. */
  concern: string;
  flags: readonly Flag<T>[];
  /** Values without a flag (kube-apiserver fixes its own), and those a flag may leave unset. */
  settings?: Partial<T>;
  /** After every flag: values derived from others (which may be another concern's). */
  complete?(config: T): void;
  /** After completing: the checks across flags; the first that fails throws a FlagError. */
  validate?(config: T): void;
}

/** Arguments shown without quotes in a default, as Go's pflag quotes only strings. */
const UNQUOTED = new Set(['bool', 'duration', 'float', 'int', 'int|auto', 'port']);

/** "default 5m" or "default \"/registry\"": how --help shows a flag's default. */
export function shownDefault(flag: Flag<never>): string {
  return `default ${UNQUOTED.has(flag.arg) ? flag.default : JSON.stringify(flag.default)}`;
}

/** The flag's help with its default in place of {default}. */
export function helpOf(flag: Flag<never>): string {
  return flag.help.replace('{default}', () => shownDefault(flag));
}

/**
 * Every flag of the concerns by name, in their order; a name two concerns (or one twice) declare stops the start
 * here, naming both, as pflag panics on a flag redefined.
 */
export function flagsByName<T>(concerns: readonly Options<T>[]): Map<string, Flag<T>> {
  const flags = new Map<string, Flag<T>>();
  const owner = new Map<string, string>();
  for (const { concern, flags: declared } of concerns) {
    for (const flag of declared) {
      const other = owner.get(flag.name);
      if (other !== undefined)
        throw new Error(`--${flag.name} is declared by the ${other} options and again by the ${concern} options`);
      flags.set(flag.name, flag);
      owner.set(flag.name, concern);
    }
  }
  return flags;
}
