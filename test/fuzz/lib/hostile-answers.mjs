// What the hostile server answers. An answer is drawn in three layers, each
// from the case's PRNG: the content (a proper answer for the endpoint, a
// random status with some error body, a 2xx whose JSON is broken in one named
// way, a redirect), header garbage on top (Retry-After, Date, rate-limit
// headers), and the framing on the wire (Content-Length honest or lying,
// chunked, close-delimited, interim 1xx first, a 101 upgrade, a body that never ends,
// a slow drip, nothing at all). Each answer carries an `outcome` saying what a
// correct client can make of it, which the oracles (answers.mjs) turn into
// the exit codes a command may give. The endpoints and their proper answers
// are those of docs/service-api.md, as the
// agent calls them (agent/api/*.ts).
import { gzipSync } from 'node:zlib';

/** Which endpoint a request is for. */
export function routeOf(req) {
  const { method: m, path: p } = req;
  if (p.startsWith('/fuzz-redirect')) return 'redirected';
  if (m === 'GET' && p === '/v2/devices/me') return 'me';
  if (m === 'POST' && p === '/v2/devices/heartbeat') return 'heartbeat';
  if (m === 'GET' && p === '/health') return 'health';
  if (m === 'POST' && p === '/v2/auth/device/code') return 'code';
  if (m === 'POST' && p === '/v2/auth/token') return /grant_type=refresh_token/.test(req.body.toString('latin1')) ? 'refresh' : 'poll';
  if (m === 'POST' && p === '/v2/auth/revoke') return 'revoke';
  if (m === 'POST' && p === '/v2/devices/channels') return 'connect';
  if (m === 'POST' && /^\/v2\/devices\/channels\/(.+\/)?disconnect$/.test(p)) return 'disconnect';
  if (m === 'POST' && p === '/v2/devices/assets') return 'assets';
  if (m === 'PUT' && p.startsWith('/_storage/')) return 'storage';
  return 'other';
}

/** Routes whose 2xx body the agent must read; for the others any 2xx means done. */
const BODY_MATTERS = new Set(['me', 'health', 'code', 'poll', 'refresh', 'connect', 'assets']);

const REASONS = { 200: 'OK', 201: 'Created', 204: 'No Content', 301: 'Moved Permanently', 302: 'Found', 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 409: 'Conflict', 429: 'Too Many Requests', 500: 'Internal Server Error', 503: 'Service Unavailable' };

const json = (v) => Buffer.from(JSON.stringify(v));
const iso = (ms) => new Date(ms).toISOString();

/**
 * The service's side of one case: the secrets it hands out (so the oracles
 * can grep every output for them), the tokens it granted, the assets it
 * created. `base` is the server's URL, for presigned storage URLs.
 */
export class World {
  constructor(rng, base) {
    this.rng = rng;
    this.base = base;
    this.secrets = new Set();
    this.grants = [];
    this.assetNo = 0;
    this.deviceId = `dev-${rng.hex(8)}`;
  }

  secret(prefix) {
    const s = `${prefix}${this.rng.hex(24)}`;
    this.secrets.add(s);
    return s;
  }

  device() {
    return {
      _type: 'project_device',
      id: this.deviceId,
      name: 'Fuzz camera',
      status: 'online',
      project_id: 'prj-fuzz',
      asset_type: 'video',
      last_seen_at: iso(Date.now() - 30_000),
      last_known_firmware_version: '1.6.0',
      inserted_at: iso(Date.now() - 86_400_000),
      project: { _type: 'project', id: 'prj-fuzz', name: 'Fuzz project' },
      channels: [{ _type: 'project_device_channel', id: 'ch-fuzz-0', name: 'HDMI capture', asset_type: 'video', status: 'online', external_index: 0 }],
      channel_count: 1,
      authorization: {
        _type: 'project_device_authorization',
        id: 'auth-fuzz',
        creator_id: 'user-1',
        creator: { _type: 'user', id: 'user-1', name: 'Fuzz Person' },
        inserted_at: iso(Date.now() - 86_400_000),
        project_device_id: this.deviceId,
        expires_at: null,
        scopes: { id: 'scopes-1', asset_create: true, offline: true, device_connect: true, asset_read: false },
      },
    };
  }

  grant() {
    const g = { access_token: this.secret('fzat'), refresh_token: this.secret('fzrt'), expires_in: 28800, token_type: 'bearer' };
    return g;
  }

  deviceCode() {
    return {
      device_code: this.secret('fzdc'),
      user_code: String(this.rng.int(100000, 999999)),
      verification_uri: 'http://127.0.0.1/activate',
      verification_uri_complete: 'http://127.0.0.1/activate?code=123456',
      expires_in: 120,
      interval: 1,
      name: 'Fuzz camera',
    };
  }

  asset(req) {
    let size = 0;
    try {
      size = Number(JSON.parse(req.body.toString('utf8')).filesize) || 0;
    } catch {
      // the agent's own JSON; a parse failure only means one part
    }
    const id = `asset-${++this.assetNo}`;
    const parts = Math.max(1, Math.min(4, Math.ceil(size / 65536)));
    const upload_urls = Array.from({ length: parts }, (_, i) => `${this.base}/_storage/${id}/${i}?X-Fuzz-Signature=${this.secret('fzsig')}`);
    return { id, name: 'clip', upload_urls };
  }
}

