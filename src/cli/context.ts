/** What every command is given: where to print, the environment, standard input, and the connection flags. */
import type { Env } from './config.js';
import { apiFor, connectionFor, type Api, type ConnectionFlags } from './connection.js';
import { printable } from './terminal.js';

export interface Io {
  stdout(text: string | Buffer): void;
  stderr(text: string): void;
  /** Standard input, whole (for values piped in). */
  stdin(): Promise<Buffer>;
  stdoutIsTTY: boolean;
  env: Env;
}

export interface CommandContext extends Io {
  flags(): ConnectionFlags;
  /** The server, connected as the flags, the environment or the login file say. */
  api(): Api;
}

/**
 * `io` with what reaches a terminal made printable (output.ts): stderr always (messages, the server's included),
 * stdout when it is a terminal. Piped, stdout is given as it is: `get secret --key k > file` keeps its bytes.
 */
export function terminalSafe(io: Io): Io {
  return {
    ...io,
    stderr: (text) => io.stderr(printable(text)),
    stdout: (text) => io.stdout(io.stdoutIsTTY ? printable(text.toString()) : text),
  };
}

export function commandContext(io: Io, flags: () => ConnectionFlags): CommandContext {
  let api: Api | undefined;
  return {
    ...io,
    flags,
    api() {
      api ??= apiFor(connectionFor(flags(), io.env), flags(), (line) => io.stderr(`${line}\n`));
      return api;
    },
  };
}
