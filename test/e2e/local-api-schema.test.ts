// The local API's published description (docs/local-api.openapi.json, issue
// 30) against a running daemon's real answers: the in-process rig (rig.ts),
// its socket, the agent's own client, ajv (JSON Schema 2020-12, as OpenAPI 3.1
// uses it) with ajv-formats. Every endpoint is called, its answers and every
// events line checked; refusals too.
//
// The file is open to readers (a field, a section, a line type or a route it
// does not describe may come from a newer agent: a client skips it) but this
// test is not: it closes every described object, and every route the daemon
// serves, every section of its status document and every type of line it
// writes must be described; every operation's success answer is checked here
// at least once. A feature that
// adds a route, a section, a line or a field adds it to the schema (and a
// call or a line here).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { apiEvents, type ApiReply } from '../../agent/localapi/client.js';
import { apiSocketOf, type LocalApiUnit } from '../../agent/localapi/local-api-unit.js';
import { until as realUntil } from '../support/until.js';
import { freePort } from '../web/support.js';
import { MINUTE, Rig, SECOND } from './rig.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ID = 'https://c2c-agent.invalid/local-api';
/** The published file: its answers open, so a client of this agent reads a newer one's. */
const PUBLISHED = JSON.parse(readFileSync(join(ROOT, 'docs/local-api.openapi.json'), 'utf8')) as {
  paths: Record<string, Record<string, { responses?: Record<string, { $ref?: string; content?: Record<string, unknown> }>; requestBody?: { content: Record<string, unknown> } }>>;
  components: { schemas: Record<string, { properties?: Record<string, unknown> }> };
};

/** Every described object closed (`additionalProperties: false` where the file leaves it open): this agent writes nothing undescribed. */
function closed<T>(node: T): T {
  if (Array.isArray(node)) return node.map(closed) as T;
  if (node === null || typeof node !== 'object') return node;
  const out = Object.fromEntries(Object.entries(node).map(([k, v]) => [k, closed(v)])) as Record<string, unknown>;
  if (out.properties !== undefined && typeof out.properties === 'object' && !('additionalProperties' in out)) out.additionalProperties = false;
  return out as T;
}
const SCHEMA = closed(PUBLISHED);
const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

const ajv = new Ajv2020({ allErrors: true, allowUnionTypes: true, strict: true });
// A CommonJS default export, as ESM sees it: the plugin is its `default`.
const addFormats = ((formats as unknown as { default?: unknown }).default ?? formats) as (a: Ajv2020) => Ajv2020;
addFormats(ajv);
// OpenAPI's own keywords around the schemas: annotations to ajv, never compiled.
ajv.addVocabulary(['openapi', 'jsonSchemaDialect', 'info', 'servers', 'paths', 'components']);
ajv.addSchema({ ...SCHEMA, $id: ID });

