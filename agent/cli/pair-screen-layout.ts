// The pairing screen as pure functions of what the caller gives: the code
// the service issued, the seconds left, a status and the terminal's size.
// The device code (the secret half of the grant) is deliberately not part of
// PairCode: what is not passed in cannot be printed.
import { encode } from 'uqr';
import { bigDigits } from './pair-screen-font.js';
import { ANSI_STYLE, NO_STYLE, clean, hardWrap, textWidth, wordWrap, type Style } from './pair-screen-text.js';

export interface PairCode {
  /** Six digits, e.g. "042917": not secret, it is shown to the person. */
  userCode: string;
  verificationUri: string;
  /** The URI with the code filled in, for the QR code; may be absent. */
  verificationUriComplete?: string | null;
  expiresInSeconds: number;
  /** The device name the service proposes. */
  name?: string;
}

export interface Surface {
  columns: number;
  rows: number;
  color: boolean;
}

/** Modules of light around the code; scanners need some, and rows are scarce. */
export const QR_QUIET_ZONE = 2;
// L keeps the code as small as possible; boostEcc then takes any stronger
// level that fits the same size for free.
export const QR_OPTIONS = { ecc: 'L', boostEcc: true, border: QR_QUIET_ZONE } as const;
const GAP = '   ';
const MIN_SIDE_TEXT = 28;

/** "042 917": the code grouped for reading aloud. */
export function formatUserCode(code: string): string {
  const bare = clean(code).replace(/[\s-]+/g, '');
  const size = bare.length % 3 === 0 ? 3 : bare.length % 4 === 0 ? 4 : 3;
  const groups: string[] = [];
  for (let i = 0; i < bare.length; i += size) groups.push(bare.slice(i, i + size));
  return groups.join(' ');
}

