// ESM + TypeScript: ts-jest transpiles only (isolatedModules); `npm run typecheck` owns type errors.
export default {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: { '^.+\\.ts$': ['ts-jest', { useESM: true }] },
  testTimeout: 30000,
  // Three suites at once on two cores: most end-to-end suites spend their time waiting for agent time
  // to pass, and two workers left the cores a third idle. Suites make their own temp dirs and ports
  // (docs/testing.md, "Test time budget").
  maxWorkers: 3,
  testSequencer: '<rootDir>/test/support/slow-first-sequencer.mjs',
};
