/** The finalizers a DELETE leaves on an object, per policy and per the finalizers it already has (kube's rules). */
import { describe, expect, test } from '@jest/globals';
import { finalizersAfterDelete, type PropagationOptions } from '../../src/registry/propagation.js';

describe('finalizersAfterDelete', () => {
  test.each<[string, string[] | undefined, PropagationOptions, string[]]>([
    ['no policy, no finalizers: nothing (Background is the default)', undefined, {}, []],
    ['no policy keeps what is there', ['x', 'orphan'], {}, ['x', 'orphan']],
    ['Orphan adds orphan after the others', ['x'], { propagationPolicy: 'Orphan' }, ['x', 'orphan']],
    ['Foreground adds foregroundDeletion', undefined, { propagationPolicy: 'Foreground' }, ['foregroundDeletion']],
    ['Foreground replaces orphan', ['orphan', 'x'], { propagationPolicy: 'Foreground' }, ['x', 'foregroundDeletion']],
    ['Orphan replaces foregroundDeletion', ['foregroundDeletion'], { propagationPolicy: 'Orphan' }, ['orphan']],
    ['Background removes both kinds', ['x', 'foregroundDeletion'], { propagationPolicy: 'Background' }, ['x']],
    ['orphanDependents=true is Orphan', undefined, { orphanDependents: true }, ['orphan']],
    ['orphanDependents=false is Background', ['orphan'], { orphanDependents: false }, []],
    ['others are never touched', ['a', 'b'], { propagationPolicy: 'Background' }, ['a', 'b']],
  ])('%s', (_what, before, opts, after) => {
    expect(finalizersAfterDelete(before, opts)).toEqual(after);
  });

  test('an unchanged set is the same array, so nothing is written for it', () => {
    const before = ['x', 'orphan'];
    expect(finalizersAfterDelete(before, { propagationPolicy: 'Orphan' })).toBe(before);
  });
});
