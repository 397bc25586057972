// The environment of a child process a test starts (the bundle's `run`, a CLI
// command): one rule for every suite, so nothing of the developer's own
// c2c-agent settings (C2C_*), of a systemd unit around the test run
// (NOTIFY_SOCKET, WATCHDOG_*) or of jest's node flags (NODE_OPTIONS) reaches it.

/** Whether a variable of this process must stay out of a child's environment. */
const notInherited = (name: string): boolean => name.startsWith('C2C_') || name === 'NOTIFY_SOCKET' || name.startsWith('WATCHDOG_') || name === 'NODE_OPTIONS';

export interface ChildEnvOptions {
  /**
   * true (default): this process's environment without the variables above;
   * false: PATH alone, for output a test compares byte for byte (no locale,
   * terminal or colour setting of the developer's).
   */
  inherit?: boolean;
}

/** The child's environment: the base `o.inherit` says, then `extra`. */
export function childEnv(extra: Record<string, string> = {}, o: ChildEnvOptions = {}): Record<string, string> {
  const base: Record<string, string> = {};
  if (o.inherit === false) base.PATH = process.env.PATH ?? '/usr/bin:/bin';
  else for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !notInherited(k)) base[k] = v;
  return { ...base, ...extra };
}
