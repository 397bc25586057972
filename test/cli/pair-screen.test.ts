import { describe, expect, it } from '@jest/globals';
import { encode } from 'uqr';
import {
  PairScreen,
  QR_OPTIONS,
  QR_QUIET_ZONE,
  formatCountdown,
  formatUserCode,
  plainCodeLines,
  renderPairScreen,
  renderQr,
  type PairCode,
} from '../../agent/cli/pair-screen.js';
import { bigDigits } from '../../agent/cli/pair-screen-font.js';
import { registerSecret } from '../../agent/lib/secrets.js';

const ESC = '\u001b';
const URI = 'http://127.0.0.1:43521/pair';
const COMPLETE = 'http://127.0.0.1:43521/pair?user_code=042917';
const CODE: PairCode = { userCode: '042917', verificationUri: URI, verificationUriComplete: COMPLETE, expiresInSeconds: 120 };
const STATUS = 'waiting for approval…';

// Every character the screen uses is one column wide, so columns are code points once colour is gone.
const plain = (line: string): string => line.replace(/\u001b\[[0-9;]*m/g, '');
const width = (line: string): number => [...plain(line)].length;

/** Where `block` sits in `screen` as consecutive rows at one column, or undefined. */
function findBlock(screen: string[], block: string[]): { row: number; column: number } | undefined {
  const rows = screen.map((l) => [...plain(l)]);
  for (let row = 0; row + block.length <= rows.length; row++) {
    for (let column = 0; column < (rows[row]?.length ?? 0); column++) {
      const at = (b: string, j: number): boolean => (rows[row + j] ?? []).slice(column, column + [...b].length).join('') === b;
      if (block.every(at)) return { row, column };
    }
  }
  return undefined;
}

/** The modules the half blocks show, dark = true, as the library lays them out. */
function modulesOf(lines: string[]): boolean[][] {
  // Light modules are the ink, so a blank half is a dark module.
  const halves = (top: boolean) => (line: string) => [...line].map((c) => c !== '█' && c !== (top ? '▀' : '▄'));
  return lines.flatMap((l) => [halves(true)(l), halves(false)(l)]).slice(0, [...(lines[0] ?? '')].length);
}

function fakeStream(tty: boolean, columns = 80, rows = 24) {
  const writes: string[] = [];
  return { writes, stream: { isTTY: tty, columns, rows, write: (s: string) => writes.push(s) } };
}

describe('formatUserCode and formatCountdown', () => {
  it('groups the code for reading aloud', () => {
    expect(['042917', '042 917', '12345678'].map(formatUserCode)).toEqual(['042 917', '042 917', '1234 5678']);
  });

  it('counts down as m:ss, a part second counting as a whole one', () => {
    const seconds = [102, 120, 60, 9, 0.3, 0, -4, Number.NaN];
    expect(seconds.map(formatCountdown)).toEqual(['1:42', '2:00', '1:00', '0:09', '0:01', '0:00', '0:00', '0:00']);
  });
});

describe('renderQr', () => {
  it('draws exactly the matrix the library encodes, quiet zone included', () => {
    const lines = renderQr(COMPLETE, 80, 24);
    expect(lines).toBeDefined();
    const expected = encode(COMPLETE, QR_OPTIONS);
    const modules = modulesOf(lines ?? []);
    expect(expected.size).toBe(4 * expected.version + 17 + 2 * QR_QUIET_ZONE);
    expect(modules).toEqual(expected.data);
    expect(lines).toHaveLength(Math.ceil(expected.size / 2));
    // The quiet zone is light all round.
    const edge = (i: number): boolean => i < QR_QUIET_ZONE || i >= expected.size - QR_QUIET_ZONE;
    expect(modules.every((row, y) => row.every((dark, x) => !dark || (!edge(x) && !edge(y))))).toBe(true);
  });

  it('takes about 33-37 columns by 17-19 rows for the sample URL, and is undefined when that does not fit', () => {
    const lines = renderQr(COMPLETE, 200, 200) ?? [];
    const w = width(lines[0] ?? '');
    expect([33, 35, 37]).toContain(w);
    expect([17, 18, 19]).toContain(lines.length);
    expect(renderQr(COMPLETE, w, lines.length)).toEqual(lines);
    expect(renderQr(COMPLETE, w - 1, lines.length)).toBeUndefined();
    expect(renderQr(COMPLETE, w, lines.length - 1)).toBeUndefined();
    expect(renderQr('x'.repeat(5000), 1000, 1000)).toBeUndefined();
  });
});

describe('renderPairScreen', () => {
  const surfaces = [[80, 24], [40, 24], [100, 40]] as const; // prettier-ignore
  const codes: PairCode[] = [CODE, { ...CODE, name: 'cam-07 (north gate)' }, { ...CODE, verificationUriComplete: null }];

  for (const [columns, rows] of surfaces) {
    for (const color of [false, true]) {
      it(`fits ${columns}x${rows} (color ${color}) and shows code, URI, countdown and status`, () => {
        for (const code of codes) {
          const lines = renderPairScreen(code, 102, STATUS, { columns, rows, color });
          for (const line of lines) expect(width(line)).toBeLessThanOrEqual(columns);
          expect(lines.length).toBeLessThanOrEqual(rows);
          const text = lines.map(plain);
          expect(text.some((l) => l.includes('042 917'))).toBe(true);
          expect(text.some((l) => l.includes(URI))).toBe(true);
          expect(text.some((l) => l.endsWith('code expires in 1:42'))).toBe(true);
          expect(text.some((l) => l.endsWith(STATUS))).toBe(true);
          if (code.name !== undefined) expect(text.some((l) => l.includes(code.name as string))).toBe(true);
          if (!color) expect(lines.join('\n')).not.toContain(ESC);
        }
      });
    }
  }

  it('keeps every line within the width at any size, and within the rows from 12 up', () => {
    for (let columns = 20; columns <= 140; columns += 7) {
      for (let rows = 8; rows <= 50; rows += 6) {
        const lines = renderPairScreen({ ...CODE, name: 'cam-07' }, 102, STATUS, { columns, rows, color: true });
        expect(lines.filter((l) => width(l) > columns)).toEqual([]);
        if (rows >= 12) expect(lines.length).toBeLessThanOrEqual(rows);
        expect(lines.map(plain).join('')).toContain(URI); // wrapped or not
        expect(lines.some((l) => plain(l).includes('042 917'))).toBe(true);
      }
    }
  });

  it('at 80x24 puts the QR code on the left and the text on the right, within 24 rows', () => {
    const lines = renderPairScreen(CODE, 102, STATUS, { columns: 80, rows: 24, color: false });
    expect(lines.length).toBeLessThanOrEqual(24);
    const qr = renderQr(COMPLETE, 80, 24) ?? [];
    expect(findBlock(lines, qr)).toEqual({ row: 0, column: 0 });
    const uriRow = lines.findIndex((l) => l.includes(URI));
    expect(lines[uriRow]?.indexOf(URI)).toBeGreaterThan(width(qr[0] ?? ''));
  });

  it('shows the code in big digits when there is room', () => {
    const big = bigDigits('042 917') ?? [];
    expect(big).toHaveLength(5);
    expect(new Set(big.map(width)).size).toBe(1);
    const lines = renderPairScreen(CODE, 102, STATUS, { columns: 80, rows: 24, color: false });
    expect(findBlock(lines, big.map((l) => l.trimEnd()))?.column).toBeGreaterThan(33);
    expect(findBlock(renderPairScreen(CODE, 102, STATUS, { columns: 40, rows: 16, color: false }), big)).toBeUndefined();
    // Ten distinct digits, all the same size, and no big letters.
    const glyphs = [...'0123456789'].map((d) => (bigDigits(d) ?? []).join('\n'));
    expect(new Set(glyphs).size).toBe(10);
    expect(new Set(glyphs.map((g) => g.length)).size).toBe(1);
    expect(bigDigits('04A 917')).toBeUndefined();
  });

  it('at 40x24 puts the QR code below the text', () => {
    const lines = renderPairScreen(CODE, 102, STATUS, { columns: 40, rows: 24, color: false });
    const at = findBlock(lines, renderQr(COMPLETE, 40, 24) ?? []);
    expect(at).toBeDefined();
    expect(at?.column).toBe(0);
    expect(lines.findIndex((l) => l.includes(URI))).toBeLessThan(at?.row ?? -1);
    expect(lines.findIndex((l) => l.includes('042 917'))).toBeLessThan(at?.row ?? -1);
  });

  it('leaves the QR code out when it cannot fit, and says to open the URI instead', () => {
    const lines = renderPairScreen(CODE, 102, STATUS, { columns: 40, rows: 16, color: false });
    expect(lines.length).toBeLessThanOrEqual(16);
    expect(lines.some((l) => l.includes('█▀') || l.includes('▄█'))).toBe(false);
    expect(lines.join(' ')).toMatch(/no room for the QR code.*open the page above/i);
    expect(lines).toContain(URI);
  });

  it('says nothing of a QR code when there is no complete URI', () => {
    const lines = renderPairScreen({ ...CODE, verificationUriComplete: null }, 102, STATUS, { columns: 80, rows: 24, color: false });
    expect(lines.join('\n')).not.toMatch(/QR/);
    expect(lines).toContain(URI);
  });

  it('wraps a URI wider than the screen on lines of its own, every character kept', () => {
    const long = `https://pairing.example.com/device/activate/${'a1b2c3'.repeat(8)}`;
    const lines = renderPairScreen({ ...CODE, verificationUri: long }, 102, STATUS, { columns: 40, rows: 24, color: false });
    for (const line of lines) expect(width(line)).toBeLessThanOrEqual(40);
    const pieces = lines.filter((l) => l !== '' && long.includes(l));
    expect(pieces.length).toBeGreaterThan(1);
    expect(pieces.join('')).toBe(long);
  });

  it('says when the code has expired', () => {
    const lines = renderPairScreen(CODE, 0, STATUS, { columns: 80, rows: 24, color: false });
    expect(lines.some((l) => l.endsWith(' code expired'))).toBe(true);
    expect(lines.join('\n')).not.toContain('expires in');
  });

  it('keeps terminal controls sent by the service off the screen', () => {
    const hostile: PairCode = { ...CODE, verificationUri: `${URI}\u001b[2J\u001b]0;owned\u0007`, name: 'cam\r\n\u001b[31mred' };
    const lines = renderPairScreen(hostile, 102, `bad\u001b[1Astatus`, { columns: 80, rows: 24, color: false });
    const all = lines.join('\n');
    expect(all).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    expect(all).toContain(`${URI}`);
    expect(all).toContain('badstatus');
    expect(all).toContain('Proposed name: cam red');
  });
});

describe('plainCodeLines', () => {
  it('gives the code, both URIs and the expiry as plain lines, never an escape character', () => {
    const [code, open] = ['pairing code: 042 917', `open: ${URI}`];
    expect(plainCodeLines(CODE)).toEqual([code, open, `or open: ${COMPLETE}`, 'the code expires in 120 s']);
    const other = { ...CODE, verificationUriComplete: null, name: 'cam-07' };
    expect(plainCodeLines(other, 95)).toEqual([code, open, 'proposed name: cam-07', 'the code expires in 95 s']);
    expect(plainCodeLines(CODE, 0)).toContain('the code has expired');
    // A hostile service's URI and name.
    const lines = plainCodeLines({ ...CODE, verificationUri: `${URI}\u001b[2J`, name: '\u001b[31mx' });
    expect(lines.join('\n')).not.toContain(ESC);
  });
});

describe('PairScreen off a TTY', () => {
  it('prints the code lines once per code and a status line only when it changes', () => {
    const { writes, stream } = fakeStream(false);
    const screen = new PairScreen(stream, { color: true });
    screen.showCode(CODE, 120);
    expect(writes.join('')).toBe(`${plainCodeLines(CODE).join('\n')}\n`);
    writes.length = 0;
    for (const s of [119, 118]) screen.tick(s);
    expect(writes).toEqual([]);
    screen.status(STATUS);
    screen.status(STATUS);
    screen.tick(117);
    screen.status(STATUS);
    expect(writes.join('')).toBe(`${STATUS}\n`);
    for (let i = 0; i < 2; i++) screen.status('slow down: polling every 10 s');
    expect(writes.join('')).toBe(`${STATUS}\nslow down: polling every 10 s\n`);
  });

  it('prints a replacement code and then the status again', () => {
    const { writes, stream } = fakeStream(false);
    const screen = new PairScreen(stream);
    screen.showCode(CODE, 120);
    screen.status(STATUS);
    const next = { ...CODE, userCode: '555123', verificationUriComplete: `${URI}?user_code=555123` };
    screen.showCode(next, 120);
    screen.status(STATUS);
    const out = writes.join('');
    expect(out.match(/pairing code: /g)).toHaveLength(2);
    expect(out).toContain('pairing code: 555 123');
    expect(out.match(new RegExp(STATUS, 'g'))).toHaveLength(2);
  });

  it('never writes an escape code, and close() prints the final lines once', () => {
    const { writes, stream } = fakeStream(false);
    const screen = new PairScreen(stream, { color: true });
    screen.showCode(CODE, 120);
    screen.status(`approved${ESC}[2J`);
    screen.close(['paired as cam-07']);
    screen.close(['paired as cam-07']);
    screen.status('late');
    const out = writes.join('');
    expect(out).not.toContain(ESC);
    expect(out.endsWith('approved\npaired as cam-07\n')).toBe(true);
  });
});

describe('PairScreen on a TTY', () => {
  it('hides the cursor while shown, redraws in place, and close() shows it again once', () => {
    const { writes, stream } = fakeStream(true, 80, 24);
    const screen = new PairScreen(stream);
    screen.showCode(CODE, 120);
    expect(writes).toHaveLength(1);
    const first = writes[0] ?? '';
    expect(first.startsWith(`${ESC}[?25l`)).toBe(true);
    expect(first).toContain('042 917');
    expect(first).toContain(URI);
    const rows = (first.match(/\r\n/g) ?? []).length;
    // A row stays free for the cursor, so moving back up always finds the top.
    expect(rows).toBeLessThanOrEqual(23);
    screen.tick(119.5);
    expect(writes).toHaveLength(1);
    screen.tick(102);
    expect(writes).toHaveLength(2);
    expect(writes[1]?.startsWith(`\r${ESC}[${rows}A`)).toBe(true);
    expect(writes[1]).toContain('code expires in 1:42');
    expect(writes[1]).not.toContain(`${ESC}[?25l`);
    screen.status(STATUS);
    expect(writes[2]).toContain(STATUS);
    screen.close(['paired as cam-07']);
    const last = writes[3] ?? '';
    expect(last.indexOf(`${ESC}[?25h`)).toBeGreaterThanOrEqual(0);
    expect(last.endsWith('paired as cam-07\n')).toBe(true);
    // The stale screen is erased before the final lines.
    expect(last.startsWith(`\r${ESC}[${(writes[2]?.match(/\r\n/g) ?? []).length}A${ESC}[J`)).toBe(true);
    const count = writes.length;
    screen.close(['again']);
    screen.tick(50);
    screen.status('late');
    expect(writes).toHaveLength(count);
    expect(writes.join('').match(/\u001b\[\?25h/g)).toHaveLength(1);
  });

  it('starts over from a cleared screen after a resize', () => {
    const { writes, stream } = fakeStream(true, 80, 24);
    const screen = new PairScreen(stream);
    screen.showCode(CODE, 120);
    stream.columns = 40;
    screen.tick(119);
    expect(writes[1]?.startsWith(`${ESC}[H${ESC}[2J`)).toBe(true);
    for (const line of (writes[1] ?? '').split('\r\n')) expect(width(line.replace(/\u001b\[[0-9;]*[A-Za-z]/g, ''))).toBeLessThanOrEqual(40);
  });

  it('close() before anything was shown writes only the final lines', () => {
    const { writes, stream } = fakeStream(true);
    new PairScreen(stream).close(['cancelled']);
    expect(writes).toEqual(['cancelled\n']);
  });

  it('uses colour only when asked', () => {
    const off = fakeStream(true);
    new PairScreen(off.stream).showCode(CODE, 120);
    expect(off.writes.join('')).not.toMatch(/\u001b\[[0-9;]*m/);
    const on = fakeStream(true);
    new PairScreen(on.stream, { color: true }).showCode(CODE, 120);
    expect(on.writes.join('')).toContain(`${ESC}[1;7m 042 917 ${ESC}[0m`);
  });
});

describe('secrets', () => {
  it('never prints a device code passed along, nor a registered secret it is handed', () => {
    const deviceCode = 'GmRhmhcxhwAzkoEqiMEg_DnyEysNkuNhszIySk9eS';
    registerSecret('s3cr3t-pairing-grant');
    for (const tty of [true, false]) {
      const { writes, stream } = fakeStream(tty);
      const screen = new PairScreen(stream);
      screen.showCode({ ...CODE, device_code: deviceCode, deviceCode } as PairCode, 120);
      screen.tick(100);
      screen.status('server said s3cr3t-pairing-grant');
      screen.close(['echo s3cr3t-pairing-grant']);
      expect(writes.join('')).not.toMatch(/GmRhmhcx|s3cr3t-pairing-grant/);
      expect(writes.join('')).toContain('server said [redacted]');
    }
  });
});
