/**
 * Jest with ts-jest in native ESM mode: run it with NODE_OPTIONS=--experimental-vm-modules (as `npm test` does), and
 * the `.js` endings of the sources' relative imports are mapped back to their `.ts` files.
 */
export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: { '^.+\\.ts$': ['ts-jest', { useESM: true }] },
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  testTimeout: 30000,
  reporters: ['default', '<rootDir>/test/support/summary-reporter.js'],
};
