/**
 * Structured logs (pino): one JSON line per entry, `{"level":"info","time":"<ISO>",...fields,"msg":...}`, on stderr.
 * Never pass secrets in `fields`. A line written while a sampled request is served (tracing on) names its trace and
 * span: `traceID` and `spanID`.
 *
 * Verbosity is klog's `--v`: 0 writes errors, warnings and lifecycle (start, stop, leadership, controllers);
 * 3 and more add one line per request (as kube-apiserver's httplog does at 3); 4 and more add debug lines.
 */
import pino from 'pino';
import { tracer } from './tracing.js';

export interface Logger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  /** Written only at --v=4 or more. */
  debug(msg: string, fields?: Record<string, unknown>): void;
  /** Whether --v is at least `level` (klog's V(level).Enabled()). */
  v(level: number): boolean;
}

/** The --v at which debug lines are written. */
export const DEBUG_VERBOSITY = 4;

export interface LoggerOptions {
  /** klog's --v (0 by default). */
  verbosity?: number;
  /** Fields on every line (a worker's `worker` and `pid`, to tell which process wrote it). */
  base?: Record<string, unknown>;
}

/** Lines go to `write` when given (tests keep them), else synchronously to stderr, so none is lost at exit. */
export function createLogger(write?: (line: string) => void, opts: LoggerOptions = {}): Logger {
  const verbosity = opts.verbosity ?? 0;
  const destination = write ? { write } : pino.destination({ fd: 2, sync: true });
  const p = pino(
    {
      level: verbosity >= DEBUG_VERBOSITY ? 'debug' : 'info',
      base: opts.base ?? null,
      messageKey: 'msg',
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      mixin: () => {
        const span = tracer().current();
        return span ? { traceID: span.traceId, spanID: span.spanId } : {};
      },
    },
    destination,
  );
  const entry =
    (level: 'info' | 'warn' | 'error' | 'debug') =>
    (msg: string, fields: Record<string, unknown> = {}) =>
      p[level](fields, msg);
  return {
    info: entry('info'),
    warn: entry('warn'),
    error: entry('error'),
    debug: entry('debug'),
    v: (level) => verbosity >= level,
  };
}

export const silentLogger: Logger = { info() {}, warn() {}, error() {}, debug() {}, v: () => false };
