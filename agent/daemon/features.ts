// The daemon's features, in start order (core/feature.ts): a new feature is
// its folder under agent/ and one line here. Each entry is a declaration,
// cheap to import (its code loads through `build`, `routes.load` and
// `outbox.load`), so this list is also what the status reader takes its
// sections from. The units not yet turned into features are built in
// units.ts around this list; they start before these, the controller and
// the watchdog after.
import type { Feature } from '../core/feature.js';
import { logging } from '../logging/feature.js';
import { web } from '../web/feature.js';

export const FEATURES: readonly Feature[] = [
  logging,
  web,
];