/** The proper answer of an endpoint: {status, headers, body}. */
export function properAnswer(world, route, req) {
  const ok = (body, status = 200) => ({ status, headers: [['Content-Type', 'application/json; charset=utf-8']], body: json(body) });
  switch (route) {
    case 'me':
      return ok(world.device());
    case 'heartbeat':
    case 'disconnect':
      return { status: 204, headers: [], body: Buffer.alloc(0) };
    case 'health':
      return ok({ status: 'ok' });
    case 'code':
      return ok(world.deviceCode());
    case 'poll':
    case 'refresh': {
      const g = world.grant();
      return { ...ok(g), grant: g };
    }
    case 'revoke':
      return ok({});
    case 'connect': {
      let index = 0;
      try {
        index = JSON.parse(req.body.toString('utf8')).external_index ?? 0;
      } catch {
        // keep 0
      }
      return ok({ _type: 'project_device_channel', id: `ch-${world.rng.hex(6)}`, name: 'channel', asset_type: 'video', status: 'online', external_index: index });
    }
    case 'assets':
      return ok(world.asset(req));
    case 'storage':
      return { status: 200, headers: [['ETag', `"${world.rng.hex(32)}"`]], body: Buffer.alloc(0) };
    default:
      return { status: 404, headers: [['Content-Type', 'application/json']], body: json({ code: 404, message: 'Not Found' }) };
  }
}

// ---- content: what the answer says -------------------------------------------------

const COMMON_STATUSES = [400, 401, 403, 404, 409, 422, 429, 500, 502, 503, 504];
const EXOTIC_STATUSES = [202, 203, 205, 206, 207, 226, 299, 300, 304, 305, 306, 399, 402, 405, 406, 407, 408, 410, 411, 412, 413, 414, 415, 416, 417, 418, 421, 423, 424, 425, 426, 428, 431, 451, 499, 501, 505, 506, 507, 508, 510, 511, 520, 522, 524, 598, 599, 600, 777, 999];
/** Statuses after which a correct client tries again: the daemon-side "retryable only" mode draws from these. */
const RETRY_STATUSES = [429, 500, 502, 503, 504, 507, 520, 599];

function errorBody(rng, status) {
  return rng.weighted([
    [4, () => ({ ct: 'application/json', body: json({ code: status, errors: [{ code: status, detail: 'Something went wrong', status, title: REASONS[status] ?? 'Error' }], message: REASONS[status] ?? 'Error' }), label: 'legacy' })],
    [1, () => ({ ct: 'application/json', body: json({ code: status, errors: [{ detail: rng.nastyText(rng.int(1, 200)), title: rng.nastyText(10) }], message: rng.nastyText(rng.int(1, 300)) }), label: 'legacy-nasty' })],
    [1, () => ({ ct: 'application/json', body: json({ code: 'x', errors: 'none', message: 42 }), label: 'legacy-wrong-types' })],
    [1, () => ({ ct: 'application/json', body: json({ message: 'M'.repeat(rng.int(3000, 600_000)) }), label: 'legacy-long-message' })],
    [1, () => ({ ct: 'application/json', body: json({ errors: [{ detail: 'D'.repeat(rng.int(3000, 300_000)), title: 'T'.repeat(rng.int(1, 5000)) }] }), label: 'legacy-long-detail' })],
    [1, () => ({ ct: 'application/json', body: json({ error: rng.pick(['invalid_grant', 'invalid_request', 'invalid_client', 'server_error', 'x'.repeat(5000), 'slow_down']) }), label: 'oauth-error' })],
    [1, () => ({ ct: 'text/html', body: Buffer.from(`<html><body><h1>${status}</h1>${'<p>proxy</p>'.repeat(rng.int(1, 50))}</body></html>`), label: 'html' })],
    [1, () => ({ ct: 'application/xml', body: Buffer.from(`<?xml version="1.0"?><Error><Code>SlowDown</Code><Message>${'Please reduce your request rate. '.repeat(rng.int(1, 40))}</Message></Error>`), label: 'xml' })],
    [1, () => ({ ct: rng.pick(['application/json', 'text/plain', undefined]), body: Buffer.alloc(0), label: 'empty' })],
    [1, () => ({ ct: 'application/json', body: rng.bytes(rng.int(1, 2000)), label: 'binary' })],
  ])();
}

