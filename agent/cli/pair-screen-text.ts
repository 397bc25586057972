// Text helpers for the pairing screen. The URIs and the proposed name come
// from the service and the status from the caller, so everything is cleaned
// of what a terminal would act on (escape sequences, cursor moves, bidi
// overrides that could disguise a URI) before it is measured or written.

// eslint-disable-next-line no-control-regex
const ACTIVE = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2028\u2029\u2060-\u2069\ufeff]/g;
// Whole CSI and OSC sequences go, not just their ESC, so no "[31m" is left behind.
// eslint-disable-next-line no-control-regex
const SEQUENCE = /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)?/g;
// eslint-disable-next-line no-control-regex
const SGR = /\u001b\[[0-9;]*m/g;
const MARK = /\p{M}/u;
const WIDE =
  /[\u1100-\u115f\u2e80-\u303e\u3041-\u33ff\u3400-\u4dbf\u4e00-\u9fff\ua000-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6\u{1f300}-\u{1f64f}\u{1f900}-\u{1f9ff}\u{20000}-\u{3fffd}]/u;

/** One line of inert text: whitespace controls become spaces, other controls go. */
export function clean(text: string): string {
  return text.replace(SEQUENCE, '').replace(/[\t\n\r\v\f]+/g, ' ').replace(ACTIVE, '');
}

function charWidth(ch: string): number {
  if (MARK.test(ch)) return 0;
  return WIDE.test(ch) ? 2 : 1;
}

/** Terminal columns `text` takes; our own colour codes take none. */
export function textWidth(text: string): number {
  let width = 0;
  for (const ch of text.replace(SGR, '')) width += charWidth(ch);
  return width;
}

/** Cuts anywhere, for URIs: every character is kept, in order, each chunk at most `width` wide. */
export function hardWrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  let used = 0;
  for (const ch of text) {
    const w = charWidth(ch);
    // A chunk always takes at least one character, so a width narrower than
    // one wide character still makes progress.
    if (used + w > width && line !== '') {
      lines.push(line);
      line = '';
      used = 0;
    }
    line += ch;
    used += w;
  }
  if (line !== '' || lines.length === 0) lines.push(line);
  return lines;
}

/** Breaks between words; a word wider than the line is cut like a URI. */
export function wordWrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ').filter((w) => w !== '')) {
    const joined = line === '' ? word : `${line} ${word}`;
    if (textWidth(joined) <= width) {
      line = joined;
      continue;
    }
    if (line !== '') lines.push(line);
    const pieces = hardWrap(word, width);
    line = pieces.pop() ?? '';
    lines.push(...pieces);
  }
  if (line !== '' || lines.length === 0) lines.push(line);
  return lines;
}

export interface Style {
  bold(text: string): string;
  /** The code as the one thing that stands out on the screen. */
  code(text: string): string;
  /** QR lines: light modules are drawn as ink, so force light ink on a dark ground. */
  qr(text: string): string;
}

export const NO_STYLE: Style = { bold: (t) => t, code: (t) => t, qr: (t) => t };

export const ANSI_STYLE: Style = {
  bold: (t) => `\u001b[1m${t}\u001b[0m`,
  code: (t) => `\u001b[1;7m ${t} \u001b[0m`,
  qr: (t) => `\u001b[97;40m${t}\u001b[0m`,
};
