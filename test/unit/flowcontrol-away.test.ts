/**
 * A request's time away (src/apimachinery/away.ts): waits on another server inside a request's hold tell it when the
 * request leaves and comes back, overlapping waits counting as one; outside a request they do nothing.
 */
import { describe, expect, test } from '@jest/globals';
import { awayFromThread, countedHold, withFlowHold } from '../../src/apimachinery/away.js';

describe('time away from the thread', () => {
  test('overlapping waits of one request leave once and come back once, after the last; a failed wait comes back too', async () => {
    const events: string[] = [];
    const hold = countedHold(
      () => events.push('away'),
      () => events.push('back'),
    );
    let release!: () => void;
    const slow = new Promise<void>((resolve) => (release = resolve));
    await withFlowHold(hold, async () => {
      const first = awayFromThread(() => slow);
      const second = awayFromThread(() => Promise.resolve('quick'));
      expect(await second).toBe('quick');
      expect(events).toEqual(['away']);
      release();
      await first;
      expect(events).toEqual(['away', 'back']);
      await expect(awayFromThread(() => Promise.reject(new Error('cluster down')))).rejects.toThrow('cluster down');
    });
    expect(events).toEqual(['away', 'back', 'away', 'back']);
  });

  test('outside a request a wait is only a wait', async () => {
    await expect(awayFromThread(() => Promise.resolve(42))).resolves.toBe(42);
  });
});
