// The pairing screen of `c2c-agent pair`: pure rendering in
// pair-screen-layout.ts, and here the driver that puts it on a stream. On a
// TTY the screen is redrawn in place; anywhere else (a log, a pipe, journald)
// each event is one plain line and no escape code is ever written.
import { scrub } from '../lib/secrets.js';
import { plainCodeLines, renderPairScreen, type PairCode } from './pair-screen-layout.js';
import { clean, wordWrap } from './pair-screen-text.js';

export {
  formatCountdown,
  formatUserCode,
  plainCodeLines,
  renderPairScreen,
  renderQr,
  QR_OPTIONS,
  QR_QUIET_ZONE,
  type PairCode,
  type Surface,
} from './pair-screen-layout.js';

export interface PairScreenOutput {
  write(s: string): unknown;
  isTTY?: boolean;
  columns?: number;
  rows?: number;
}

const CSI = '\u001b[';
const HIDE_CURSOR = `${CSI}?25l`;
const SHOW_CURSOR = `${CSI}?25h`;
const HOME_AND_CLEAR = `${CSI}H${CSI}2J`;
// Raw mode on the terminal (a caller reading keys) turns off the tty's
// newline translation, so frames carry their own carriage returns.
const NL = '\r\n';

/** Back to the first column of a block of `rows` lines the cursor sits just below. */
const upOver = (rows: number): string => (rows > 0 ? `\r${CSI}${rows}A` : '\r');

/**
 * Drives a stream: on a TTY redraws the screen in place (cursor hidden while
 * shown, restored by close()); elsewhere prints plain lines once per event
 * and never an escape code. The caller owns the lifetime: close() belongs in
 * a finally and in the SIGINT handler, or the cursor stays hidden. Nothing
 * else should write to the same terminal while the screen is shown.
 */
export class PairScreen {
  readonly #out: PairScreenOutput;
  readonly #tty: boolean;
  readonly #color: boolean;
  #code: PairCode | undefined;
  #remaining = 0;
  #status = '';
  #closed = false;
  /** Plain mode: the last status printed, so a repeat is not printed again. */
  #printedStatus: string | undefined;
  /**
   * TTY mode: 'below' when the last frame is a block of #rows lines with the
   * cursor at the start of the line under it; 'home' when it was too tall for
   * that and was drawn from the top of a cleared screen.
   */
  #mode: 'none' | 'below' | 'home' = 'none';
  #rows = 0;
  #frame = '';
  #size = '';

  constructor(out: PairScreenOutput, opts: { color?: boolean } = {}) {
    this.#out = out;
    this.#tty = out.isTTY === true;
    this.#color = this.#tty && opts.color === true;
  }

  /** A new code: the first, or a replacement after the last one expired. */
  showCode(code: PairCode, remainingSeconds: number): void {
    if (this.#closed) return;
    // Only the displayable fields are kept, whatever else the object holds.
    this.#code = {
      userCode: code.userCode,
      verificationUri: code.verificationUri,
      verificationUriComplete: code.verificationUriComplete ?? null,
      expiresInSeconds: code.expiresInSeconds,
      ...(typeof code.name === 'string' ? { name: code.name } : {}),
    };
    this.#remaining = remainingSeconds;
    if (this.#tty) {
      this.#draw();
      return;
    }
    this.#print(plainCodeLines(this.#code, remainingSeconds));
    // After a new code the log should say again what is being waited for.
    this.#printedStatus = undefined;
  }

  /** Countdown update: a redraw on a TTY, nothing in a log. */
  tick(remainingSeconds: number): void {
    if (this.#closed) return;
    this.#remaining = remainingSeconds;
    if (this.#tty) this.#draw();
  }

  status(text: string): void {
    if (this.#closed) return;
    const line = clean(text).trim();
    this.#status = line;
    if (this.#tty) {
      this.#draw();
    } else if (line !== this.#printedStatus && line !== '') {
      this.#printedStatus = line;
      this.#print([line]);
    }
  }

  /** Takes the screen away, shows the cursor, then prints finalLines plainly. Idempotent. */
  close(finalLines: string[] = []): void {
    if (this.#closed) return;
    this.#closed = true;
    let s = '';
    if (this.#mode !== 'none') {
      // A stale countdown left in the scrollback would tell a lie.
      const moved = this.#size !== this.#currentSize();
      s += this.#mode === 'below' && !moved ? `${upOver(this.#rows)}${CSI}J` : HOME_AND_CLEAR;
      s += SHOW_CURSOR;
      this.#mode = 'none';
    }
    for (const line of finalLines) s += `${scrub(clean(line))}\n`;
    if (s !== '') this.#out.write(s);
  }

  #print(lines: string[]): void {
    this.#out.write(lines.map((l) => `${scrub(l)}\n`).join(''));
  }

  #currentSize(): string {
    return `${this.#out.columns ?? 80}x${this.#out.rows ?? 24}`;
  }

  #draw(): void {
    // Read on every frame: a TTY stream's size follows the window.
    const columns = Math.max(1, Math.floor(this.#out.columns ?? 80));
    const rows = Math.max(2, Math.floor(this.#out.rows ?? 24));
    // One row stays free for the cursor under the block, so the block never
    // scrolls its own first line away and moving back up always lands on it.
    const lines = (
      this.#code === undefined
        ? this.#status === ''
          ? []
          : wordWrap(this.#status, columns)
        : renderPairScreen(this.#code, this.#remaining, this.#status, { columns, rows: rows - 1, color: this.#color })
    ).map((l) => scrub(l));
    const size = this.#currentSize();
    const frame = lines.join('\n');
    if (this.#mode !== 'none' && frame === this.#frame && size === this.#size) return;

    const fits = lines.length < rows;
    let s = this.#mode === 'none' ? HIDE_CURSOR : '';
    if (fits && this.#mode === 'below' && size === this.#size) s += upOver(this.#rows);
    // After a resize the terminal may have rewrapped the old block, so where
    // it starts is unknowable: start over from a clear screen.
    else if (this.#mode !== 'none' || !fits) s += HOME_AND_CLEAR;
    if (fits) {
      s += lines.map((l) => `${CSI}2K${l}${NL}`).join('') + `${CSI}J`;
      this.#mode = 'below';
      this.#rows = lines.length;
    } else {
      s += lines.slice(0, rows).join(NL);
      this.#mode = 'home';
    }
    this.#frame = frame;
    this.#size = size;
    this.#out.write(s);
  }
}
