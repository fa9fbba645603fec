/** The Node.js the server supports (src/runtime.ts), and that the tests themselves run on it. */
import { expect, test } from '@jest/globals';
import { SUPPORTED_NODE, unsupportedRuntime } from '../../src/runtime.js';

test('Node.js 24.11 and later are supported; older ones are refused saying what is needed and how to get it', () => {
  for (const version of ['24.11.0', '24.21.0', '25.0.0', '26.10.0'])
    expect(unsupportedRuntime(version)).toBeUndefined();
  for (const version of ['20.20.2', '22.19.0', '24.10.0']) {
    const why = unsupportedRuntime(version);
    expect(why).toContain(`Node.js 24.11 or later is needed; this is v${version}`);
    expect(why).toContain('make run');
  }
});

test("npm test runs on the supported Node.js (the project's own, whatever the machine has)", () => {
  expect(unsupportedRuntime(process.versions.node)).toBeUndefined();
  expect(Number(process.versions.node.split('.')[0])).toBe(SUPPORTED_NODE.major);
});
