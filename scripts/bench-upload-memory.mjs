// The memory half of scripts/bench-upload.mjs: one agent upload timed and
// sampled, a fresh agent's RSS idle and then while it uploads a sparse file,
// and a throttling proxy that gives the agent a camera's uplink.
import { renameSync, statSync, truncateSync, utimesSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { HZ, cpuTicks, median, rss, sampleRss, sleep, startAgent, waitGone } from './bench-upload-helpers.mjs';

/**
 * One agent upload: `drop()` puts the file in the media dir under `name`.
 * Timed from the first storage PUT at the fake to the fake holding every
 * byte; CPU until the agent deleted the file; RSS every 100 ms throughout.
 */
export async function agentUpload({ watch, agent, device, name, drop, timeoutMs, failed }) {
  const file = path.join(agent.mediaDir, name);
  const exclude = new Set(watch.firstPut.keys());
  let cpu0;
  const stopRss = sampleRss(agent.pid);
  const droppedMs = watch.cloud.now();
  drop(file);
  const up = await watch.upload({ deviceId: device.id, exclude, onFirstPut: () => (cpu0 = cpuTicks(agent.pid)), timeoutMs, failed });
  await waitGone(file, timeoutMs, failed);
  const cpuS = (cpuTicks(agent.pid) - cpu0) / HZ;
  const samples = stopRss();
  const peak = samples.reduce((a, b) => (b.total > a.total ? b : a));
  return { seconds: (up.completeMs - up.firstPutMs) / 1000, dropToCompleteS: (up.completeMs - droppedMs) / 1000, cpuS, peakRss: peak, endRss: samples[samples.length - 1] };
}

/**
 * A TCP proxy in front of the fake: what the agent sends goes through a
 * token bucket of `bytesPerSecond` shared by all its connections (one
 * uplink), answers come back unthrottled. The fake writes presigned URLs
 * with the Host the request came to, so storage PUTs go through it too.
 */
export async function startThrottle(targetUrl, bytesPerSecond) {
  const target = new URL(targetUrl);
  let linkFreeAt = performance.now();
  const sockets = new Set();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => (sockets.delete(s), client.destroy(), upstream.destroy()));
    }
    upstream.pipe(client);
    client.on('data', (data) => {
      const now = performance.now();
      linkFreeAt = Math.max(now, linkFreeAt) + (data.length * 1000) / bytesPerSecond;
      let holds = 0;
      const release = () => --holds === 0 && client.resume();
      const hold = () => (holds++ === 0 && client.pause(), release);
      if (!upstream.write(data)) upstream.once('drain', hold());
      // The bytes are "on the wire" until the link is free again: no more are read meanwhile.
      if (linkFreeAt - now >= 1) setTimeout(hold(), linkFreeAt - now);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    // Bytes pass through as they are: TLS ends at the fake, so the scheme is the fake's.
    url: `${target.protocol}//127.0.0.1:${server.address().port}`,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * A fresh agent (through `apiUrl`, the fake's or a throttle's), idle for
 * `settleS` after GET /v2/devices/me; RSS sampled 10 times 100 ms apart
 * (idle = the median), then a sparse file of `sparseBytes` moved into its
 * media dir and uploaded.
 */
export async function memoryRun({ bundle, cloud, watch, device, dir, apiUrl, children, onEarlyExit, failed, settleS, sparseBytes, timeoutMs, nodeOptions, env }) {
  const agent = startAgent({ bundle, cloud, apiUrl, device, dir, children, onEarlyExit, nodeOptions, env });
  try {
    await watch.ready(device.id, 30_000);
    await sleep(settleS * 1000);
    const idle = [];
    for (let i = 0; i < 10; i++, await sleep(100)) idle.push(rss(agent.pid));
    const big = path.join(dir, 'sparse.mp4');
    writeFileSync(big, '');
    truncateSync(big, sparseBytes);
    const t = new Date(Date.now() - 3600_000);
    utimesSync(big, t, t);
    const allocated = statSync(big).blocks * 512;
    const run = await agentUpload({ watch, agent, device, name: 'sparse.mp4', drop: (file) => renameSync(big, file), timeoutMs, failed });
    const idleRss = idle.find((x) => x.total === median(idle.map((y) => y.total)));
    const mib = (x) => ({ total: x.total / 1024, anon: x.anon / 1024, file: x.file / 1024 });
    return {
      sparseBytes,
      allocatedBytes: allocated,
      idleRssMiB: mib(idleRss),
      peakRssMiB: mib(run.peakRss),
      growthMiB: (run.peakRss.total - idleRss.total) / 1024,
      endRssMiB: mib(run.endRss),
      MBps: sparseBytes / 1e6 / run.seconds,
      cpuPerGB: run.cpuS / (sparseBytes / 1e9),
    };
  } finally {
    await agent.stop();
  }
}
