// How the systemd unit's ExecStart runs the daemon: node's options (the
// daemon's V8 flags, agent/daemon/v8-flags.ts) and the file under
// /opt/c2c-agent (dist/c2c-agentd.cjs). The scripts that run the daemon as
// systemd does (the benchmarks, the smoke test on each Node version) take it
// from the unit, so the two never differ.
import { readFileSync } from 'node:fs';
import path from 'node:path';

/** { nodeArgs, file } of the unit's ExecStart, `file` under `root`. */
export function unitExecStart(root) {
  const unit = readFileSync(path.join(root, 'systemd/c2c-agent.service'), 'utf8');
  const m = /^ExecStart=\S+ ((?:--\S+ )*)\/opt\/c2c-agent\/(\S+) run$/m.exec(unit);
  if (m === null) throw new Error("the unit's ExecStart is not `node [--flag...] /opt/c2c-agent/<file> run`");
  return { nodeArgs: m[1].trim().split(' ').filter(Boolean), file: path.join(root, m[2]) };
}