/** A 2xx body for `route` broken (or bent) in one named way: {body, ct, quality: ok|bad|either, label}. */
function mutatedBody(rng, route, proper) {
  let base;
  try {
    base = JSON.parse(proper.body.toString('utf8'));
  } catch {
    base = {};
  }
  const out = (v, quality, label, ct = 'application/json') => ({ body: Buffer.isBuffer(v) ? v : json(v), quality, label, ct });
  const copy = () => structuredClone(base);
  const keys = Object.keys(base);
  const wrongValue = () => rng.pick([42, -1, true, false, [], [1, 2], {}, { a: 1 }, 1.5]);
  const generic = [
    [2, () => out(rng.pick([[], [base], 'string', 42, null, true]), 'bad', 'top-level-not-object')],
    [2, () => out(Buffer.from(`<html>${'x'.repeat(rng.int(0, 300))}</html>`), 'bad', 'html-not-json')],
    [2, () => out(proper.body.subarray(0, Math.max(1, proper.body.length >> 1)), 'bad', 'json-cut-half')],
    [1, () => out(Buffer.alloc(0), 'bad', 'empty-body')],
    [1, () => out(rng.bytes(rng.int(1, 3000)), 'bad', 'binary-garbage')],
    [1, () => out(Buffer.concat([proper.body, Buffer.from(' trailing {garbage')]), 'bad', 'json-then-garbage')],
    [1, () => {
      const depth = rng.pick([1000, 10_000, 100_000, 400_000]);
      return out(Buffer.from(`${'['.repeat(depth)}${']'.repeat(depth)}`), 'bad', `deep-nesting-top-${depth}`);
    }],
    [1, () => out(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), proper.body]), 'either', 'utf8-bom')],
    [2, () => {
      const depth = rng.pick([100, 5000, 50_000, 200_000]);
      // The deep value is an unknown field: a record with it is still well formed.
      const rest = JSON.stringify(base) === '{}' ? '}' : `,${JSON.stringify(base).slice(1)}`;
      const text = `{"x_nested":${'['.repeat(depth)}${']'.repeat(depth)}${rest}`;
      return out(Buffer.from(text), 'ok', `deep-unknown-field-${depth}`);
    }],
    [2, () => {
      const v = copy();
      for (let i = 0; i < rng.int(1, 5); i++) v[`x_unknown_${i}`] = rng.pick([rng.nastyText(40), 1e308, -0, null, [null, {}], { deep: { er: [1] } }, 'U'.repeat(rng.int(1000, 200_000))]);
      return out(v, 'ok', 'unknown-fields');
    }],
    [1, () => out(Buffer.from(JSON.stringify(base, null, rng.pick(['\t', '    ', '\n']))), 'ok', 'whitespace')],
    [1, () => {
      // Invalid UTF-8 inside a string value of an unknown field: decoded as U+FFFD, still JSON.
      const s = JSON.stringify({ ...base, x_bytes: 'AB' });
      const at = s.indexOf('"AB"') + 1;
      return out(Buffer.concat([Buffer.from(s.slice(0, at)), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from(s.slice(at + 2))]), 'ok', 'invalid-utf8-in-unknown');
    }],
    [1, () => out(Buffer.from(JSON.stringify(base)), 'either', 'content-type-text', 'text/plain')],
    [1, () => out(Buffer.from(JSON.stringify(base)), 'either', 'content-type-missing', undefined)],
    [1, () => out(Buffer.from(JSON.stringify(base)), 'ok', 'content-type-vnd', 'application/vnd.api+json; charset=utf-8')],
  ];
  const perRoute = {
    me: [
      [3, () => {
        const v = copy();
        const k = rng.pick(['name', 'status', 'project_id', 'asset_type', 'last_seen_at', 'last_known_firmware_version', 'project', 'channels', 'authorization', '_type']);
        delete v[k];
        return out(v, 'ok', `drop-optional-${k}`);
      }],
      [2, () => {
        const v = copy();
        for (const k of rng.some(['name', 'status', 'project_id', 'asset_type', 'last_seen_at', 'project', 'channels', 'authorization'], 1, 4)) v[k] = null;
        return out(v, 'ok', 'null-optionals');
      }],
      [2, () => {
        const v = copy();
        const k = rng.pick(['name', 'status', 'project_id', 'asset_type', 'last_seen_at', 'last_known_firmware_version']);
        v[k] = wrongValue();
        return out(v, 'bad', `wrong-type-${k}`);
      }],
      [2, () => {
        const v = copy();
        const how = rng.pick(['missing', 'number', 'null', 'object', 'array', 'bool']);
        if (how === 'missing') delete v.id;
        else v.id = { number: 7, null: null, object: {}, array: ['x'], bool: true }[how];
        return out(v, 'bad', `id-${how}`);
      }],
      [1, () => out({ ...copy(), id: '' }, 'either', 'id-empty')],
      [1, () => out({ ...copy(), project: rng.pick(['prj', 5, ['a']]) }, 'bad', 'project-not-object')],
      [1, () => out({ ...copy(), project: { id: 5, name: ['x'] } }, 'bad', 'project-fields-wrong')],
      [1, () => out({ ...copy(), channels: rng.pick([{}, 'ch', 3]) }, 'bad', 'channels-not-array')],
      [1, () => out({ ...copy(), channels: [rng.pick([null, 'ch', 5, { name: 'no id' }, { id: 9 }, { id: 'c', external_index: '0' }, { id: 'c', asset_type: 7 }])] }, 'bad', 'channel-broken')],
      [1, () => out({ ...copy(), channels: Array.from({ length: rng.int(100, 20_000) }, (_, i) => ({ id: `c${i}`, name: 'n', external_index: i })) }, 'ok', 'many-channels')],
      [1, () => out(Buffer.from(JSON.stringify(copy()).replace('"external_index":0', '"external_index":1e400')), 'either', 'external-index-1e400')],
      [1, () => out({ ...copy(), authorization: rng.pick(['auth', 5, [1]]) }, 'bad', 'authorization-not-object')],
      [1, () => {
        const v = copy();
        v.authorization.scopes.asset_create = rng.pick(['yes', 1, {}]);
        return out(v, 'bad', 'scope-not-boolean');
      }],
      [1, () => {
        const v = copy();
        v.authorization.expires_at = rng.pick(['not a date', '1970-01-01T00:00:00Z', '9999-12-31T23:59:59Z', '2020-02-30T25:61:61Z', '']);
        return out(v, 'ok', 'expires-at-odd');
      }],
      [1, () => out({ ...copy(), name: rng.nastyText(rng.int(1, 400)), status: rng.pick(['paused', 'weird', '']), last_seen_at: 'yesterday' }, 'ok', 'nasty-strings')],
      [1, () => out({ ...copy(), name: 'N'.repeat(rng.int(10_000, 400_000)) }, 'ok', 'long-name')],
      [1, () => out(Buffer.from(JSON.stringify(copy()).replace(/^\{/, '{"id":5,')), 'ok', 'duplicate-key-last-wins')],
    ],
    health: [
      [3, () => out({ status: rng.pick([5, null, true, [], {}]) }, 'bad', 'status-wrong-type')],
      [2, () => out({}, 'bad', 'status-missing')],
      [2, () => out({ status: rng.pick(['degraded', 'down', '']) }, 'ok', 'status-odd')],
    ],
    code: [
      [3, () => {
        const v = copy();
        const k = rng.pick(['device_code', 'user_code', 'verification_uri', 'expires_in']);
        delete v[k];
        return out(v, 'bad', `missing-${k}`);
      }],
      [3, () => {
        const v = copy();
        const k = rng.pick(['device_code', 'user_code', 'verification_uri', 'expires_in', 'verification_uri_complete', 'name']);
        v[k] = k === 'expires_in' ? rng.pick(['120', null, [], true]) : rng.pick([5, true, [], {}]);
        return out(v, 'bad', `wrong-type-${k}`);
      }],
      [2, () => out({ ...copy(), interval: rng.pick([0, -5, 1e9, 0.001, '5', null]) }, 'either', 'interval-odd')],
      [2, () => out({ ...copy(), expires_in: rng.pick([0, -1, 1e9, 0.5]) }, 'either', 'expires-in-odd')],
      [1, () => out({ ...copy(), user_code: rng.pick(['U'.repeat(rng.int(1000, 300_000)), rng.nastyText(50)]) }, 'either', 'user-code-odd')],
      [1, () => out({ ...copy(), verification_uri: rng.pick(['javascript:alert(1)', 'V'.repeat(200_000), rng.nastyText(40)]) }, 'either', 'verification-uri-odd')],
    ],
    poll: null, // filled below: the token answers
    refresh: null,
    connect: [
      [3, () => out({ ...copy(), id: rng.pick([undefined, 5, null, '']) }, 'bad', 'channel-id-broken')],
      [2, () => out({ ...copy(), external_index: rng.pick(['0', [], {}]) }, 'bad', 'external-index-wrong-type')],
    ],
    assets: [
      [3, () => out({ ...copy(), id: rng.pick([undefined, 5, null, '']) }, 'bad', 'asset-id-broken')],
      [3, () => out({ ...copy(), upload_urls: rng.pick([undefined, [], 'http://x', {}, [5], [null]]) }, 'bad', 'upload-urls-broken')],
      [2, () => out({ ...copy(), upload_urls: [rng.pick(['ftp://127.0.0.1/x', 'file:///etc/passwd', '/relative/path', 'javascript:alert(1)', 'http://user:pw@127.0.0.1/x', 'not a url'])] }, 'bad', 'upload-url-scheme')],
      [1, () => out({ ...copy(), upload_urls: Array.from({ length: 10_001 }, (_, i) => `http://127.0.0.1:1/${i}`) }, 'bad', 'upload-urls-10001')],
      [1, () => out({ ...copy(), upload_urls: ['http://127.0.0.1:1/closed-port?X-Fuzz-Signature=none'] }, 'ok', 'upload-url-refused-port')],
    ],
  };
  const tokenBody = [
    [3, () => {
      const v = copy();
      const k = rng.pick(['access_token', 'expires_in']);
      delete v[k];
      return out(v, 'bad', `missing-${k}`);
    }],
    [3, () => {
      const v = copy();
      const k = rng.pick(['access_token', 'refresh_token', 'expires_in', 'token_type']);
      v[k] = k === 'expires_in' ? rng.pick(['28800', null, [], true, 0, -5]) : rng.pick([5, true, [], {}, '']);
      if (k === 'access_token' && v[k] === '') return out(v, 'bad', 'access-token-empty');
      return out(v, 'bad', `wrong-type-${k}`);
    }],
    [1, () => {
      const v = copy();
      delete v.refresh_token;
      return out(v, 'ok', 'no-refresh-token');
    }],
    [1, () => out(Buffer.from(JSON.stringify(copy()).replace('"expires_in":28800', '"expires_in":1e400')), 'either', 'expires-in-1e400')],
    [1, () => out({ ...copy(), expires_in: rng.pick([1e-9, 1e15, 0.5, 3600.5]) }, 'either', 'expires-in-odd')],
    [1, () => out({ ...copy(), token_type: rng.pick(['Bearer', 'mac', 'x'.repeat(3000)]), scope: 'asset_create offline extra' }, 'ok', 'token-type-odd')],
  ];
  perRoute.poll = tokenBody;
  perRoute.refresh = tokenBody;
  const specific = perRoute[route] ?? [];
  return rng.weighted([...generic, ...specific.map(([w, f]) => [w * 2, f])])();
}

