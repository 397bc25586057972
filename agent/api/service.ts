// The service's API as the rest of the agent sees it: one transport (one got
// instance) and the endpoint groups built on it. Device calls sit at the top
// level because every command and the daemon use them; other groups are
// properties, added as the features that need them land.
import { assetEndpoints, type AssetEndpoints } from './assets.js';
import { channelEndpoints, type ChannelEndpoints } from './channels.js';
import { deviceEndpoints, type DeviceEndpoints } from './device.js';
import { oauthEndpoints, type OAuthEndpoints } from './oauth.js';
import { createTransport, type Transport, type TransportOptions } from './transport.js';
import type { ResponseMeta } from './types.js';

export interface ServiceApi extends DeviceEndpoints {
  readonly transport: Transport;
  /** Pairing, refresh and revoke: form posts without the bearer token. */
  readonly oauth: OAuthEndpoints;
  readonly channels: ChannelEndpoints;
  readonly assets: AssetEndpoints;
  /** Meta of the most recent answer (rate limits, clock offset), for status reports. */
  readonly lastMeta: ResponseMeta | undefined;
  /** Drops kept-alive sockets. */
  close(): void;
}

export function createServiceApi(options: TransportOptions): ServiceApi {
  const transport = createTransport(options);
  return {
    ...deviceEndpoints(transport),
    transport,
    oauth: oauthEndpoints(transport),
    channels: channelEndpoints(transport),
    assets: assetEndpoints(transport),
    get lastMeta() {
      return transport.lastMeta;
    },
    close: () => transport.close(),
  };
}
