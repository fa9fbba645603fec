/**
 * Handshakes in turns (src/http/handshaketurns.ts), with stand-in sockets: a connection's handshake begins only once
 * its client's first bytes have come, at most a few each turn of the event loop, one source after another; and the
 * queues by source (src/http/sourcequeues.ts) that both it and the connection bounds wait in.
 */
import { describe, expect, jest, test } from '@jest/globals';
import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import { HandshakeTurns } from '../../src/http/handshaketurns.js';
import { SourceQueues } from '../../src/http/sourcequeues.js';

/** What the turns read of a socket: its source, whether it is closed, and its first bytes' 'readable'. */
class StandInSocket extends EventEmitter {
  destroyed = false;
  constructor(
    readonly remoteAddress: string,
    readonly name: string,
  ) {
    super();
  }
}

/** `first`: the sources that go first (remembered for a verified client certificate). */
function turnsLog(perTurn: number, first: string[] = []) {
  const begun: string[] = [];
  const turns = new HandshakeTurns(
    (socket) => begun.push((socket as unknown as StandInSocket).name),
    perTurn,
    (source) => first.includes(source),
  );
  const connect = (address: string, name: string) => {
    const socket = new StandInSocket(address, name);
    turns.accepted(socket as unknown as Socket);
    return socket;
  };
  return { begun, turns, connect };
}

/** One turn of the event loop: the turn scheduled before it has run. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('handshakes in turns', () => {
  test("a connection's handshake waits for its first bytes, then goes in the next turn", async () => {
    const { begun, connect } = turnsLog(2);
    const silent = connect('127.0.0.1', 'silent');
    const talking = connect('127.0.0.1', 'talking');
    talking.emit('readable');
    expect(begun).toEqual([]);
    await nextTurn();
    expect(begun).toEqual(['talking']);
    await nextTurn();
    expect(begun).toEqual(['talking']);
    silent.emit('readable');
    await nextTurn();
    expect(begun).toEqual(['talking', 'silent']);
  });

  test('a burst from one source goes a few per turn, and another source is not held back behind it', async () => {
    const { begun, turns, connect } = turnsLog(2);
    for (let i = 0; i < 6; i++) connect('127.0.0.2', `flood${i}`).emit('readable');
    connect('127.0.0.3', 'other').emit('readable');
    expect(turns.size).toBe(7);
    await nextTurn();
    expect(begun).toEqual(['flood0', 'other']);
    await nextTurn();
    expect(begun).toEqual(['flood0', 'other', 'flood1', 'flood2']);
    await nextTurn();
    await nextTurn();
    expect(begun).toHaveLength(7);
    expect(turns.size).toBe(0);
  });

  test('while connections keep being accepted, one handshake is begun every fourth turn; once they stop, two a turn again', async () => {
    const { begun, turns, connect } = turnsLog(2);
    for (let i = 0; i < 6; i++) connect('127.0.0.5', `c${i}`).emit('readable');
    // Node accepts one connection a turn while more wait in the kernel's queue.
    for (let turn = 1; turn <= 3; turn++) {
      turns.connectionAccepted();
      await nextTurn();
      expect(begun).toEqual([]);
    }
    turns.connectionAccepted();
    await nextTurn();
    expect(begun).toEqual(['c0']);
    turns.connectionAccepted();
    await nextTurn();
    expect(begun).toEqual(['c0']);
    await nextTurn();
    expect(begun).toEqual(['c0', 'c1', 'c2']);
  });

  test("the front proxy's new connections (a source that goes first) are handshaken before every source waiting its turn, one a turn at least while connections keep coming", async () => {
    const { begun, turns, connect } = turnsLog(2, ['127.0.0.8']);
    // Many sources flooding, each with a connection waiting for its turn.
    for (let i = 0; i < 6; i++) connect(`127.0.1.${i}`, `flood${i}`).emit('readable');
    connect('127.0.0.8', 'proxy0').emit('readable');
    connect('127.0.0.8', 'proxy1').emit('readable');
    await nextTurn();
    expect(begun).toEqual(['proxy0', 'proxy1']);
    // While connections keep being accepted, the turns that begin no other handshake still begin one of its.
    connect('127.0.0.8', 'proxy2').emit('readable');
    turns.connectionAccepted();
    await nextTurn();
    expect(begun).toEqual(['proxy0', 'proxy1', 'proxy2']);
    turns.connectionAccepted();
    await nextTurn();
    expect(begun).toEqual(['proxy0', 'proxy1', 'proxy2']);
    await nextTurn();
    expect(begun.slice(3)).toEqual(['flood0', 'flood1']);
    expect(turns.size).toBe(4);
  });

  test('a connection closed or reset while it waits is dropped and takes no turn; one closed at accept is never waited on', async () => {
    const { begun, turns, connect } = turnsLog(1);
    const gone = connect('127.0.0.4', 'gone');
    const next = connect('127.0.0.4', 'next');
    gone.emit('readable');
    next.emit('readable');
    gone.destroyed = true;
    await nextTurn();
    expect(begun).toEqual(['next']);

    // An error while it waits (its client reset it) closes it; it is not thrown.
    const reset = connect('127.0.0.4', 'reset');
    const destroy = jest.fn(() => (reset.destroyed = true));
    Object.assign(reset, { destroy });
    expect(() =>
      reset.emit('error', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })),
    ).not.toThrow();
    expect(destroy).toHaveBeenCalled();
    reset.emit('readable');
    await nextTurn();
    expect(begun).toEqual(['next']);

    const refused = new StandInSocket('127.0.0.4', 'refused');
    refused.destroyed = true;
    turns.accepted(refused as unknown as Socket);
    expect(refused.listenerCount('readable')).toBe(0);
  });
});

describe('source queues', () => {
  test('sources are taken in turn, each first come first served; a full queue gives up the newest of the longest', () => {
    const queues = new SourceQueues<string>();
    for (const [source, item] of [
      ['a', 'a1'],
      ['a', 'a2'],
      ['a', 'a3'],
      ['b', 'b1'],
      ['c', 'c1'],
      ['c', 'c2'],
    ])
      queues.push(source, item);
    expect(queues.size).toBe(6);
    expect(queues.longest()).toBe('a');
    expect(queues.takeNewest('a')).toBe('a3');
    // a and c have as many: the first in turn is the longest.
    expect(queues.longest()).toBe('a');
    expect(queues.take()).toBe('a1');
    expect([...queues.sources()]).toEqual(['b', 'c', 'a']);
    expect(queues.take('c')).toBe('c1');
    expect(queues.remove('a', 'a2')).toBe(true);
    expect(queues.remove('a', 'a2')).toBe(false);
    expect([...queues.sources()]).toEqual(['b', 'c']);
    expect([queues.take(), queues.take(), queues.take()]).toEqual(['b1', 'c2', undefined]);
    expect(queues.size).toBe(0);
    expect(queues.longest()).toBeUndefined();
  });
});