/** OAuth answers of the token endpoint while a pairing waits (docs/service-api.md, "Pairing"). */
function oauthPollContent(rng) {
  const error = rng.weighted([
    [8, 'authorization_pending'],
    [2, 'slow_down'],
    [1, 'expired_token'],
    [1, 'invalid_grant'],
    [1, 'invalid_client'],
    [1, 'invalid_request'],
    [1, 'access_denied'],
    [1, 'unknown_error_code'],
  ]);
  return { status: 400, ct: 'application/json', body: json({ error, error_description: 'fuzz' }), label: `oauth-${error}` };
}

/**
 * The content of one answer: {status, headers, body, quality, label, grant?}.
 * `mix` tunes the draw: pValid (a proper answer), retryOnly (nothing a
 * correct client would give up on).
 */
export function drawContent(rng, world, route, req, mix) {
  const proper = properAnswer(world, route, req);
  const withCt = (ct) => (ct === undefined ? [] : [['Content-Type', ct]]);
  if (route === 'other' || route === 'redirected') return { ...proper, quality: 'ok', label: 'proper' };
  if (rng.chance(mix.pValid)) return { ...proper, quality: 'ok', label: 'proper' };
  if (route === 'poll' && !mix.retryOnly && rng.chance(0.6)) {
    const c = oauthPollContent(rng);
    return { status: c.status, headers: withCt(c.ct), body: c.body, quality: 'n/a', label: c.label };
  }
  const family = mix.retryOnly
    ? rng.weighted([[5, 'retry-status'], [route === 'storage' ? 2 : 0, 'body'], [route === 'storage' ? 0 : 1, 'unauthorized']])
    : rng.weighted([[5, 'status'], [5, 'body'], [1, 'redirect'], [1, 'retry-status']]);
  if (family === 'body') {
    if (!BODY_MATTERS.has(route)) {
      // Any 2xx is success here; a body of garbage must not matter.
      const b = rng.pick([rng.bytes(rng.int(1, 500)), Buffer.from('<html>ok</html>'), Buffer.from('{"weird":true}')]);
      return { status: rng.pick([200, 201, 202, 204, 299]), headers: withCt(rng.pick(['application/json', 'text/html', undefined])), body: b, quality: 'ok', label: '2xx-odd-body' };
    }
    const m = mutatedBody(rng, route, proper);
    return { status: rng.weighted([[6, proper.status], [1, 201], [1, 203]]), headers: withCt(m.ct), body: m.body, quality: m.quality, label: m.label };
  }
  if (family === 'redirect') {
    const status = rng.pick([301, 302, 303, 307, 308]);
    const location = rng.pick([`${world.base}/fuzz-redirect${req.path}`, `/fuzz-redirect${req.path}`, 'https://example.invalid/x', '//evil.invalid/x', '', 'javascript:alert(1)', `${world.base}/fuzz-redirect/${'L'.repeat(4000)}`]);
    return { status, headers: [['Location', location], ['Content-Type', 'text/html']], body: Buffer.from('<a>moved</a>'), quality: 'n/a', label: `redirect-${status}` };
  }
  const status =
    family === 'unauthorized' ? 401 : family === 'retry-status' ? rng.pick(RETRY_STATUSES) : rng.weighted([[6, rng.pick(COMMON_STATUSES)], [2, rng.pick(EXOTIC_STATUSES)]]);
  const e = errorBody(rng, status);
  return { status, headers: withCt(e.ct), body: e.body, quality: 'n/a', label: `status-${status}-${e.label}` };
}