const esc = (s: string): string => s.replace(/~/g, '~0').replace(/\//g, '~1');
const schemaAt = (pointer: string): ValidateFunction => {
  const v = ajv.getSchema(`${ID}#${pointer}`);
  if (v === undefined) throw new Error(`no schema at ${pointer}`);
  return v;
};
const component = (name: string): ValidateFunction => schemaAt(`/components/schemas/${name}`);

/** What `value` breaks of the schema at `pointer`, in words; '' when it fits. */
function misfit(validate: ValidateFunction, value: unknown): string {
  return validate(value) ? '' : ajv.errorsText(validate.errors, { separator: '\n  ' });
}

/** The path template of the schema a concrete path falls under (`/v1/uploads/{id}`), or undefined. */
function templateOf(path: string): string | undefined {
  const parts = path.split('?')[0]!.split('/');
  return Object.keys(SCHEMA.paths).find((t) => {
    const ts = t.split('/');
    return ts.length === parts.length && ts.every((s, i) => (s.startsWith('{') ? parts[i] !== '' : s === parts[i]));
  });
}

/** The schema of an answer: `status` of `method template`, through a shared response's $ref. */
function answerSchema(method: string, template: string, status: number): ValidateFunction | undefined {
  const op = SCHEMA.paths[template]?.[method.toLowerCase()];
  const r = op?.responses?.[String(status)];
  if (r === undefined) return undefined;
  const base = r.$ref !== undefined ? r.$ref.slice(1) : `/paths/${esc(template)}/${method.toLowerCase()}/responses/${status}`;
  return schemaAt(`${base}/content/application~1json/schema`);
}

let rig: Rig;
let port: number;
/** Operations answered and checked: `POST /v1/uploads 202`. */
const checked = new Set<string>();
const lines: Array<Record<string, unknown>> = [];
const events = new AbortController();
let streamEnded: Promise<void>;

/**
 * The answer to a request that may wait on the daemon's timers (a put waits
 * for the queue's group commit): agent time moves a little at a time until
 * it comes.
 */
async function whileTimeMoves<T>(p: Promise<T>): Promise<T> {
  let done = false;
  void p.then(
    () => (done = true),
    () => (done = true),
  );
  for (let i = 0; i < 600 && !done; i++) {
    // Poll pacing, not a wait judged: the socket's real I/O gets a turn before agent time moves on.
    await new Promise((r) => setTimeout(r, 5));
    if (!done) await rig.advance(100);
  }
  return p;
}

/**
 * One request as a UI sends it; its body checked against the request schema
 * (unless it is meant to be refused), its answer against the answer's.
 */
async function call<T = Record<string, unknown>>(method: string, path: string, body?: unknown, o: { refused?: boolean } = {}): Promise<ApiReply<T>> {
  const template = templateOf(path);
  if (template !== undefined && body !== undefined && o.refused !== true) {
    const content = SCHEMA.paths[template]?.[method.toLowerCase()]?.requestBody?.content;
    expect([`${method} ${template}: a request body`, content !== undefined]).toEqual([`${method} ${template}: a request body`, true]);
    expect(`${method} ${path} request: ${misfit(schemaAt(`/paths/${esc(template)}/${method.toLowerCase()}/requestBody/content/application~1json/schema`), body)}`).toBe(`${method} ${path} request: `);
  }
  const reply = await whileTimeMoves(rig.api<T>(method, path, body));
  // A path or a method no operation has (404, 405): the one error shape.
  const described = template !== undefined && SCHEMA.paths[template]?.[method.toLowerCase()] !== undefined;
  const validate = described ? answerSchema(method, template, reply.status) : component('Error');
  expect(`${method} ${path} ${reply.status}: ${validate === undefined ? 'an answer the schema does not describe' : misfit(validate, reply.body)}`).toBe(`${method} ${path} ${reply.status}: `);
  if (described) checked.add(`${method} ${template} ${reply.status}`);
  return reply;
}

/** A custom profile: the generic one's channel with two inputs, and a timecode rate, so presses and the `logging` section exist. */
function profilesDir(r: Rig): string {
  const dir = join(r.root, 'profiles');
  mkdirSync(dir, { recursive: true });
  const generic = JSON.parse(readFileSync(join(ROOT, 'firmware-profiles/generic.json'), 'utf8')) as { channels: Array<Record<string, unknown>> } & Record<string, unknown>;
  const profile = { ...generic, id: 'schema-test', name: 'Schema test camera', timecode: { rate: '24000/1001' }, channels: generic.channels.map((c, i) => (i === 0 ? { ...c, inputs: [{ index: 0, name: 'Good take' }, { index: 1, name: 'Bad take' }] } : c)) };
  writeFileSync(join(dir, 'schema-test.json'), JSON.stringify(profile));
  return dir;
}

/** The routes the running daemon serves, as `GET /v1/status`. */
function served(): string[] {
  const unit = rig.daemon?.units.find((u) => u.name === 'local-api') as LocalApiUnit | undefined;
  return (unit?.routeList() ?? []).map((r) => r.replace(/ \((read|write)\)$/, ''));
}

beforeAll(async () => {
  rig = await Rig.up();
  port = await freePort();
  rig.plug('dev/video0');
  const env = { ...rig.mediaEnv(), C2C_WEB_LISTEN: `127.0.0.1:${port}` };
  rig.start({ ...env, C2C_PROFILES_DIR: profilesDir(rig) });
  await rig.until('online', () => rig.state() === 'online', 2 * MINUTE);
  streamEnded = apiEvents(apiSocketOf(rig.runtimeDir), (e) => void lines.push(e), { signal: events.signal }).catch(() => undefined);
  await realUntil('the first line', () => lines.length > 0);
});

afterAll(async () => {
  events.abort();
  await rig?.close();
});

describe('docs/local-api.openapi.json', () => {
  it('compiles under ajv strict mode, every component', () => {
    for (const name of Object.keys(SCHEMA.components.schemas)) expect(() => component(name)).not.toThrow();
  });

  it('describes every route the daemon serves', () => {
    const described = Object.entries(SCHEMA.paths).flatMap(([t, ops]) => METHODS.filter((m) => ops[m] !== undefined).map((m) => `${m.toUpperCase()} ${t}`));
    const routes = served();
    expect(routes.length).toBeGreaterThan(10);
    expect(routes.filter((r) => !described.includes(r))).toEqual([]);
  });

  it('the status document, the preferences, the web page', async () => {
    const status = await call<Record<string, unknown>>('GET', '/v1/status');
    expect(status.status).toBe(200);
    // Open to readers, closed here: every section the daemon writes is described.
    const props = Object.keys(SCHEMA.components.schemas.StatusDocument!.properties!);
    expect(Object.keys(status.body).filter((k) => !props.includes(k))).toEqual([]);
    expect(Object.keys(status.body)).toEqual(expect.arrayContaining(['channels', 'queue', 'uploads', 'network', 'prefs']));
    expect((await call('GET', '/v1/prefs')).status).toBe(200);
    expect((await call('PATCH', '/v1/prefs', { autoUpload: false })).body).toEqual({ autoUpload: false });
    expect((await call('PATCH', '/v1/prefs', { autoUpload: true, volume: 11 }, { refused: true })).status).toBe(400);
    expect((await call('PATCH', '/v1/prefs', { autoUpload: true })).status).toBe(200);
    expect((await call('GET', '/v1/web')).status).toBe(200);
    // A channel unplugged and plugged again: `channels` lines.
    rig.unplug('dev/video0');
    await rig.advance(MINUTE);
    rig.plug('dev/video0');
    await rig.advance(MINUTE);
  });

  it('uploads: queue, list, raise, cancel one, cancel all; refusals', async () => {
    await call('PATCH', '/v1/prefs', { autoUpload: false });
    for (const n of [1, 2, 3]) rig.writeMedia(`clip${n}.mov`, 64 * 1024, MINUTE);
    // The unit's own network down: the uploads wait, queued, while they are asked about.
    rig.loseNetwork(30 * MINUTE);
    const queued = await call<{ uploads: Array<{ id: string | null }> }>('POST', '/v1/uploads', { paths: ['clip1.mov', join(rig.media, 'clip2.mov')], priority: 'high' });
    expect(queued.status).toBe(202);
    const again = await call('POST', '/v1/uploads', { paths: ['clip1.mov'] });
    expect(again.body).toMatchObject({ uploads: [{ duplicate: true }] });
    await rig.advance(5 * SECOND);
    const list = await call<{ uploads: Array<{ id: string }> }>('GET', '/v1/uploads');
    expect(list.body.uploads.length).toBeGreaterThanOrEqual(2);
    const [a, b] = queued.body.uploads.map((u) => u.id!);
    try {
      expect((await call('PATCH', `/v1/uploads/${encodeURIComponent(b!)}`, { priority: 'normal' })).status).toBe(200);
      expect((await call('DELETE', `/v1/uploads/${encodeURIComponent(a!)}`)).status).toBe(200);
      expect((await call('DELETE', '/v1/uploads')).status).toBe(200);
    } finally {
      rig.loseNetwork(0);
    }
    // Refusals, each in the one error shape.
    expect((await call('POST', '/v1/uploads', { paths: ['/etc/passwd'] })).status).toBe(403);
    expect((await call('POST', '/v1/uploads', { paths: ['nothing-here.mov'] })).status).toBe(404);
    expect((await call('POST', '/v1/uploads', { paths: Array.from({ length: 501 }, (_, i) => `c${i}.mov`) }, { refused: true })).status).toBe(413);
    expect((await call('PATCH', `/v1/uploads/${encodeURIComponent(b!)}`, { priority: 'urgent' }, { refused: true })).status).toBe(400);
    expect((await call('DELETE', '/v1/uploads/no%3Asuch')).status).toBe(404);
    expect((await call('PATCH', `/v1/uploads/${encodeURIComponent(a!)}`, { priority: 'high' })).status).toBe(409);
    expect((await call('GET', '/v1/nothing')).status).toBe(404);
    expect((await call('PUT', '/v1/status')).status).toBe(405);
    await call('PATCH', '/v1/prefs', { autoUpload: true });
    await rig.until('the clips held back go', () => (rig.status()?.uploads?.files ?? 1) === 0 && rig.entries().some((e) => e.method === 'PUT'), 10 * MINUTE);
  });

  it('real-time logging: a press and a comment (issue 31)', async () => {
    expect((await call('POST', '/v1/inputs/main/0', { timecode: '01:00:00:00' })).status).toBe(202);
    expect((await call('POST', '/v1/inputs/main/9')).status).toBe(404);
    expect((await call('POST', '/v1/comments', { path: 'clip3.mov', text: 'nice', frame: 12 })).status).toBe(202);
    await rig.advance(2 * MINUTE);
    expect((rig.status() as Record<string, unknown> | undefined)?.logging).toBeDefined();
    expect((await call('GET', '/v1/status')).status).toBe(200);
  });

  it('pairing: a code cancelled; then unpaired, paired again, online', async () => {
    const code = await call<{ user_code: string }>('POST', '/v1/pair', { timeoutSeconds: 600 });
    expect(code.status).toBe(202);
    expect((await call('DELETE', '/v1/pair')).body).toEqual({ cancelled: true });
    expect((await call('DELETE', '/v1/pair')).body).toMatchObject({ cancelled: false });
    expect((await call('POST', '/v1/pair', { timeoutSeconds: -1 }, { refused: true })).status).toBe(400);
    expect((await call('POST', '/v1/unpair', { local: true })).status).toBe(200);
    await rig.until('needs-pairing', () => rig.state() === 'needs-pairing', MINUTE);
    expect((await call('GET', '/v1/status')).body).toMatchObject({ device: null });
    const next = await call<{ user_code: string }>('POST', '/v1/pair');
    expect(next.status).toBe(202);
    expect(rig.cloud.control.approve(next.body.user_code)).toBe(true);
    await rig.until('paired and online', () => rig.state() === 'online', 5 * MINUTE);
    // A few minutes more: heartbeats, and a reader sent nothing for 10 s gets keepalive lines.
    await rig.advance(3 * MINUTE);
  });

  it('every operation answered with success at least once', () => {
    const routes = served();
    const missing = Object.entries(SCHEMA.paths).flatMap(([t, ops]) =>
      METHODS.filter((m) => ops[m] !== undefined)
        .map((m) => `${m.toUpperCase()} ${t}`)
        // A route this daemon does not serve (a feature that is off) cannot be called; the events stream is read throughout.
        .filter((op) => routes.includes(op) && op !== 'GET /v1/events')
        .filter((op) => ![...checked].some((c) => c.startsWith(`${op} 2`))),
    );
    expect(missing).toEqual([]);
  });

  it('every events line, the last one `bye` as the daemon stops', async () => {
    await rig.stop();
    await realUntil('the bye line', () => lines.some((l) => l.type === 'bye'));
    await streamEnded;
    const validate = component('EventLine');
    const bad = lines.map((l) => misfit(validate, l)).filter((m) => m !== '');
    expect(bad).toEqual([]);
    // Open to readers, closed here: every type of line the daemon writes is described.
    const described = ['status', 'state', 'heartbeat', 'pairing', 'upload', 'channels', 'prefs', 'press', 'comment', 'keepalive', 'overflow', 'bye'];
    expect([...new Set(lines.map((l) => String(l.type)))].filter((t) => !described.includes(t))).toEqual([]);
    const types = new Set(lines.map((l) => l.type));
    for (const t of ['status', 'state', 'heartbeat', 'pairing', 'upload', 'channels', 'prefs', 'press', 'comment', 'keepalive', 'bye']) expect([t, types.has(t)]).toEqual([t, true]);
    const phases = new Set(lines.filter((l) => l.type === 'pairing').map((l) => l.phase));
    for (const p of ['code', 'cancelled', 'verifying', 'paired']) expect([p, phases.has(p)]).toEqual([p, true]);
  });
});
