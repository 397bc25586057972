// The checks every fuzzer applies to a command it ran, from docs/commands.md
// ("Commands": "--json prints exactly one JSON object"; "Exit codes
// (sysexits)"; a failure is one line on stderr that names what was wrong;
// no secret in any output). A problem is {cat, sig, msg}: `cat` is crash, hang or wrong;
// `sig` a short stable name, so a long run groups its failures by cause.

/** The documented exit codes (docs/commands.md) (1 is a bug and counts as a crash). */
export const CONTRACT_EXITS = new Set([0, 64, 69, 75, 76, 77, 78]);
/** Longest stderr line on failure: a message that echoes a multi-MB value is a bug. */
export const MAX_STDERR = 2048;

export const problem = (cat, sig, msg) => ({ cat, sig, msg: clip(msg, 2000) });

export function clip(s, n = 300) {
  const t = String(s).replace(/[\u0000-\u0008\u000b-\u001f]/g, '?');
  return t.length > n ? `${t.slice(0, n)}…(${t.length} chars)` : t;
}

/** The first line of some text, for messages. */
export const firstLine = (s) => clip(String(s).split('\n').find((l) => l.trim() !== '') ?? '', 200);

/** Any of `secrets` (strings of 8+ chars) in `text`: the first found, else undefined. */
export function leakedSecret(text, secrets) {
  for (const s of secrets) if (typeof s === 'string' && s.length >= 8 && text.includes(s)) return s;
  return undefined;
}

/**
 * What goes wrong with one finished CLI process. `label` names the command
 * in signatures ("check", "pair"); `json` is 'object' (one JSON object),
 * 'lines' (pair's JSON Lines) or undefined (human output).
 */
export function cliProblems(r, { label, json, secrets = [], extraExits = [] }) {
  const out = [];
  if (r.spawnError) return [problem('crash', `${label}:spawn`, r.spawnError)];
  if (r.timedOut) out.push(problem('hang', `${label}:hang`, `killed after ${r.ms} ms without exiting; stdout ${firstLine(r.stdout)}; stderr ${firstLine(r.stderr)}`));
  if (r.rssKilled) out.push(problem('crash', `${label}:rss`, `RSS passed the bound (${r.maxRssMiB} MiB): killed`));
  if (r.timedOut || r.rssKilled) return out;
  if (r.signal) out.push(problem('crash', `${label}:signal-${r.signal}`, `died of ${r.signal}; stderr ${firstLine(r.stderr)}`));
  else if (r.code === 1) out.push(problem('crash', `${label}:exit1`, `exit 1 (internal error): ${firstLine(r.stderr)}`));
  else if (!CONTRACT_EXITS.has(r.code) && !extraExits.includes(r.code)) out.push(problem('wrong', `${label}:exit-${r.code}`, `exit ${r.code} is not a documented exit code; stderr ${firstLine(r.stderr)}`));
  if (/internal error|please report|\bat [\w.<>]+ \(.*:\d+:\d+\)/i.test(r.stderr)) {
    out.push(problem('crash', `${label}:internal-error`, `stderr says ${firstLine(r.stderr)}`));
  }
  if (r.code !== 0 && r.code !== null) {
    const lines = r.stderr.split('\n');
    if (r.stderr.trim() === '') out.push(problem('wrong', `${label}:stderr-empty`, `exit ${r.code} with nothing on stderr`));
    else if (lines.length !== 2 || lines[1] !== '') out.push(problem('wrong', `${label}:stderr-lines`, `exit ${r.code} with ${lines.length - 1} stderr lines: ${firstLine(r.stderr)}`));
    if (r.stderrBytes > MAX_STDERR) out.push(problem('wrong', `${label}:stderr-long`, `stderr is ${r.stderrBytes} bytes: ${clip(r.stderr, 160)}`));
  }
  if (json === 'object') out.push(...jsonObjectProblems(r, label));
  if (json === 'lines') out.push(...jsonLinesProblems(r, label));
  const leak = leakedSecret(r.stdout + r.stderr, secrets);
  if (leak !== undefined) out.push(problem('wrong', `${label}:secret-leak`, `a secret (${leak.slice(0, 6)}…) appears in the output`));
  return out;
}

function jsonObjectProblems(r, label) {
  const text = r.stdout;
  if (r.stdoutBytes > text.length * 4) return [problem('wrong', `${label}:stdout-huge`, `--json printed ${r.stdoutBytes} bytes`)];
  if (text.trim() === '') return [problem('wrong', `${label}:json-none`, `--json printed nothing (exit ${r.code}); stderr ${firstLine(r.stderr)}`)];
  let v;
  try {
    v = JSON.parse(text);
  } catch {
    return [problem('wrong', `${label}:json-not-one-object`, `--json stdout is not one JSON value: ${clip(text, 160)}`)];
  }
  if (text.trim().includes('\n')) return [problem('wrong', `${label}:json-multiline`, '--json printed more than one line')];
  return resultObjectProblems(v, r.code, label);
}

function resultObjectProblems(v, code, label) {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return [problem('wrong', `${label}:json-not-object`, `--json printed ${clip(JSON.stringify(v), 80)}`)];
  const out = [];
  if (typeof v.ok !== 'boolean') out.push(problem('wrong', `${label}:json-no-ok`, '--json object has no boolean ok'));
  if (v.exitCode !== code) out.push(problem('wrong', `${label}:json-exitcode`, `--json exitCode ${v.exitCode} but the process exited ${code}`));
  if (typeof v.ok === 'boolean' && v.ok !== (code === 0)) out.push(problem('wrong', `${label}:json-ok`, `--json ok ${v.ok} with exit ${code}`));
  return out;
}

function jsonLinesProblems(r, label) {
  const lines = r.stdout.split('\n').filter((l) => l !== '');
  if (lines.length === 0) return [problem('wrong', `${label}:json-none`, `--json printed nothing (exit ${r.code}); stderr ${firstLine(r.stderr)}`)];
  const parsed = [];
  for (const l of lines) {
    try {
      parsed.push(JSON.parse(l));
    } catch {
      return [problem('wrong', `${label}:jsonl-bad-line`, `a stdout line is not JSON: ${clip(l, 120)}`)];
    }
  }
  return resultObjectProblems(parsed[parsed.length - 1], r.code, label);
}

/** The parsed --json object, or undefined. */
export function jsonOf(r) {
  try {
    const v = JSON.parse(r.stdout);
    return v !== null && typeof v === 'object' ? v : undefined;
  } catch {
    return undefined;
  }
}
