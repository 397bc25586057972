// The daemon's features, in start order (core/feature.ts): a new feature is
// its folder under agent/ and one line here. Each entry is a declaration,
// cheap to import (its code loads through `build`, `routes.load` and
// `outbox.load`), so this list is also what the status reader takes its
// sections from (status-reader.ts). The outbox comes first (every feature's
// ctx.outbox is its unit); the local API after the features whose routes it
// serves. units.ts starts the status publisher and the token source before
// these, the controller and the watchdog after.
import { pairing } from '../auth/feature.js';
import { channels } from '../channels/feature.js';
import type { Feature } from '../core/feature.js';
import { localApi } from '../localapi/feature.js';
import { logging } from '../logging/feature.js';
import { network } from '../network/feature.js';
import { outbox } from '../outbox/feature.js';
import { prefs } from '../prefs/feature.js';
import { uploads } from '../uploads/feature.js';
import { web } from '../web/feature.js';

export const FEATURES: readonly Feature[] = [
  outbox,
  channels,
  prefs,
  uploads,
  network,
  pairing,
  logging,
  web,
  localApi,
];
