/**
 * `platform completion bash|zsh`: a completion script made from the command tree itself, so it never lags behind
 * the commands: after each command path (`get secret`), its subcommands and options. zsh runs the bash script
 * through bashcompinit.
 */
import type { Command } from 'commander';
import type { CommandContext } from '../context.js';
import { usage } from '../errors.js';

export function addCompletionCommand(program: Command, ctx: CommandContext): void {
  program
    .command('completion')
    .description('Print a shell completion script (bash or zsh)')
    .argument('<shell>', 'bash or zsh')
    .addHelpText(
      'after',
      `
Examples:
  source <(platform completion bash)          # in ~/.bashrc
  source <(platform completion zsh)           # in ~/.zshrc`,
    )
    .action((shell: string) => {
      if (shell !== 'bash' && shell !== 'zsh')
        throw usage(`no completion for ${JSON.stringify(shell)}; use bash or zsh`);
      const script = bashScript(program);
      ctx.stdout(shell === 'zsh' ? `autoload -U +X bashcompinit && bashcompinit\n${script}` : script);
    });
}

/** Each command path ('' for the top) with the words that may follow it. */
function words(command: Command, path: string[] = [], out = new Map<string, string[]>()): Map<string, string[]> {
  const subcommands = command.commands.map((c) => c.name()).filter((n) => n !== 'help');
  const options = command.options.flatMap((o) => [o.long, o.short]).filter((f): f is string => !!f);
  out.set(path.join(' '), [...subcommands, ...options, '--help']);
  for (const sub of command.commands) if (sub.name() !== 'help') words(sub, [...path, sub.name()], out);
  return out;
}

function bashScript(program: Command): string {
  const all = words(program);
  const cases = [...all]
    .map(([path, next]) => `    ${JSON.stringify(path)}) next=${JSON.stringify(next.join(' '))} ;;`)
    .join('\n');
  // The command path is made of the words that name commands; arguments and option values are skipped. Not `path`:
  // in zsh that is $PATH as an array, and a local one would hide every command from compgen.
  const known = `|${[...all.keys()].join('|')}|`;
  return `# platform completion (bash)
_platform() {
  local cur cmdpath word next candidate known=${JSON.stringify(known)}
  cur="\${COMP_WORDS[COMP_CWORD]}"
  cmdpath=""
  for word in "\${COMP_WORDS[@]:1:COMP_CWORD-1}"; do
    candidate="\${cmdpath:+$cmdpath }$word"
    [[ "$known" == *"|$candidate|"* ]] && cmdpath="$candidate"
  done
  case "$cmdpath" in
${cases}
    *) next="" ;;
  esac
  COMPREPLY=($(compgen -W "$next" -- "$cur"))
}
complete -F _platform platform
`;
}
