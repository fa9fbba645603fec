/** A small structured logger: one JSON line per entry on stderr. Never pass secrets in `fields`. */
export interface Logger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export function createLogger(write: (line: string) => void = (line) => process.stderr.write(line)): Logger {
  const entry = (level: string) => (msg: string, fields: Record<string, unknown> = {}) =>
    write(`${JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields })}\n`);
  return { info: entry('info'), warn: entry('warn'), error: entry('error') };
}

export const silentLogger: Logger = { info() {}, warn() {}, error() {} };