// ---- headers: garbage on top of any answer ------------------------------------------

function garbageHeaders(rng) {
  const h = [];
  const label = [];
  if (rng.chance(0.5)) {
    h.push(['Retry-After', rng.pick(['0', '-1', '1e9', '99999999999999999999', 'NaN', 'abc', '', ' 5 ', '3600', '86400000', '0.5', 'Wed, 21 Oct 2015 07:28:00 GMT', 'Fri, 31 Dec 9999 23:59:59 GMT', 'Mon, 99 Foo 2024 99:99:99 GMT', 'A'.repeat(4000)])]);
    label.push('retry-after');
  }
  if (rng.chance(0.4)) {
    h.push(['Date', rng.pick(['garbage', '', 'Thu, 01 Jan 1970 00:00:00 GMT', 'Fri, 31 Dec 9999 23:59:59 GMT', new Date(Date.now() + rng.int(-1e10, 1e10)).toUTCString(), '0'])]);
    label.push('date');
  }
  if (rng.chance(0.5)) {
    const v = () => rng.pick(['-1', '0', 'NaN', '1e309', '99999999999999999999', 'abc', '', '5', '100', '1000000000000000']);
    h.push(['x-ratelimit-limit', v()], ['x-ratelimit-remaining', v()], ['x-ratelimit-window', v()]);
    label.push('ratelimit');
  }
  if (rng.chance(0.3)) {
    h.push(['RateLimit', rng.pick(['limit=10, remaining=0, reset=5', 'garbage;;;', '"x"'])], ['RateLimit-Policy', '10;w=1']);
    label.push('ratelimit-draft');
  }
  if (rng.chance(0.3)) {
    for (let i = 0; i < rng.int(1, 60); i++) h.push([`X-Fuzz-${i}`, rng.pick(['', 'v', 'x'.repeat(rng.int(1, 100)), '\u00e9\u00e8'])]);
    label.push('many');
  }
  if (rng.chance(0.2)) {
    h.push(['Set-Cookie', 'session=fuzz; Path=/'], ['Connection', rng.pick(['close', 'keep-alive', 'upgrade', 'garbage'])]);
    label.push('connection');
  }
  if (rng.chance(0.2)) {
    // What node:http servers and proxies send: the agent's socket pool reads it (agent/api/transport.ts IDLE_SOCKET_MS).
    h.push(['Keep-Alive', rng.pick(['timeout=5', 'timeout=0', 'timeout=1, max=1', 'timeout=-5', 'timeout=99999999999', 'garbage', 'max=0'])]);
    label.push('keep-alive');
  }
  return { headers: h, label: label.join('+') };
}

// ---- framing: the bytes on the wire --------------------------------------------------

function head(status, headers, reason = REASONS[status] ?? 'Fuzz', version = 'HTTP/1.1') {
  let s = `${version} ${status} ${reason}\r\n`;
  for (const [k, v] of headers) s += `${k}: ${v}\r\n`;
  return Buffer.from(`${s}\r\n`, 'latin1');
}

/** A JSON-looking body of `size` bytes, streamed: valid JSON once complete. */
async function streamHuge(io, size, chunked) {
  const prefix = Buffer.from('{"id":"huge","pad":"');
  const suffix = Buffer.from('"}');
  const block = Buffer.alloc(64 * 1024, 0x41);
  let left = size - prefix.length - suffix.length;
  const send = (b) => (chunked ? io.write(Buffer.concat([Buffer.from(`${b.length.toString(16)}\r\n`), b, Buffer.from('\r\n')])) : io.write(b));
  if (!(await send(prefix))) return;
  while (left > 0) {
    const n = Math.min(left, block.length);
    if (!(await send(block.subarray(0, n)))) return;
    left -= n;
  }
  if (!(await send(suffix))) return;
  if (chunked) await io.write('0\r\n\r\n');
}

