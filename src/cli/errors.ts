/**
 * What the command line client tells a person when something fails: one line on stderr, the server's Status message
 * when the server refused (never a stack, never a credential), and an exit code: 1 for errors, 2 for usage.
 */
import { HostClusterError, shortened } from '../host/kuberequest.js';
import { oneLine } from './terminal.js';

export const EXIT_ERROR = 1;
export const EXIT_USAGE = 2;

export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = EXIT_ERROR,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** A usage error: a flag missing or of the wrong form (exit 2). */
export function usage(message: string): CliError {
  return new CliError(message, EXIT_USAGE);
}

/** The line to print for an error, and what to do about it where that is known. */
export function describeError(err: unknown): string {
  if (err instanceof CliError) return err.message;
  if (err instanceof HostClusterError) {
    const status = err.status;
    // The server chooses its message and its length: a screenful is cut, as the server's own errors cut it, and a
    // newline in it cannot print a line that seems to be this client's.
    const message = typeof status?.message === 'string' ? serverText(status.message) : undefined;
    if (err.code === 401)
      return `${message ?? 'Unauthorized'}: the credential was refused; log in again (platform login) or check the key`;
    if (message) return message;
    if (err.code === undefined) return `${err.message}; is the server running and the URL right?`;
    return err.message;
  }
  return err instanceof Error ? err.message : String(err);
}

/** What a server wrote (a Status message, a Warning), to be quoted in one line of ours. */
export function serverText(text: string): string {
  return oneLine(shortened(text));
}
