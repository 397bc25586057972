// Big digits for the pairing code. Full blocks on five rows rather than
// box-drawing art or half blocks: they read the same in every monospace font,
// and a character cell being twice as tall as wide gives the usual 1:2 digit.

const GLYPHS: Record<string, readonly string[]> = {
  '0': [' ███ ', '█   █', '█   █', '█   █', ' ███ '],
  '1': ['  █  ', ' ██  ', '  █  ', '  █  ', ' ███ '],
  '2': [' ███ ', '█   █', '  ██ ', ' █   ', '█████'],
  '3': ['████ ', '    █', ' ███ ', '    █', '████ '],
  '4': ['█   █', '█   █', '█████', '    █', '    █'],
  '5': ['█████', '█    ', '████ ', '    █', '████ '],
  '6': [' ███ ', '█    ', '████ ', '█   █', ' ███ '],
  '7': ['█████', '    █', '   █ ', '  █  ', '  █  '],
  '8': [' ███ ', '█   █', ' ███ ', '█   █', ' ███ '],
  '9': [' ███ ', '█   █', ' ████', '    █', ' ███ '],
};

export const BIG_ROWS = 5;
const DIGIT_GAP = ' ';
const GROUP_GAP = '   ';

/**
 * A grouped code ("042 917") in big digits, every row the same width, or
 * undefined when it holds anything but digits and the spaces between groups.
 */
export function bigDigits(grouped: string): string[] | undefined {
  const groups = grouped.split(' ');
  if (groups.some((g) => !/^[0-9]+$/.test(g))) return undefined;
  const rows: string[] = [];
  for (let r = 0; r < BIG_ROWS; r++) {
    rows.push(groups.map((g) => [...g].map((d) => GLYPHS[d]?.[r] ?? '').join(DIGIT_GAP)).join(GROUP_GAP));
  }
  return rows;
}
