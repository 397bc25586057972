// The network as a feature (core/feature.ts): the status document's
// `network` section (network-unit.ts, read again when someone asks:
// statusAsked) and the watch on the unit's own addresses (address-watch.ts),
// which closes the service's and storage's connections bound to one gone.
import type { Feature } from '../core/feature.js';
import { networkSection } from './section.js';

export const network: Feature = {
  name: 'network',
  section: { name: 'network', check: networkSection },
  build: async (ctx) => {
    const [{ NetworkUnit }, { AddressWatch }] = await Promise.all([import('./network-unit.js'), import('./address-watch.js')]);
    const { settings, clock, logger, bus, api, services } = ctx;
    const unit = new NetworkUnit({ hostRoot: settings.hostRoot, clock, bus, lastMeta: () => api.lastMeta, uploadBytesPerSecond: () => services.get('uploads')?.bytesPerSecond() ?? 0 });
    const addresses = new AddressWatch({
      clock,
      logger,
      closers: [(gone) => api.transport.dropConnectionsOn(gone), (gone) => services.get('storage')?.dropConnectionsOn(gone) ?? 0],
    });
    return { units: [unit, addresses] };
  },
};
