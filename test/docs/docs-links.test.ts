// The README and the reference pages under docs/ stay findable and true to
// the repository: every relative link reaches a file (and a heading, for a
// #fragment), every page under docs/ is linked from the README, every
// `npm run X` they show is a script in package.json, and the README's test
// command is the one .ci/run runs; the README stays within 1,200 words, its
// first command the simulator and its second the tests.
import { describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const read = (rel: string): string => readFileSync(path.join(ROOT, rel), 'utf8');
const docsPages = (): string[] => readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`);
const pages = (): string[] => ['README.md', 'ARCHITECTURE.md', ...docsPages()];

/** The README is for a camera maker reading it through: the figures and test output live in docs/. */
const README_MAX_WORDS = 1200;
/** Words as `wc -w` counts them in a UTF-8 locale: runs of anything but white space. */
const words = (text: string): number => text.split(/\s+/).filter(Boolean).length;

/** Markdown outside fenced code blocks, where links are links. */
const prose = (text: string): string => text.replace(/^```[\s\S]*?^```/gm, '');

/** Relative link targets of `[text](target)`, fragments kept. */
function relativeLinks(text: string): string[] {
  return [...prose(text).matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1] as string).filter((t) => !/^[a-z]+:/.test(t));
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
const slug = (heading: string): string =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');

const anchors = (text: string): Set<string> => new Set([...prose(text).matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1] as string)));

describe('the README and docs/', () => {
  it('every relative link reaches a file, and a heading when it names one', () => {
    const broken: string[] = [];
    for (const page of pages()) {
      for (const link of relativeLinks(read(page))) {
        const [file, fragment] = link.split('#') as [string, string | undefined];
        const target = file === '' ? page : path.normalize(path.join(path.dirname(page), file));
        if (!existsSync(path.join(ROOT, target))) broken.push(`${page}: ${link} (no ${target})`);
        else if (fragment !== undefined && target.endsWith('.md') && !anchors(read(target)).has(fragment)) broken.push(`${page}: ${link} (no heading #${fragment} in ${target})`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('finds a link that goes nowhere (the check above can fail)', () => {
    expect(relativeLinks('see [x](docs/nowhere.md) and [y](https://example.com)\n```\n[z](not-a-link.md)\n```')).toEqual(['docs/nowhere.md']);
    expect(anchors('# Exit codes (sysexits)\n## `queue` and `upload`\n').has('exit-codes-sysexits')).toBe(true);
    expect(anchors('## `queue` and `upload`\n').has('queue-and-upload')).toBe(true);
  });

  it('links every page under docs/ from the README', () => {
    const linked = new Set(relativeLinks(read('README.md')).map((l) => path.normalize(l.split('#')[0] as string)));
    expect(docsPages().filter((p) => !linked.has(p))).toEqual([]);
  });

  it('shows only npm scripts that exist', () => {
    const scripts = Object.keys((JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts);
    const missing: string[] = [];
    for (const page of pages()) {
      for (const m of read(page).matchAll(/npm run ([a-z][\w:-]*)/g)) if (!scripts.includes(m[1] as string)) missing.push(`${page}: npm run ${m[1]}`);
    }
    expect(missing).toEqual([]);
  });

  it('keeps the README to 1,200 words, counted as `wc -w` counts them (runs of non-space)', () => {
    expect(words('a  b\n`c` …\td\n')).toBe(5);
    expect(words(read('README.md'))).toBeLessThanOrEqual(README_MAX_WORDS);
  });

  it("keeps the simulator and then npm test as the README's first two commands", () => {
    const commands = [...read('README.md').matchAll(/^```sh\n([^\n]*)/gm)].map((m) => (m[1] as string).replace(/\s+#.*$/, ''));
    expect(commands.slice(0, 2)).toEqual(['npm ci && npm run simulate', 'npm test']);
  });

  it("writes the README's sh blocks in POSIX sh, which a camera's /bin/sh (dash) parses: no bash here-string", () => {
    const blocks = [...read('README.md').matchAll(/^```sh\n([\s\S]*?)^```/gm)].map((m) => m[1] as string);
    expect(blocks.length).toBeGreaterThan(2);
    for (const block of blocks) {
      expect(block).not.toMatch(/<<<|\[\[|\$\(<|&>/);
      const dash = spawnSync(existsSync('/bin/dash') ? '/bin/dash' : 'sh', ['-n'], { input: block, encoding: 'utf8' });
      expect([dash.status, dash.stderr]).toEqual([0, '']);
    }
  });

  it("gives npm test as the README's test command, the one .ci/run runs", () => {
    expect(read('README.md')).toMatch(/^```sh\nnpm test\b/m);
    expect(read('.ci/run')).toMatch(/^npm test\b/m);
  });
});
