// Real-time logging's two calls (docs/service-api.md, "Real-time logging"),
// over the one transport (api/transport.ts: the token, x-client-version, the
// timeouts, typed errors). Kept in the feature's folder so that a camera that
// never presses a button never loads them.
import type { Transport } from '../api/transport.js';
import type { SmpteTime } from '../lib/timecode.js';

/** The trigger call's body: every field optional at the service; the agent always sends the first two. */
export interface TriggerBody {
  action_type: 'single_press';
  /** Whole seconds between the press and this send (the agent's reading of an undocumented field). */
  offset: number;
  start?: SmpteTime;
  duration?: SmpteTime;
}

export interface CommentBody {
  text: string;
  /** Frames from the start of the asset; absent for a comment on the whole clip. */
  timestamp?: number;
}

export interface LoggingEndpoints {
  /** POST /v2/devices/channels/{channel_id}/inputs/{index}/trigger; any 2xx (204 documented) resolves. */
  trigger(channelId: string, index: number, body: TriggerBody, signal?: AbortSignal): Promise<void>;
  /** POST /v2/devices/assets/{asset_id}/comments; any 2xx (200 with the comment documented) resolves. */
  comment(assetId: string, body: CommentBody, signal?: AbortSignal): Promise<void>;
}

export function loggingEndpoints(t: Transport): LoggingEndpoints {
  const post = async (path: string, json: unknown, signal: AbortSignal | undefined): Promise<void> => {
    const res = await t.request({ method: 'POST', path, json, ...(signal ? { signal } : {}) });
    if (res.status < 200 || res.status > 299) throw t.errorFor(res);
  };
  return {
    // Ids come from the service: encoded so an odd one cannot reach another path.
    trigger: (channelId, index, body, signal) => post(`/v2/devices/channels/${encodeURIComponent(channelId)}/inputs/${index}/trigger`, body, signal),
    comment: (assetId, body, signal) => post(`/v2/devices/assets/${encodeURIComponent(assetId)}/comments`, body, signal),
  };
}
