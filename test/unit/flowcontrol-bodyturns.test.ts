/**
 * Body turns (src/flowcontrol/bodyturns.ts): a flow holds at most its turns at once, the next waiting in the order
 * they came; a turn given back, or a wait given up, lets the next in; flows do not share turns; 0 turns means none
 * are needed.
 */
import { describe, expect, test } from '@jest/globals';
import { BodyTurns } from '../../src/flowcontrol/bodyturns.js';

describe('body turns', () => {
  test('a flow holds at most its turns; the others wait in order, and each turn given back lets the next in', () => {
    const turns = new BodyTurns(2);
    const granted: string[] = [];
    const take = (flow: string, name: string) => turns.take(flow, () => granted.push(name));
    const a1 = take('alice', 'a1');
    const a2 = take('alice', 'a2');
    const a3 = take('alice', 'a3');
    const a4 = take('alice', 'a4');
    const b1 = take('bob', 'b1');
    expect([a1.now, a2.now, a3.now, a4.now, b1.now]).toEqual([true, true, false, false, true]);
    expect(granted).toEqual(['a1', 'a2', 'b1']);
    expect(turns.counts).toEqual({ held: 3, waiting: 2 });

    a2.done();
    a2.done(); // a second call gives nothing more back
    expect(granted).toEqual(['a1', 'a2', 'b1', 'a3']);
    expect(turns.counts).toEqual({ held: 3, waiting: 1 });

    // a4 gives up waiting: it is out of the line, and the next turn given back goes to nobody.
    a4.done();
    expect(turns.counts).toEqual({ held: 3, waiting: 0 });
    a1.done();
    a3.done();
    b1.done();
    expect(granted).toEqual(['a1', 'a2', 'b1', 'a3']);
    expect(turns.counts).toEqual({ held: 0, waiting: 0 });
  });

  test('a request arriving while others wait queues behind them, even if a turn is free for a moment', () => {
    const turns = new BodyTurns(1);
    const granted: string[] = [];
    const first = turns.take('alice', () => granted.push('first'));
    turns.take('alice', () => granted.push('second'));
    first.done();
    expect(granted).toEqual(['first', 'second']);
    const third = turns.take('alice', () => granted.push('third'));
    expect(third.now).toBe(false);
    expect(granted).toEqual(['first', 'second']);
  });

  test('with no bound (0) every request has its turn at once', () => {
    const turns = new BodyTurns(0);
    const granted: number[] = [];
    for (let i = 0; i < 5; i++) expect(turns.take('alice', () => granted.push(i)).now).toBe(true);
    expect(granted).toEqual([0, 1, 2, 3, 4]);
    expect(turns.counts).toEqual({ held: 0, waiting: 0 });
  });
});
