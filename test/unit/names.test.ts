import { describe, expect, test } from '@jest/globals';
import { generateName } from '../../src/apimachinery/names.js';

describe('generateName', () => {
  test('appends five characters from kube’s alphabet', () => {
    const name = generateName('web-');
    expect(name).toMatch(/^web-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
  });

  test('cuts long prefixes to 58 characters so the name fits in 63', () => {
    const name = generateName('a'.repeat(100));
    expect(name).toHaveLength(63);
    expect(name.startsWith('a'.repeat(58))).toBe(true);
  });

  test('gives different names on different calls', () => {
    const names = new Set(Array.from({ length: 50 }, () => generateName('x-')));
    expect(names.size).toBeGreaterThan(45);
  });
});
