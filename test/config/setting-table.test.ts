// One table of settings (agent/config/setting-table.ts) behind the parser,
// `--help` and docs/configuration.md: the page's settings table is the
// table's own rendering, and `c2c-agent --help` names every option and
// variable the page lists. Run with UPDATE_DOCS=1 (or its old name,
// UPDATE_README=1) to rewrite the page's table after changing a row.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { settingsMarkdownTable } from '../../agent/config/setting-table.js';
import { buildBundle, ROOT, type Bundle } from '../cli/bundle.js';

const PAGE = path.join(ROOT, 'docs', 'configuration.md');
const START = '<!-- settings-table: generated from agent/config/setting-table.ts -->';
const END = '<!-- /settings-table -->';

function pageTable(): { text: string; table: string } {
  const text = readFileSync(PAGE, 'utf8');
  const a = text.indexOf(START);
  const b = text.indexOf(END);
  if (a < 0 || b < a) throw new Error(`docs/configuration.md has no ${START} ... ${END} block`);
  return { text, table: text.slice(a + START.length, b).trim() };
}

describe('the settings table', () => {
  let bundle: Bundle;
  beforeAll(async () => {
    bundle = await buildBundle();
  });
  afterAll(() => bundle.cleanup());

  it("docs/configuration.md's settings table is the table's own rendering", () => {
    const { text, table } = pageTable();
    const want = settingsMarkdownTable();
    const update = process.env.UPDATE_DOCS === '1' || process.env.UPDATE_README === '1';
    if (update && table !== want) {
      writeFileSync(PAGE, text.replace(`${START}\n${table}\n${END}`, `${START}\n${want}\n${END}`));
      return;
    }
    expect(table).toBe(want);
  });

  it('`c2c-agent --help` lists every option and environment variable docs/configuration.md lists', () => {
    const { table } = pageTable();
    const names = [...table.matchAll(/`(--[a-z-]+|C2C_[A-Z_]+)[^`]*`/g)].map((m) => m[1] as string);
    expect(names.length).toBeGreaterThan(15);
    const r = bundle.run(['--help']);
    expect(r.status).toBe(0);
    const missing = [...new Set(names)].filter((n) => !r.stdout.includes(n) && n !== 'C2C_TOKEN');
    expect(missing).toEqual([]);
  });
});
