/**
 * A Secret's values as lines a shell evaluates (`eval "$(platform get secret ns/db)"`), with the keys chosen by
 * whoever wrote the Secret. A line may only set a new variable the shell and the programs it starts leave alone:
 *
 * - a shell variable name at all (letters, digits and `_`, not first a digit);
 * - none the environment already has: assigning a variable that is exported keeps it exported, so EDITOR, LESSOPEN
 *   or an AWS key of the job's own would reach every program run after the eval;
 * - none that bash or zsh read (a prompt's command, where commands are found, the user's id, history, the shell's
 *   own options), nor one programs read to load code or decide where to connect (NODE_OPTIONS, PYTHON*, GIT_*, LD_*,
 *   a proxy, this client's own PLATFORM_*), whether exported now or by a later `set -a`;
 * - a value that is text: bash drops a NUL byte, and invalid UTF-8 would be changed on the way.
 *
 * Each key left out is told with why; `--key` and `-o json` still print it. Values are single-quoted.
 */
import type { Env } from './config.js';

const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** What bash and zsh read or keep themselves (bash(1) "Shell Variables", zshparam(1) "Parameters Used By The Shell"). */
const SHELL_VARIABLES = new Set(
  [
    // bash
    'PATH PROMPT_COMMAND PS0 PS1 PS2 PS3 PS4 BASH_ENV ENV IFS SHELLOPTS BASHOPTS HOME CDPATH GLOBIGNORE FIGNORE',
    'SHELL PWD OLDPWD SHLVL HISTFILE HISTFILESIZE HISTSIZE HISTCONTROL HISTIGNORE HISTTIMEFORMAT MAIL MAILPATH',
    'MAILCHECK TMPDIR TMOUT POSIXLY_CORRECT EXECIGNORE INPUTRC PROMPT_DIRTRIM COMP_WORDBREAKS OPTIND OPTARG OPTERR',
    'UID EUID PPID GID EGID USER USERNAME LOGNAME HOSTNAME TERM TERMINFO TZ LANG LANGUAGE',
    // zsh
    'PROMPT PROMPT2 PROMPT3 PROMPT4 RPROMPT RPROMPT2 RPS1 RPS2 SPROMPT PROMPT_EOL_MARK NULLCMD READNULLCMD',
    'TMPPREFIX SAVEHIST WORDCHARS KEYTIMEOUT FPATH ZDOTDIR prompt path fpath cdpath manpath mailpath module_path',
    'psvar watch histchars argv status pipestatus signals options parameters commands functions aliases builtins',
    // read by the programs a shell starts
    'EDITOR VISUAL PAGER MANPAGER SYSTEMD_PAGER BROWSER LS_COLORS KUBECONFIG GCONV_PATH HOSTALIASES',
    'RESOLV_HOST_CONF LOCALDOMAIN CURL_CA_BUNDLE SSL_CERT_FILE SSL_CERT_DIR REQUESTS_CA_BUNDLE',
  ]
    .join(' ')
    .split(' '),
);

/** Families of such variables, by how their names begin (case as written) or end. */
const SHELL_VARIABLE_PREFIXES = [
  'BASH_',
  'ZSH_',
  'ZLE_',
  'LC_',
  'LD_',
  'DYLD_',
  'GLIBC_',
  'MALLOC_',
  'NODE_',
  'npm_config_',
  'NPM_CONFIG_',
  'PYTHON',
  'PERL',
  'RUBY',
  'JAVA_',
  '_JAVA_',
  'JDK_JAVA_',
  'GIT_',
  'SSH_',
  'GPG_',
  'GNUPG',
  'LESS',
  'KUBE',
  'DOCKER_',
  'XDG_',
  'PLATFORM_',
];
const SHELL_VARIABLE_SUFFIXES = ['_functions', '_proxy', '_PROXY'];

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Why the line `name=<value>` may not be printed, or undefined when it may. */
export function whyLeftOut(name: string, value: Buffer, environment: Env): string | undefined {
  if (!VARIABLE_NAME.test(name)) return 'not a shell variable name (letters, digits and _, not first a digit)';
  if (environment[name] !== undefined)
    return 'the environment already has this variable (eval would change it for every program run after)';
  if (
    SHELL_VARIABLES.has(name) ||
    SHELL_VARIABLE_PREFIXES.some((p) => name.startsWith(p)) ||
    SHELL_VARIABLE_SUFFIXES.some((s) => name.endsWith(s))
  )
    return 'the shell or the programs it runs read this variable';
  if (value.includes(0)) return 'its value holds a NUL byte, which a shell variable cannot';
  try {
    utf8.decode(value);
  } catch {
    return 'its value is not UTF-8 text';
  }
  return undefined;
}

/** `prefix` for the names, when it is one a name can begin with (then a Secret's writer chooses no name at all). */
export function validPrefix(prefix: string): boolean {
  return VARIABLE_NAME.test(prefix);
}

/** A value in single quotes for a shell. */
export function shellQuoted(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}