/** One interim answer: 100, 102, 103 with Link headers, or a 1xx nobody defined. */
function interimHead(rng) {
  return rng.pick([
    'HTTP/1.1 100 Continue\r\n\r\n',
    'HTTP/1.1 102 Processing\r\n\r\n',
    'HTTP/1.1 103 Early Hints\r\nLink: </x.css>; rel=preload; as=style\r\n\r\n',
    'HTTP/1.1 103 Early Hints\r\nLink: </a.js>; rel=preload; as=script\r\nLink: <https://cdn.invalid>; rel=preconnect\r\n\r\n',
    'HTTP/1.1 150 Whatever\r\nX-Interim: 1\r\n\r\n',
  ]);
}

/**
 * The framing of one answer: {label, kind, write(io, content) → 'keep'|'close'|'hang'}.
 * `kind` is what the client can make of it: answer (the content as sent,
 * after any interim 1xx, which a client reads past), broken (no usable
 * answer), hang (nothing more ever comes), upgrade (a 101: refused), odd (a
 * client may take it or refuse it), and slow (the content, late).
 */
export function drawFraming(rng, mix) {
  const cl = (c, extra = []) => head(c.status, [...c.headers, ...extra, ['Content-Length', String(c.body.length)]]);
  const options = [
    [30, { label: 'content-length', kind: 'answer', write: async (io, c) => ((await io.write(Buffer.concat([cl(c), c.body]))) ? 'keep' : 'close') }],
    [4, { label: 'chunked', kind: 'answer', write: async (io, c) => {
      const parts = [head(c.status, [...c.headers, ['Transfer-Encoding', 'chunked']])];
      for (let at = 0; at < c.body.length; ) {
        const n = Math.min(c.body.length - at, rng.int(1, 4096));
        parts.push(Buffer.from(`${n.toString(16)}${rng.chance(0.1) ? ';ext=1' : ''}\r\n`), c.body.subarray(at, at + n), Buffer.from('\r\n'));
        at += n;
      }
      parts.push(Buffer.from(rng.chance(0.2) ? '0\r\nX-Trailer: t\r\n\r\n' : '0\r\n\r\n'));
      return (await io.write(Buffer.concat(parts))) ? 'keep' : 'close';
    } }],
    [3, { label: 'close-delimited', kind: 'answer', write: async (io, c) => {
      await io.write(Buffer.concat([head(c.status, [...c.headers, ['Connection', 'close']], undefined, rng.pick(['HTTP/1.1', 'HTTP/1.0'])), c.body]));
      return 'close';
    } }],
    [2, { label: 'cl-too-long-close', kind: 'broken', statusSent: true, write: async (io, c) => {
      await io.write(Buffer.concat([head(c.status, [...c.headers, ['Content-Length', String(c.body.length + rng.int(1, 5000))]]), c.body]));
      return 'close';
    } }],
    [2, { label: 'cl-too-long-hang', kind: 'hang', statusSent: true, write: async (io, c) => {
      await io.write(Buffer.concat([head(c.status, [...c.headers, ['Content-Length', String(c.body.length + rng.int(1, 5000))]]), c.body]));
      return 'hang';
    } }],
    [2, { label: 'cl-too-short', kind: 'short', write: async (io, c) => {
      await io.write(Buffer.concat([head(c.status, [...c.headers, ['Content-Length', String(c.body.length >> 1)]]), c.body]));
      return 'keep';
    } }],
    [1, { label: 'cl-and-te', kind: 'odd', write: async (io, c) => {
      await io.write(Buffer.concat([head(c.status, [...c.headers, ['Content-Length', String(c.body.length)], ['Transfer-Encoding', 'chunked']]), c.body]));
      return 'close';
    } }],
    [1, { label: 'duplicate-content-length', kind: 'broken', write: async (io, c) => {
      await io.write(Buffer.concat([head(c.status, [...c.headers, ['Content-Length', String(c.body.length)], ['Content-Length', String(c.body.length + 7)]]), c.body]));
      return 'close';
    } }],
    [2, { label: 'chunked-garbage', kind: 'broken', statusSent: true, write: async (io, c) => {
      await io.write(Buffer.concat([head(c.status, [...c.headers, ['Transfer-Encoding', 'chunked']]), Buffer.from(rng.pick(['zz\r\nabc\r\n', '-5\r\n', 'ffffffffffffffffff\r\nx', '5\r\nabc\r\n0\r\n\r\n', '\r\n\r\n']))]));
      return 'close';
    } }],
    [1, { label: 'chunked-truncated-close', kind: 'broken', statusSent: true, write: async (io, c) => {
      await io.write(Buffer.concat([head(c.status, [...c.headers, ['Transfer-Encoding', 'chunked']]), Buffer.from(`${(c.body.length + 10).toString(16)}\r\n`), c.body]));
      return 'close';
    } }],
    [1, { label: 'chunked-truncated-hang', kind: 'hang', statusSent: true, write: async (io, c) => {
      await io.write(Buffer.concat([head(c.status, [...c.headers, ['Transfer-Encoding', 'chunked']]), Buffer.from(`${c.body.length.toString(16)}\r\n`), c.body, Buffer.from('\r\n')]));
      return 'hang';
    } }],
    [3, { label: 'huge', kind: 'huge', write: async (io, c) => {
      const size = rng.pick([1024 * 1024 + 1, 1.5 * 1024 * 1024, 4 * 1024 * 1024, 16 * 1024 * 1024, 48 * 1024 * 1024]);
      const how = rng.pick(['content-length', 'close-delimited', 'chunked']);
      const extra = how === 'content-length' ? [['Content-Length', String(size)]] : how === 'chunked' ? [['Transfer-Encoding', 'chunked']] : [['Connection', 'close']];
      const headers = [...c.headers.filter(([k]) => k.toLowerCase() !== 'content-type'), ['Content-Type', 'application/json'], ...extra];
      if (!(await io.write(head(c.status, headers)))) return 'close';
      await streamHuge(io, size, how === 'chunked');
      return 'close';
    } }],
    [3, { label: 'slow-drip', kind: 'slow', write: async (io, c) => {
      const bytes = Buffer.concat([cl(c), c.body]);
      const totalMs = rng.int(200, 4000);
      const pieces = Math.min(bytes.length, rng.int(3, 60));
      const step = Math.ceil(bytes.length / pieces);
      for (let at = 0; at < bytes.length; at += step) {
        if (!(await io.write(bytes.subarray(at, at + step)))) return 'close';
        await io.delay(totalMs / pieces);
      }
      return 'keep';
    } }],
    [2, { label: 'headers-then-hang', kind: 'hang', statusSent: true, write: async (io, c) => {
      await io.write(cl(c));
      return 'hang';
    } }],
    [1, { label: 'trailing-garbage', kind: 'odd', write: async (io, c) => {
      await io.write(Buffer.concat([cl(c), c.body, Buffer.from(rng.pick(['HTTP/1.1 500 Oops\r\n\r\n', 'garbage\r\n\r\n', '\u0000\u0001\u0002']))]));
      return 'keep';
    } }],
    [1, { label: 'continue-first', kind: 'answer', write: async (io, c) => {
      for (let i = 0; i < rng.int(1, 3); i++) await io.write('HTTP/1.1 100 Continue\r\n\r\n');
      return (await io.write(Buffer.concat([cl(c), c.body]))) ? 'keep' : 'close';
    } }],
    // Interim answers before the final one are read past, asked for or not (RFC 9110, 15.2; docs/commands.md): the answer counts.
    [2, { label: 'interim-first', kind: 'answer', write: async (io, c) => {
      for (let i = 0, n = rng.int(1, 4); i < n; i++) await io.write(interimHead(rng));
      return (await io.write(Buffer.concat([cl(c), c.body]))) ? 'keep' : 'close';
    } }],
    [1, { label: 'interim-then-hang', kind: 'hang', write: async (io) => {
      await io.write(interimHead(rng));
      return 'hang';
    } }],
    [1, { label: 'interim-then-close', kind: 'broken', write: async (io) => {
      await io.write(interimHead(rng));
      return 'close';
    } }],
    [4, { label: 'switching-protocols-101', kind: 'upgrade', write: async (io, c) => {
      await io.write(head(101, [['Upgrade', rng.pick(['websocket', 'h2c', 'garbage'])], ['Connection', 'Upgrade']], 'Switching Protocols'));
      const then = rng.pick(['silence', 'garbage', 'close', 'answer']);
      if (then === 'close') return 'close';
      if (then === 'garbage') await io.write(rng.bytes(rng.int(1, 2000)));
      if (then === 'answer') await io.write(Buffer.concat([cl(c), c.body]));
      return 'hang';
    } }],
    [3, { label: 'no-answer', kind: 'hang', write: async () => 'hang' }],
    [2, { label: 'close-at-once', kind: 'broken', write: async (io) => {
      io.end();
      return 'close';
    } }],
    [1, { label: 'reset-at-once', kind: 'broken', write: async (io) => {
      if (typeof io.sock.resetAndDestroy === 'function') io.sock.resetAndDestroy();
      else io.destroy();
      return 'close';
    } }],
    [2, { label: 'bad-status-line', kind: 'broken', write: async (io) => {
      await io.write(rng.pick(['HTTP/1.1 2OO OK\r\n\r\n', 'HTTP/2 200\r\n\r\n', 'ICY 200 OK\r\n\r\n', 'HTTP/1.1 -1 X\r\n\r\n', 'HTTP/1.1 20\r\n\r\n', 'garbage\r\n\r\n', '\u0000\u0000\u0000\u0000', 'HTTP/1.1 1000 Big\r\n\r\n']));
      return 'close';
    } }],
    [1, { label: 'truncated-status-line', kind: 'broken', write: async (io) => {
      await io.write('HTTP/1.1 2');
      return rng.pick(['close', 'hang']);
    } }],
    [2, { label: 'truncated-headers', kind: 'broken', write: async (io, c) => {
      const h = cl(c);
      await io.write(h.subarray(0, rng.int(12, Math.max(13, h.length - 3))));
      return 'close';
    } }],
    [1, { label: 'header-overflow', kind: 'broken', write: async (io, c) => {
      await io.write(Buffer.concat([cl(c, [['X-Big', 'B'.repeat(rng.int(20_000, 200_000))]]), c.body]));
      return 'close';
    } }],
    [1, { label: 'bad-header-line', kind: 'odd', write: async (io, c) => {
      const bad = rng.pick(['No colon here\r\n', 'X-Ctl\u0001: v\r\n', ' folded: continuation\r\n', 'X-Nul: a\u0000b\r\n']);
      const h = cl(c).toString('latin1').replace('\r\n', `\r\n${bad}`);
      await io.write(Buffer.concat([Buffer.from(h, 'latin1'), c.body]));
      return 'close';
    } }],
    [1, { label: 'bare-lf', kind: 'odd', write: async (io, c) => {
      await io.write(Buffer.concat([Buffer.from(cl(c).toString('latin1').replace(/\r\n/g, '\n'), 'latin1'), c.body]));
      return 'close';
    } }],
    [1, { label: 'gzip', kind: 'gzip', write: async (io, c) => {
      const z = gzipSync(c.body);
      await io.write(Buffer.concat([head(c.status, [...c.headers, ['Content-Encoding', 'gzip'], ['Content-Length', String(z.length)]]), z]));
      return 'keep';
    } }],
  ];
  const pick = rng.chance(mix.pProperWire ?? 0.5) ? options[0][1] : rng.weighted(options);
  return pick;
}

