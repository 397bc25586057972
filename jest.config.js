// ESM + TypeScript: ts-jest transpiles only (isolatedModules); `npm run typecheck` owns type errors.
export default {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: { '^.+\\.ts$': ['ts-jest', { useESM: true }] },
  testTimeout: 30000,
  // Three: most end-to-end suites wait on agent time, and two workers kept the two cores busy half
  // of the run. Four were no faster (CPU-bound) and more suites judging real time failed
  // (docs/testing.md, "Test time budget"). Suites make their own temp dirs and ports.
  maxWorkers: 3,
  testSequencer: '<rootDir>/test/support/slow-first-sequencer.mjs',
};
