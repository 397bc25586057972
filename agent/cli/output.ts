// Everything the CLI prints goes through here, so secrets are cut out in one
// place: scrub() for registered secret values, redactObject() for secret keys.
import { AgentError } from '../lib/errors.js';
import { uncaughtFsError } from '../lib/fs-errors.js';
import { redactObject, scrub } from '../lib/secrets.js';
import { fitAdvice } from '../lib/advice.js';

export interface JsonResult {
  ok: boolean;
  exitCode: number;
  [fact: string]: unknown;
}

// A reader that goes away (`c2c-agent profiles | head -1`) is not an agent error.
// Set on a stream's first use here: node builds process.stdout and stderr
// when they are first read, about 4 ms of a start under the unit's flags,
// and the daemon, whose log lines go to fd 1 through pino, prints nothing.
const guarded = new WeakSet<NodeJS.WriteStream>();
function withEpipeGuard(stream: NodeJS.WriteStream): NodeJS.WriteStream {
  if (!guarded.has(stream)) {
    guarded.add(stream);
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE') throw err;
    });
  }
  return stream;
}
/** process.stdout for the CLI's own writes. */
export const stdout = (): NodeJS.WriteStream => withEpipeGuard(process.stdout);
/** process.stderr for the CLI's own writes. */
export const stderr = (): NodeJS.WriteStream => withEpipeGuard(process.stderr);

/** The one JSON object of a --json run. */
export function printJson(result: JsonResult): void {
  stdout().write(`${JSON.stringify(redactObject(result))}\n`);
}

/** One line of a JSON Lines stream (pair --json): redacted and scrubbed like printJson. */
export function printJsonLine(event: Record<string, unknown>): void {
  stdout().write(`${JSON.stringify(redactObject(event))}\n`);
}

export function printLine(...lines: string[]): void {
  for (const line of lines) stdout().write(`${scrub(line)}\n`);
}

let tokenFromEnvironment = false;

/** Set once by main.ts from the environment: whether C2C_TOKEN is set, which changes what advice can help (lib/advice.ts). */
export function adviseForTokenFromEnvironment(set: boolean): void {
  tokenFromEnvironment = set;
}

/** One line on stderr, whatever the message held. */
export function printError(message: string): void {
  stderr().write(`c2c-agent: ${scrub(fitAdvice(message, tokenFromEnvironment)).replace(/\s*\n\s*/g, ' ')}\n`);
}

/**
 * A file-system error that no command caught with its own words is still a
 * mistake of the machine's, not a bug: it gets the one mapping (lib/fs-errors.ts).
 */
const asAgentError = uncaughtFsError;

export function describeError(err: unknown): { kind: string; message: string; status?: number; code?: string } {
  err = asAgentError(err);
  if (err instanceof AgentError) {
    const json = err.toJSON();
    return { ...json, message: fitAdvice(json.message, tokenFromEnvironment) };
  }
  const message = err instanceof Error ? err.message : String(err);
  return { kind: 'internal', message: `internal error: ${message}; please report` };
}

/**
 * Reports a failure: one line on stderr and, with json, {ok:false, exitCode,
 * error, ...extra} on stdout. Returns the exit code (AgentError's, else 1).
 */
export function fail(err: unknown, opts: { json?: boolean; extra?: Record<string, unknown> } = {}): number {
  const known = asAgentError(err);
  const exitCode = known instanceof AgentError ? known.exitCode : 1;
  const error = describeError(known);
  printError(error.message);
  if (opts.json === true) printJson({ ...opts.extra, ok: false, exitCode, error });
  return exitCode;
}