/** One whole answer for a request: content, header garbage, framing; and its outcome. */
export function drawAnswer(rng, world, route, req, mix) {
  const content = drawContent(rng, world, route, req, mix);
  let headers = content.headers;
  let hlabel = '';
  if (rng.chance(mix.pGarbageHeaders ?? 0.25)) {
    const g = garbageHeaders(rng);
    headers = [...headers, ...g.headers];
    hlabel = g.label;
  }
  const framing = route === 'other' || route === 'redirected' ? drawFraming(rng, { pProperWire: 1 }) : drawFraming(rng, mix);
  const c = { status: content.status, headers, body: content.body };
  // What a correct client can make of it.
  const bodyMatters = BODY_MATTERS.has(route);
  let quality = content.status >= 200 && content.status < 300 ? (bodyMatters ? content.quality : 'ok') : 'n/a';
  let kind = framing.kind === 'slow' ? 'answer' : framing.kind;
  // A 204 or 304 has no body by definition: one sent anyway is garbage in front of the next answer.
  if (kind === 'answer' && (content.status === 204 || content.status === 304) && c.body.length > 0) kind = 'odd';
  if (kind === 'short') {
    // Half the body, the rest left on the socket as garbage: a 2xx body that
    // matters is then broken JSON, and a client may also refuse the bytes after it.
    kind = 'odd';
    if (quality !== 'n/a' && bodyMatters && c.body.length > 1) quality = 'bad';
  }
  if (kind === 'gzip') {
    kind = 'answer';
    if (quality !== 'n/a' && bodyMatters) quality = quality === 'bad' ? 'bad' : 'either';
  }
  if (kind === 'huge') {
    kind = 'answer';
    if (quality !== 'n/a') quality = 'either';
  }
  const outcome = { kind, status: content.status, quality, slow: framing.kind === 'slow', huge: framing.kind === 'huge', statusSent: framing.statusSent === true };
  const label = [content.label, hlabel, framing.label].filter((s) => s !== '').join(' / ');
  return {
    route,
    label: `${content.status} ${label}`,
    outcome,
    grant: content.status >= 200 && content.status < 300 && content.quality === 'ok' && framing.kind === 'answer' && content.label === 'proper' ? properGrantOf(content) : undefined,
    write: (io) => framing.write(io, c),
  };
}