/** "1:42"; a part second counts as a whole one, so 0:00 means really gone. */
export function formatCountdown(seconds: number): string {
  const s = Number.isFinite(seconds) ? Math.max(0, Math.ceil(seconds)) : 0;
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

// The screen is redrawn every second with the same URI: encode it once.
let lastQr: { text: string; data: boolean[][] | undefined } | undefined;

function qrModules(text: string): boolean[][] | undefined {
  if (lastQr?.text !== text) {
    let data: boolean[][] | undefined;
    try {
      data = encode(text, QR_OPTIONS).data;
    } catch {
      data = undefined; // longer than any QR version holds
    }
    lastQr = { text, data };
  }
  return lastQr.data;
}

/**
 * The QR code of `text` as terminal lines (Unicode half blocks, two modules
 * per character row, with a quiet zone), or undefined when it does not fit in
 * maxColumns x maxRows. Light modules are the ink, dark ones are blank: on
 * the usual dark terminal that shows the code the right way round, and with
 * colour the caller pins light-on-dark so any theme does.
 */
export function renderQr(text: string, maxColumns: number, maxRows: number): string[] | undefined {
  const data = qrModules(text);
  if (data === undefined) return undefined;
  const size = data.length;
  if (size > maxColumns || Math.ceil(size / 2) > maxRows) return undefined;
  // The half row below an odd-sized code is more quiet zone.
  const light = (y: number, x: number): boolean => y >= size || data[y]?.[x] !== true;
  const lines: string[] = [];
  for (let y = 0; y < size; y += 2) {
    let line = '';
    for (let x = 0; x < size; x++) {
      const top = light(y, x);
      const bottom = light(y + 1, x);
      line += top ? (bottom ? '█' : '▀') : bottom ? '▄' : ' ';
    }
    lines.push(line);
  }
  return lines;
}

/** A field the service may leave out, send as null or send empty: all mean absent. */
function optional(text: string | null | undefined): string | undefined {
  const cleaned = typeof text === 'string' ? clean(text).trim() : '';
  return cleaned === '' ? undefined : cleaned;
}

type QrPlace = 'side' | 'below' | 'none';
interface Variant {
  qr: QrPlace;
  big: boolean;
  /** 0: everything, 1: no title or hints, 2: not even blank lines. */
  density: 0 | 1 | 2;
}

// Most wanted first: the first that fits the surface is shown. A QR code
// beats big digits (scanning beats typing), and both beat blank lines.
const VARIANTS: readonly Variant[] = [
  { qr: 'side', big: true, density: 0 },
  { qr: 'below', big: true, density: 0 },
  { qr: 'side', big: false, density: 0 },
  { qr: 'below', big: false, density: 0 },
  { qr: 'below', big: false, density: 1 },
  { qr: 'below', big: false, density: 2 },
  { qr: 'none', big: true, density: 0 },
  { qr: 'none', big: false, density: 0 },
  { qr: 'none', big: false, density: 1 },
  { qr: 'none', big: false, density: 2 },
];

interface Parts {
  grouped: string;
  uri: string;
  complete: string | undefined;
  name: string | undefined;
  remaining: number;
  status: string;
  style: Style;
}

/** Instructions and code, `width` wide, or undefined when they cannot be. */
function head(p: Parts, v: Variant, width: number, qrShown: boolean): string[] | undefined {
  const lines: string[] = [];
  const uriFits = textWidth(p.uri) <= width;
  if (v.density === 0) {
    lines.push(p.style.bold('Pair this camera'), '');
    lines.push(...wordWrap('Open this page on a phone or computer:', width), ...hardWrap(p.uri, width), '');
  } else if (uriFits && textWidth(`Open ${p.uri}`) <= width) {
    lines.push(`Open ${p.uri}`);
  } else {
    lines.push('Open:', ...hardWrap(p.uri, width));
  }
  const enter = v.density === 0 ? 'and enter this code:' : 'and enter the code:';
  const styled = p.style.code(p.grouped);
  if (textWidth(`${enter} ${styled}`) <= width) lines.push(`${enter} ${styled}`);
  else lines.push(...wordWrap(enter, width), styled);
  if (v.big) {
    const digits = bigDigits(p.grouped);
    if (digits === undefined || textWidth(digits[0] ?? '') > width) return undefined;
    lines.push('', ...digits);
  }
  if (v.density === 0 && qrShown) lines.push('', ...wordWrap(v.qr === 'side' ? 'or scan the QR code.' : 'or scan this QR code:', width));
  if (v.density === 0 && !qrShown && p.complete !== undefined) {
    lines.push('', ...wordWrap('No room for the QR code here: open the page above.', width));
  }
  return lines;
}

function foot(p: Parts, width: number): string[] {
  const lines: string[] = [];
  if (p.name !== undefined) lines.push(...wordWrap(`Proposed name: ${p.name}`, width));
  lines.push(p.remaining > 0 ? `code expires in ${formatCountdown(p.remaining)}` : 'code expired');
  if (p.status !== '') lines.push(...wordWrap(p.status, width));
  return lines;
}

function layout(p: Parts, v: Variant, surface: Surface): string[] | undefined {
  const { columns, rows } = surface;
  const blank = v.density < 2 ? [''] : [];
  if (v.qr === 'none') {
    const top = head(p, v, columns, false);
    return top && [...top, ...blank, ...foot(p, columns)];
  }
  if (p.complete === undefined) return undefined;
  if (v.qr === 'below') {
    const top = head(p, v, columns, true);
    if (top === undefined) return undefined;
    const bottom = foot(p, columns);
    const qr = renderQr(p.complete, columns, rows - top.length - bottom.length - 2 * blank.length);
    return qr && [...top, ...blank, ...qr.map(p.style.qr), ...blank, ...bottom];
  }
  const qr = renderQr(p.complete, columns - GAP.length - MIN_SIDE_TEXT, rows);
  if (qr === undefined) return undefined;
  const qrWidth = textWidth(qr[0] ?? '');
  const width = columns - qrWidth - GAP.length;
  // A URI is what the person types: wrapping it is for when nothing else helps.
  if (textWidth(p.uri) > width) return undefined;
  const top = head(p, v, width, true);
  if (top === undefined) return undefined;
  const text = [...top, '', ...foot(p, width)];
  const height = Math.max(qr.length, text.length);
  const qrTop = Math.floor((height - qr.length) / 2);
  const textTop = Math.floor((height - text.length) / 2);
  const lines: string[] = [];
  for (let i = 0; i < height; i++) {
    const left = qr[i - qrTop];
    const right = text[i - textTop] ?? '';
    lines.push(`${left === undefined ? ' '.repeat(qrWidth) : p.style.qr(left)}${right === '' ? '' : GAP + right}`);
  }
  return lines;
}

/**
 * The whole screen for a TTY, as lines no wider than surface.columns: the
 * first layout of VARIANTS that also fits surface.rows, else the tightest
 * one (only a tiny window gets more rows than it has).
 */
export function renderPairScreen(code: PairCode, remainingSeconds: number, status: string, surface: Surface): string[] {
  const columns = Math.max(1, Math.floor(surface.columns));
  const fit: Surface = { columns, rows: Math.max(1, Math.floor(surface.rows)), color: surface.color };
  const parts: Parts = {
    grouped: formatUserCode(code.userCode),
    uri: clean(code.verificationUri),
    complete: optional(code.verificationUriComplete),
    name: optional(code.name),
    remaining: remainingSeconds,
    status: clean(status).trim(),
    style: surface.color ? ANSI_STYLE : NO_STYLE,
  };
  let lines: string[] = [];
  for (const v of VARIANTS) {
    const candidate = layout(parts, v, fit);
    if (candidate === undefined) continue;
    lines = candidate.map((l) => l.trimEnd());
    if (lines.length <= fit.rows && lines.every((l) => textWidth(l) <= columns)) return lines;
  }
  return lines;
}

/** What a non-TTY gets when a code is shown: plain lines, no escape codes, no QR. */
export function plainCodeLines(code: PairCode, remainingSeconds = code.expiresInSeconds): string[] {
  const lines = [`pairing code: ${formatUserCode(code.userCode)}`, `open: ${clean(code.verificationUri)}`];
  const complete = optional(code.verificationUriComplete);
  if (complete !== undefined) lines.push(`or open: ${complete}`);
  const name = optional(code.name);
  if (name !== undefined) lines.push(`proposed name: ${name}`);
  const left = Number.isFinite(remainingSeconds) ? Math.ceil(remainingSeconds) : 0;
  lines.push(left > 0 ? `the code expires in ${left} s` : 'the code has expired');
  return lines;
}
