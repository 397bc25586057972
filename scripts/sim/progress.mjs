// Live progress a person can follow. On a terminal: story events scroll,
// and under them a block (the story clock, one row per device) is redrawn in
// place. Anywhere else (a pipe, a CI log): plain lines only, never an escape
// code: every story event, state change and heartbeat, and every few agent
// minutes one status line per device.
//
// Lines come in agent-time order. They come from two kinds of source: the
// story, the agents' state changes and the status lines are stamped when
// they happen, but a heartbeat is learned from the service's journal a poll
// later (up to a minute later for an answer held back), stamped with the
// moment it arrived there. So while the poller runs, plain lines wait until
// a poll has read the journal up to their time (`hold`, `release`) and go
// out sorted; a heartbeat learned after later lines were printed is stamped
// when it is printed and says when it was sent. Stamps never go back.
import { bytes, clock, duration } from './report.mjs';

const CSI = '\u001b[';

export function deviceRow(r) {
  const gap = r.lastGapMs !== undefined ? `, last gap ${duration(r.lastGapMs)}` : '';
  const channels = r.channels.length > 0 ? r.channels.join('+') : 'none';
  const known = r.channelsKnown === null ? 'not synced' : `${r.channelsKnown.length} at service`;
  const uploads = r.clips > 0 ? `${r.clipsStored}/${r.clips} clips stored (${bytes(r.bytesStored)} of ${bytes(r.bytesTotal)})` : 'no clips yet';
  return `${r.label} ${r.state.padEnd(13)} hb ${r.heartbeatsOk}/${r.heartbeats} ok${gap}; channels ${channels} (${known}); queue ${r.queued}; ${uploads}`;
}

export class Progress {
  constructor({ out = process.stdout, plain = false, totalMs }) {
    this.out = out;
    this.tty = out.isTTY === true && !plain && process.env.TERM !== 'dumb';
    this.totalMs = totalMs;
    this.blockRows = 0;
    this.header = '';
    this.rows = [];
    this.closed = false;
    /** Plain lines waiting for a poll to pass their time: { t, text, late, seq }. */
    this.held = undefined;
    this.seq = 0;
    /** The latest agent time a line was stamped with: stamps never go back. */
    this.printedT = 0;
  }

  /** A line that stays: a story event, a state change, a heartbeat (plain mode), a pairing line. */
  line(t, text) {
    this.emit(t, text);
  }

  /** `late`: the text for a line printed after lines stamped later than `t`, which says when it happened. */
  emit(t, text, late = text) {
    if (t !== undefined && this.held !== undefined && !this.closed) return void this.held.push({ t, text, late, seq: this.seq++ });
    this.print(t, text, late);
  }

  print(t, text, late) {
    let stamped = `[sim] ${text}`;
    if (t !== undefined) {
      // A second or more behind what is on the screen already: stamped now, saying when.
      const behind = t < this.printedT - 1000;
      this.printedT = Math.max(this.printedT, t);
      stamped = `[sim ${clock(this.printedT)}] ${behind ? late : text}`;
    }
    if (!this.tty || this.closed) return void this.out.write(`${stamped}\n`);
    this.out.write(`${this.clearBlock()}${stamped}\n${this.block()}`);
  }

  /** From now on plain lines wait for `release`: a poller reads the service's side from here. No effect on a terminal. */
  hold() {
    if (!this.tty) this.held ??= [];
  }

  /** Prints, in agent-time order, the lines held up to `mark` (the poller has read everything before it); Infinity: all, and stop holding. */
  release(mark) {
    if (this.held === undefined) return;
    const ready = this.held.filter((l) => l.t <= mark).sort((a, b) => a.t - b.t || a.seq - b.seq);
    this.held = mark === Infinity ? undefined : this.held.filter((l) => l.t > mark);
    for (const l of ready) this.print(l.t, l.text, l.late);
  }

  /** Heartbeats scroll only in plain mode; on a terminal the block shows their counts. */
  heartbeat(t, device, attempt, gapMs) {
    if (this.tty) return;
    const injected = attempt.faults.length > 0 ? ` (injected ${attempt.faults.join(', ')})` : '';
    const answer = attempt.status === 204 ? '204 accepted' : `${attempt.status === 0 ? 'no answer' : attempt.status}${injected}`;
    const after = gapMs !== undefined ? `, ${duration(gapMs)} after the previous one` : '';
    this.emit(t, `${device.label} heartbeat: ${answer}${after}`, `${device.label} heartbeat sent at ${clock(t)}: ${answer}${after}`);
  }

  /** The block under the scrolling lines (terminal), or one status line per device (plain, when asked). */
  update(t, network, rows, { plainStatus = false } = {}) {
    const bar = this.totalMs > 0 ? progressBar(Math.min(1, t / this.totalMs), 20) : '';
    this.header = `agent time ${clock(t)} of ${clock(this.totalMs)} ${bar}  network ${network}`;
    this.rows = rows.map(deviceRow);
    if (this.closed) return;
    if (this.tty) this.out.write(`${this.clearBlock()}${this.block()}`);
    else if (plainStatus) for (const r of this.rows) this.line(t, `status ${r}`);
  }

  clearBlock() {
    if (this.blockRows === 0) return '';
    const s = `\r${CSI}${this.blockRows}A${CSI}J`;
    this.blockRows = 0;
    return s;
  }

  block() {
    if (!this.header) return '';
    const width = Math.max(40, (this.out.columns ?? 120) - 1);
    const lines = [this.header, ...this.rows].map((l) => (l.length > width ? `${l.slice(0, width - 1)}…` : l));
    this.blockRows = lines.length;
    return `${lines.join('\n')}\n`;
  }

  /**
   * The block is left as it was last drawn, and never drawn again: what
   * follows (the agents' last state changes, the report) is printed under it
   * as plain lines, and no cursor movement reaches back over them.
   */
  close() {
    this.release(Infinity);
    this.blockRows = 0;
    this.closed = true;
  }
}

function progressBar(fraction, width) {
  const full = Math.round(fraction * width);
  return `▕${'█'.repeat(full)}${'░'.repeat(width - full)}▏`;
}
