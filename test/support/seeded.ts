// The seeded PRNG tests use; its one home is scripts/lib/seeded-random.mjs,
// shared with the simulator.
export { seeded } from '../../scripts/lib/seeded-random.mjs';
