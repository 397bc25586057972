// The heartbeat bounds a test uses when it does not care: the shipped generic
// profile's, read from the profile itself so the figure has one home.
import { loadProfiles } from '../../agent/config/profiles.js';

const generic = loadProfiles().find((p) => p.id === 'generic');
if (generic === undefined) throw new Error('the shipped generic profile is missing');

export const DEFAULT_TEST_BOUNDS: { minSeconds: number; maxSeconds: number } = generic.heartbeat;
