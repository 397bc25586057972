// The camera's page in the browser: plain DOM, no framework, no inline
// script (the page's CSP forbids it). Everything it shows comes from the
// camera's local API through the page's server: GET /session, then
// /api/v1/status, /api/v1/uploads, /api/v1/prefs, and the live lines of
// /api/v1/events (server-sent events; EventSource reconnects by itself and
// every connection starts with the status document). Text is always set as
// text, never as HTML.
'use strict';

(function main() {
  const $ = (id) => document.getElementById(id);
  let csrf = '';
  let events = null;
  let statusTimer = 0;
  let uploadsTimer = 0;
  let pairing = null;
  /** The phone's clock minus the camera's, from the last live line's time. */
  let skew = 0;
  const uploads = new Map();

  // ---- talking to the camera

  class Refused extends Error {
    constructor(status, kind, message, extra) {
      super(message);
      this.status = status;
      this.kind = kind;
      this.extra = extra;
    }
  }

  async function call(method, path, body) {
    const headers = { accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (method !== 'GET' && csrf !== '') headers['x-csrf-token'] = csrf;
    let res;
    try {
      res = await fetch(path, { method, headers, credentials: 'same-origin', cache: 'no-store', body: body === undefined ? undefined : JSON.stringify(body) });
    } catch {
      throw new Refused(0, 'network', 'The camera does not answer. Is this phone on the camera\u2019s network?');
    }
    let data = null;
    try {
      data = await res.json();
    } catch {
      data = null;
    }
    if (!res.ok) {
      const e = (data && data.error) || {};
      if (res.status === 401 && e.kind === 'signed-out') showSignIn('Signed out: type the PIN again.');
      throw new Refused(res.status, e.kind || 'error', e.message || `The camera answered ${res.status}.`, data || {});
    }
    return data;
  }

  const say = (el, text, ok) => {
    el.textContent = text || '';
    el.classList.toggle('ok', Boolean(ok));
  };
  const failed = (err) => say($('app-message'), err && err.message ? err.message : String(err));

  // ---- signing in

  function showSignIn(message) {
    stopEvents();
    csrf = '';
    $('app').hidden = true;
    $('sign-out').hidden = true;
    $('badge').hidden = true;
    $('signin').hidden = false;
    say($('signin-message'), message || '');
    $('pin').focus();
  }

  $('signin-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const button = ev.target.querySelector('button');
    button.disabled = true;
    try {
      const r = await call('POST', '/session', { pin: $('pin').value });
      $('pin').value = '';
      start(r);
    } catch (err) {
      say($('signin-message'), err.message);
      $('pin').select();
    } finally {
      button.disabled = false;
    }
  });

  $('sign-out').addEventListener('click', async () => {
    try {
      await call('DELETE', '/session');
    } catch {
      // signed out either way
    }
    showSignIn('Signed out.');
  });

  function start(session) {
    csrf = session.csrf;
    $('signin').hidden = true;
    $('app').hidden = false;
    $('sign-out').hidden = false;
    renderInputs(session.inputs || []);
    refreshStatus();
    refreshUploads();
    call('GET', '/api/v1/prefs').then(renderPrefs, failed);
    startEvents();
  }

  // ---- live updates

  function startEvents() {
    stopEvents();
    events = new EventSource('/api/v1/events');
    events.onmessage = (m) => {
      let line;
      try {
        line = JSON.parse(m.data);
      } catch {
        return;
      }
      onLine(line);
    };
    events.onerror = () => {
      // Closed for good (not a reconnect): the session may have ended.
      if (events && events.readyState === EventSource.CLOSED) {
        call('GET', '/session').then((s) => (s.signedIn ? setTimeout(startEvents, 2000) : showSignIn('Signed out: type the PIN again.')), () => setTimeout(startEvents, 5000));
      }
    };
  }

  function stopEvents() {
    if (events) events.close();
    events = null;
  }

  function onLine(line) {
    const at = Date.parse(line.at);
    if (Number.isFinite(at)) skew = Date.now() - at;
    switch (line.type) {
      case 'status':
        if (line.status) renderStatus(line.status);
        soon('uploads');
        break;
      case 'state':
        renderState(line.to, line.reason);
        soon('status');
        break;
      case 'heartbeat':
      case 'channels':
        soon('status');
        break;
      case 'prefs':
        renderPrefs(line);
        soon('status');
        break;
      case 'pairing':
        renderPairing(line);
        if (line.phase === 'paired') soon('status');
        break;
      case 'upload':
        upsertUpload(line);
        break;
      case 'press':
        // Every press, the camera's own buttons' too.
        say($('inputs-message'), pressWords(inputName(line.channel, line.index), line.state, line.reason), line.state !== 'failed');
        break;
      case 'signed-out':
        showSignIn('Signed out: type the PIN again.');
        break;
      case 'bye':
        say($('app-message'), 'The camera\u2019s agent is stopping; the page reconnects when it is back.');
        break;
      default:
        break;
    }
  }

  /** A look at the status or the uploads soon, once for a burst of lines. */
  function soon(what) {
    if (what === 'status') {
      clearTimeout(statusTimer);
      statusTimer = setTimeout(refreshStatus, 250);
    } else {
      clearTimeout(uploadsTimer);
      uploadsTimer = setTimeout(refreshUploads, 250);
    }
  }

  function refreshStatus() {
    call('GET', '/api/v1/status').then(renderStatus, (err) => {
      if (err.status !== 401) failed(err);
    });
  }

  function refreshUploads() {
    call('GET', '/api/v1/uploads').then(
      (r) => {
        uploads.clear();
        for (const u of r.uploads || []) uploads.set(u.id, u);
        renderUploads();
      },
      (err) => {
        if (err.status !== 401) failed(err);
      },
    );
  }

  // ---- the camera

  const STATE_WORDS = {
    starting: 'Starting',
    online: 'Online',
    offline: 'Offline',
    'rate-limited': 'Slowed down by the service',
    paused: 'Paused by the service',
    'needs-pairing': 'Not paired',
    stopping: 'Stopping',
    stopped: 'Stopped',
  };

  function renderState(state, reason) {
    const words = STATE_WORDS[state] || state || 'Unknown';
    $('state').textContent = words;
    const badge = $('badge');
    badge.hidden = false;
    badge.textContent = words;
    badge.className = `badge ${state || ''}`;
    // Why, where it tells a person something (offline, refused, slowed down); pairing says the rest itself.
    const r = $('reason');
    r.hidden = !reason || ['online', 'needs-pairing', 'starting'].includes(state);
    r.textContent = reason || '';
    $('app').classList.toggle('unpaired', state === 'needs-pairing');
    const needsPairing = state === 'needs-pairing';
    // A flow on show (a code, waiting for approval) keeps its own buttons and words.
    const flowOn = pairing && !['paired', 'failed', 'cancelled'].includes(pairing.phase);
    if (!flowOn) {
      $('pair').hidden = !needsPairing;
      // A failed or cancelled flow's words stay until the next one.
      if (needsPairing && (!pairing || pairing.phase === 'paired')) $('pairing-text').textContent = 'This camera is not paired with a project yet.';
      else if (state !== 'starting' && (!pairing || pairing.phase !== 'paired')) $('pairing-text').textContent = 'This camera is paired.';
    }
  }

  /** How long ago `iso` was by the camera's own clock (a phone's may differ: `skew`, from the live lines' times). */
  const ago = (iso) => {
    const t = Date.parse(iso);
    if (!Number.isFinite(t)) return '';
    const s = Math.max(0, Math.round((Date.now() - skew - t) / 1000));
    if (s < 60) return `${s} s ago`;
    if (s < 3600) return `${Math.round(s / 60)} min ago`;
    return `${Math.round(s / 3600)} h ago`;
  };

  const clock = (iso) => {
    const t = new Date(iso);
    return Number.isFinite(t.getTime()) ? t.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' }) : '';
  };

  const NETWORK_WORDS = { ethernet: 'Ethernet', wifi: 'Wi-Fi', cellular: 'Cellular', other: 'Network' };

  function renderStatus(doc) {
    if (!doc) return;
    renderState(doc.state, doc.reason);
    const project = doc.project && (doc.project.name || doc.project.id);
    const device = doc.device && (doc.device.name || doc.device.id);
    $('project').textContent = project ? `${project}${device ? ` (as ${device})` : ''}` : doc.state === 'needs-pairing' ? 'None: not paired' : '\u2014';
    const hb = doc.lastHeartbeat;
    const when = hb ? ago(hb.at) : '';
    $('heartbeat').textContent = hb ? `${clock(hb.at)}${when ? ` (${when})` : ''}, ${hb.result === 'ok' ? 'ok' : hb.result}` : 'None yet';
    const n = doc.network || {};
    const parts = [];
    parts.push(n.interface ? `${NETWORK_WORDS[n.type] || 'Network'} (${n.interface})` : 'No default route');
    if (typeof n.serviceRttMs === 'number') parts.push(`${n.serviceRttMs} ms to the service`);
    if (n.uploadBytesPerSecond > 0) parts.push(`${bytes(n.uploadBytesPerSecond)}/s up`);
    $('network').textContent = parts.join(', ');
    if (doc.prefs) renderPrefs(doc.prefs);
    const up = doc.uploads;
    const blocked = up && Array.isArray(up.blocked) ? up.blocked.map(blockWords).filter(Boolean) : [];
    $('uploads-summary').textContent = blocked.join(' ');
  }

  function blockWords(b) {
    switch (b.kind) {
      case 'no-media-dir':
        return 'No media folder is set: clips are not taken by themselves.';
      case 'auto-upload-off':
        return b.waiting ? `Auto-upload is off: ${b.waiting} clip${b.waiting === 1 ? '' : 's'} held back.` : 'Auto-upload is off.';
      case 'window-closed':
        return b.until ? `Uploads wait for their window (${clock(b.until.at)}).` : 'Uploads wait for their window.';
      case 'refused':
        return `Uploads are refused: ${b.reason || 'see the camera'}.`;
      default:
        return '';
    }
  }

  // ---- pairing

  function grouped(code) {
    return /^\d{6}$/.test(code) ? `${code.slice(0, 3)} ${code.slice(3)}` : code;
  }

  function renderPairing(p) {
    pairing = p;
    const box = $('pair-code-box');
    const text = $('pairing-text');
    switch (p.phase) {
      case 'code': {
        box.hidden = false;
        $('pair-code').textContent = grouped(p.user_code || '');
        const link = p.verification_uri_complete || p.verification_uri || '';
        const a = $('pair-link');
        a.href = link;
        a.textContent = link;
        $('pair-qr').src = `/qr.svg?text=${encodeURIComponent(link)}`;
        $('pair-expiry').textContent = p.expires_in ? `The code is good for ${Math.round(p.expires_in / 60)} min.` : '';
        text.textContent = 'Waiting for approval\u2026';
        $('pair').hidden = true;
        $('pair-cancel').hidden = false;
        break;
      }
      case 'waiting':
      case 'slow_down':
      case 'retrying':
      case 'verifying':
        $('pair-cancel').hidden = false;
        text.textContent = p.phase === 'verifying' ? 'Approved: checking the new pairing\u2026' : 'Waiting for approval\u2026';
        break;
      case 'paired':
        box.hidden = true;
        $('pair').hidden = true;
        $('pair-cancel').hidden = true;
        text.textContent = `Paired${p.device && p.device.name ? ` as ${p.device.name}` : ''}.`;
        break;
      case 'failed':
      case 'cancelled':
        box.hidden = true;
        $('pair-cancel').hidden = true;
        $('pair').hidden = false;
        text.textContent = p.phase === 'cancelled' ? 'Pairing cancelled.' : `Pairing failed: ${(p.error && p.error.message) || 'try again'}.`;
        break;
      default:
        break;
    }
  }

  $('pair').addEventListener('click', async () => {
    const b = $('pair');
    b.disabled = true;
    say($('app-message'), '');
    try {
      const code = await call('POST', '/api/v1/pair', {});
      renderPairing({ phase: 'code', ...code });
    } catch (err) {
      failed(err);
    } finally {
      b.disabled = false;
    }
  });

  $('pair-cancel').addEventListener('click', async () => {
    try {
      await call('DELETE', '/api/v1/pair');
      renderPairing({ phase: 'cancelled' });
    } catch (err) {
      failed(err);
    }
  });

  // ---- uploads

  const OPEN = new Set(['queued', 'uploading', 'paused-refused']);
  const UPLOAD_WORDS = { queued: 'Queued', uploading: 'Uploading', done: 'Done', 'paused-refused': 'Refused for now', 'dead-lettered': 'Failed', cancelled: 'Cancelled' };

  function bytes(n) {
    if (!(n >= 0)) return '';
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    let v = n;
    while (v >= 1024 && i < units.length - 1) {
      v /= 1024;
      i++;
    }
    return `${i === 0 ? v : v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
  }

  function upsertUpload(line) {
    const was = uploads.get(line.id) || {};
    uploads.set(line.id, { ...was, ...line });
    renderUploads();
  }

  function renderUploads() {
    const list = $('uploads');
    const rows = [...uploads.values()].sort((a, b) => Number(OPEN.has(b.state)) - Number(OPEN.has(a.state)));
    const shown = rows.slice(0, 50);
    const keep = new Set(shown.map((u) => u.id));
    for (const li of [...list.children]) if (!keep.has(li.dataset.id)) li.remove();
    let prev = null;
    for (const u of shown) {
      let li = list.querySelector(`li[data-id="${CSS.escape(u.id)}"]`);
      if (!li) li = uploadRow(u);
      fillRow(li, u);
      if (prev ? prev.nextSibling !== li : list.firstChild !== li) list.insertBefore(li, prev ? prev.nextSibling : list.firstChild);
      prev = li;
    }
    const open = rows.filter((u) => OPEN.has(u.state)).length;
    $('cancel-all').hidden = open < 2;
    $('uploads-empty').hidden = rows.length > 0;
  }

  function uploadRow(u) {
    const li = document.createElement('li');
    li.dataset.id = u.id;
    const name = document.createElement('span');
    name.className = 'name';
    const bar = document.createElement('progress');
    const detail = document.createElement('span');
    detail.className = 'detail';
    const cancel = document.createElement('button');
    cancel.type = 'button';
    cancel.textContent = 'Cancel';
    cancel.addEventListener('click', async () => {
      cancel.disabled = true;
      try {
        await call('DELETE', `/api/v1/uploads/${encodeURIComponent(li.dataset.id)}`);
        upsertUpload({ id: li.dataset.id, state: 'cancelled' });
      } catch (err) {
        failed(err);
        cancel.disabled = false;
      }
    });
    li.append(name, cancel, bar, detail);
    return li;
  }

  function fillRow(li, u) {
    const [name, cancel, bar, detail] = li.children;
    const label = u.name || u.path || u.id;
    name.textContent = label;
    bar.max = Math.max(1, u.bytesTotal || 0);
    bar.value = Math.min(bar.max, u.bytesDone || 0);
    bar.setAttribute('aria-label', `${label} progress`);
    const pct = u.bytesTotal > 0 ? Math.floor(((u.bytesDone || 0) * 100) / u.bytesTotal) : 0;
    const words = UPLOAD_WORDS[u.state] || u.state;
    const amount = u.bytesTotal > 0 ? `, ${bytes(u.bytesDone || 0)} of ${bytes(u.bytesTotal)} (${pct} %)` : '';
    detail.textContent = u.state === 'cancelled' ? words : `${words}${amount}${u.reason ? `: ${u.reason}` : ''}`;
    bar.hidden = u.state === 'cancelled';
    cancel.setAttribute('aria-label', `Cancel ${label}`);
    cancel.hidden = !OPEN.has(u.state);
  }

  $('cancel-all').addEventListener('click', async () => {
    try {
      await call('DELETE', '/api/v1/uploads');
      refreshUploads();
    } catch (err) {
      failed(err);
    }
  });

  // ---- preferences

  function renderPrefs(p) {
    if (p && typeof p.autoUpload === 'boolean') $('auto-upload').checked = p.autoUpload;
  }

  $('auto-upload').addEventListener('change', async (ev) => {
    const want = ev.target.checked;
    try {
      renderPrefs(await call('PATCH', '/api/v1/prefs', { autoUpload: want }));
    } catch (err) {
      ev.target.checked = !want;
      failed(err);
    }
  });

  // ---- inputs

  let inputList = [];
  const inputName = (channel, index) => {
    const i = inputList.find((x) => x.channel === channel && x.index === Number(index));
    return i ? i.name : `Button ${index}`;
  };

  function pressWords(name, state, reason) {
    if (state === 'sent') return `${name}: marked in the service`;
    if (state === 'failed') return `${name}: not marked (${reason || 'refused'})`;
    return `${name}: marked here, sending\u2026`;
  }

  function renderInputs(list) {
    inputList = list;
    const box = $('inputs');
    box.textContent = '';
    $('inputs-card').hidden = list.length === 0;
    for (const input of list) {
      const b = document.createElement('button');
      b.type = 'button';
      b.textContent = input.name;
      b.addEventListener('click', async () => {
        b.disabled = true;
        try {
          const r = await call('POST', `/api/v1/inputs/${encodeURIComponent(input.channel)}/${input.index}`, {});
          // Its line on the live updates may have come first and said more.
          const m = $('inputs-message');
          if (!m.textContent.startsWith(`${input.name}: marked in`)) say(m, pressWords(input.name, (r && r.press && r.press.state) || 'queued'), true);
        } catch (err) {
          say($('inputs-message'), `${input.name}: ${err.message}`);
        } finally {
          b.disabled = false;
        }
      });
      box.append(b);
    }
  }

  // ---- start

  call('GET', '/session').then(
    (s) => {
      if (s.signedIn) start(s);
      else showSignIn(s.pausedSeconds ? `Too many wrong PINs: signing in is paused for ${s.pausedSeconds} s.` : '');
    },
    (err) => showSignIn(err.message),
  );
})();
