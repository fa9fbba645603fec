/**
 * /healthz, /livez and /readyz as kube-apiserver answers them: `ok`, or on failure (or ?verbose) one line per
 * check and a closing line; `?exclude=<check>` skips a check. Reasons are withheld from the answer.
 */
import type { Request, Response } from 'express';
import { withDeadline } from '../apimachinery/deadline.js';
import type { HealthCheck } from '../apimachinery/health.js';
import { requestContext } from '../apimachinery/request.js';

export type { HealthCheck };

export function healthHandler(endpoint: string, checks: HealthCheck[]) {
  return async (req: Request, res: Response): Promise<void> => {
    const { query } = requestContext(req);
    const excluded = new Set(query.getAll('exclude'));
    const lines: string[] = [];
    let failed = false;
    for (const c of checks) {
      if (excluded.has(c.name)) {
        lines.push(`[+]${c.name} excluded: ok`);
        excluded.delete(c.name);
        continue;
      }
      try {
        await c.check();
        lines.push(`[+]${c.name} ok`);
      } catch {
        failed = true;
        lines.push(`[-]${c.name} failed: reason withheld`);
      }
    }
    if (excluded.size)
      lines.push(
        `warn: some health checks cannot be excluded: no matches for ${[...excluded].map((e) => JSON.stringify(e)).join(',')}`,
      );
    res.type('text/plain; charset=utf-8').setHeader('X-Content-Type-Options', 'nosniff');
    if (failed) {
      res.status(500).send(`${lines.join('\n')}\n${endpoint} check failed\n`);
    } else if (query.has('verbose')) {
      res.status(200).send(`${lines.join('\n')}\n${endpoint} check passed\n`);
    } else {
      res.status(200).send('ok');
    }
  };
}

/** Runs a check with a deadline, so a hung dependency fails the probe instead of hanging it. */
export function withTimeout(name: string, ms: number, check: () => Promise<void>): HealthCheck {
  return { name, check: () => withDeadline(check(), ms, `${name} check timed out`) };
}
