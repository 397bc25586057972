// ESM + TypeScript: ts-jest transpiles only (isolatedModules); `npm run typecheck` owns type errors.
export default {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: { '^.+\\.ts$': ['ts-jest', { useESM: true }] },
  testTimeout: 30000,
  // Both cores: suites make their own temp dirs and ports (docs/testing.md, "Test time budget"). Three
  // workers were tried: 444 s of jest instead of 471, beside the steps npm test runs at the same time,
  // and end-to-end suites judging real time failed on the busier machine.
  maxWorkers: 3,
  testSequencer: '<rootDir>/test/support/slow-first-sequencer.mjs',
};
