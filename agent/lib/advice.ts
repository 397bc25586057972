// The advice that ends a message about pairing, in one place: it depends on
// where the token comes from. With C2C_TOKEN set, the token in the
// environment wins over whatever pairing stores, so "run `c2c-agent pair`"
// cannot help: the advice says so. `status` splits the advice off a
// daemon's reason to say it once.

export const PAIR_ADVICE = 'run `c2c-agent pair`';
export const TOKEN_IN_ENV_ADVICE = 'C2C_TOKEN is set and wins over pairing: give a valid token in C2C_TOKEN, or unset it and run `c2c-agent pair`';

/** What to do about a missing or refused authorization. */
export function pairAdvice(tokenFromEnvironment: boolean): string {
  return tokenFromEnvironment ? TOKEN_IN_ENV_ADVICE : PAIR_ADVICE;
}

const KNOWN = [TOKEN_IN_ENV_ADVICE, PAIR_ADVICE];

/**
 * "refused (invalid_grant); run `c2c-agent pair`" → { text: 'refused (invalid_grant)', advice: 'run `c2c-agent pair`' };
 * also at the end of a closing parenthesis: "HTTP 401 (the token was rejected; run `c2c-agent pair`)" → "HTTP 401 (the token was rejected)".
 */
export function splitAdvice(message: string): { text: string; advice?: string } {
  for (const advice of KNOWN) {
    if (message.endsWith(`; ${advice}`)) return { text: message.slice(0, -(advice.length + 2)), advice };
    if (message.endsWith(`; ${advice})`)) return { text: `${message.slice(0, -(advice.length + 3))})`, advice };
  }
  return { text: message };
}

/** A message as it should read here: with C2C_TOKEN set, every "run `c2c-agent pair`" becomes the advice that can help. */
export function fitAdvice(message: string, tokenFromEnvironment: boolean): string {
  return tokenFromEnvironment && !message.includes(TOKEN_IN_ENV_ADVICE) ? message.split(PAIR_ADVICE).join(TOKEN_IN_ENV_ADVICE) : message;
}

/**
 * What to do when the daemon is not running, where the agent runs under
 * systemd: the default of the startAdvice setting (config/setting-table.ts),
 * which a place that starts the daemon some other way (the simulator, a
 * container) sets to its own words.
 */
export const START_ADVICE = 'start it with `sudo systemctl start c2c-agent`';
