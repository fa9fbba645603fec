/** Helpers for code that reports failures by throwing a StatusError. */
import { StatusError } from '../../src/apimachinery/status.js';

/** The StatusError a call throws (fails the test when it does not throw one; any other error is rethrown). */
export function statusOf(fn: () => unknown): StatusError {
  try {
    fn();
  } catch (err) {
    if (err instanceof StatusError) return err;
    throw err;
  }
  throw new Error('expected a StatusError');
}