function properGrantOf(content) {
  try {
    const v = JSON.parse(content.body.toString('utf8'));
    return typeof v.access_token === 'string' ? v : undefined;
  } catch {
    return undefined;
  }
}

/** The exit codes `check` may give for its GET /v2/devices/me answer (docs/commands.md, "Exit codes (sysexits)"). */
export function checkExits(o) {
  const s = o.status;
  const failing = (st) => (st >= 600 ? [69, 75, 76] : st === 401 || st === 403 ? [77] : st === 429 || st >= 500 ? [75] : st >= 300 && st < 400 ? [76] : st >= 400 ? [75, 76] : [69, 75, 76]);
  let set;
  // A status line then silence: the time limit (69), or the status itself where it says what happened (a 5xx, a 429).
  if (o.kind === 'hang') set = [69, ...(o.statusSent && !(s >= 200 && s < 300) ? failing(s) : [])];
  else if (o.kind === 'broken') set = [69, 76, ...(s >= 500 || s === 429 ? [75] : []), ...(s === 401 || s === 403 ? [77] : []), ...(o.statusSent && !(s >= 200 && s < 300) ? failing(s) : [])];
  else if (o.kind === 'upgrade') set = [69, 76];
  else if (s >= 200 && s < 300) set = o.quality === 'ok' ? [0] : o.quality === 'bad' ? [76] : [0, 76];
  else set = failing(s);
  if (o.kind === 'odd') set = [...set, 0, 69, 75, 76, 77].filter((v, i, a) => a.indexOf(v) === i);
  if (o.slow) set = [...set, 69];
  // A hung or huge answer is cut by the agent's own time or size limit: exit 69 / 76 fit too.
  if (o.huge && s >= 200 && s < 300) set = [...set, 69];
  return [...new Set(set)].sort((a, b) => a - b);
}

/** Would a correct client try this again (network, 5xx, 429, 401, a garbled 2xx)? docs/channels-and-queue.md. */
export function retryable(o, route) {
  // A whole head with a failing status may be acted on by that status, the broken or endless body unread.
  if (o.statusSent && (o.status < 200 || o.status > 299)) return retryable({ ...o, kind: 'answer', statusSent: false }, route);
  // No usable answer (or one that may come too late): the network's fault, retried. An odd one may be taken as it is.
  if (o.kind !== 'answer' && o.kind !== 'odd') return true;
  if (o.slow) return true;
  const s = o.status;
  // A 2xx whose body is unusable (an upload URL carrying credentials, say) is not in docs/channels-and-queue.md's list of what is retried.
  if (s >= 200 && s < 300) return o.quality === 'ok' || o.quality === 'n/a';
  // A 401 is a token problem at the API; presigned storage takes no token, so there it means nothing a retry fixes.
  return (s === 401 && route !== 'storage') || s === 429 || s >= 500;
}
