/**
 * The filter chain as one express middleware. Express's router costs a path parse and a layer match per
 * middleware on every request; the filters always all apply, so they are called here in order instead, with
 * express's contract: a filter that throws, or whose promise rejects, passes the error on (to the error handler).
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';

export function filterChain(...filters: RequestHandler[]): RequestHandler {
  return (req: Request, res: Response, done: NextFunction) => {
    let i = 0;
    const next = (err?: unknown): void => {
      if (err !== undefined && err !== null) return done(err);
      const filter = filters[i++];
      if (!filter) return done();
      try {
        const result: unknown = filter(req, res, next);
        if (result instanceof Promise) result.catch((e: unknown) => next(e ?? new Error('Rejected promise')));
      } catch (e) {
        next(e ?? new Error('filter threw without an error'));
      }
    };
    next();
  };
}
