/** Jest for benchmarks that need the TypeScript test support (the host cluster stand-in): bench/*.bench.ts. */
import base from '../jest.config.js';

export default {
  ...base,
  rootDir: '..',
  testMatch: ['<rootDir>/bench/**/*.bench.ts'],
  testTimeout: 600_000,
  reporters: ['default'],
};
