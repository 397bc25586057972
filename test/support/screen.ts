// What a terminal would show after a program's output: the few controls the
// simulator and the pairing screen use (carriage return, line feed, cursor
// up, cursor home, erase below, erase screen, erase line), lines wrapped at
// the width as a terminal wraps them, colours and cursor visibility ignored.
// Enough to ask "what is the last thing on the screen", which the raw bytes
// cannot answer once the cursor moves back.

const CSI_SEQUENCE = /^\u001b\[([?0-9;]*)([@-~])/;
const OTHER_ESCAPE = /^\u001b(?:\][^\u0007\u001b]*(?:\u0007|\u001b\\)|[()][0-9A-Za-z]|[=>78])/;

export class Screen {
  /** Every row ever written (the scrollback and the visible screen). */
  readonly rows: string[][] = [[]];
  private row = 0;
  private col = 0;

  constructor(
    readonly width: number,
    readonly height: number,
  ) {}

  /** The first row the cursor can reach: the top of the visible screen. */
  private get top(): number {
    return Math.max(0, this.rows.length - this.height);
  }

  write(text: string): this {
    let rest = text;
    while (rest.length > 0) {
      if (rest.startsWith('\u001b')) {
        const csi = CSI_SEQUENCE.exec(rest);
        if (csi) {
          this.control(csi[1] ?? '', csi[2] ?? '');
          rest = rest.slice(csi[0].length);
          continue;
        }
        const other = OTHER_ESCAPE.exec(rest);
        rest = rest.slice(other ? other[0].length : 1);
        continue;
      }
      const ch = String.fromCodePoint(rest.codePointAt(0)!);
      rest = rest.slice(ch.length);
      if (ch === '\r') this.col = 0;
      else if (ch === '\n') this.lineFeed();
      else if (ch === '\b') this.col = Math.max(0, this.col - 1);
      else if (ch >= ' ') this.put(ch);
    }
    return this;
  }

  private lineFeed(): void {
    this.row++;
    while (this.rows.length <= this.row) this.rows.push([]);
  }

  private put(ch: string): void {
    if (this.col >= this.width) {
      this.col = 0;
      this.lineFeed();
    }
    const line = this.rows[this.row]!;
    while (line.length < this.col) line.push(' ');
    line[this.col] = ch;
    this.col++;
  }

  private control(params: string, final: string): void {
    const n = Number.parseInt(params, 10);
    if (final === 'A') this.row = Math.max(this.top, this.row - (Number.isNaN(n) ? 1 : Math.max(1, n)));
    else if (final === 'H') {
      this.row = this.top;
      this.col = 0;
    } else if (final === 'J') {
      if (params === '2' || params === '3') for (let r = this.top; r < this.rows.length; r++) this.rows[r] = [];
      else {
        this.rows[this.row]!.length = Math.min(this.rows[this.row]!.length, this.col);
        for (let r = this.row + 1; r < this.rows.length; r++) this.rows[r] = [];
      }
    } else if (final === 'K') {
      if (params === '2') this.rows[this.row] = [];
      else this.rows[this.row]!.length = Math.min(this.rows[this.row]!.length, this.col);
    }
  }

  /** The rows as text, trailing blanks trimmed, empty rows at the end dropped. */
  lines(): string[] {
    const out = this.rows.map((r) => r.join('').trimEnd());
    while (out.length > 0 && out.at(-1) === '') out.pop();
    return out;
  }
}
