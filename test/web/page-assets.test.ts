// The page the server answers with is the page in agent/web/page/, built
// (scripts/gen-web-page.mjs): a change to the page without the build fails here.
import { describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { PAGE_CSS, PAGE_HTML, PAGE_JS } from '../../agent/web/page-assets.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

describe('the page assets', () => {
  it('agent/web/page-assets.ts is built from agent/web/page/ (regenerate with node scripts/gen-web-page.mjs)', () => {
    const r = spawnSync(process.execPath, [path.join(ROOT, 'scripts/gen-web-page.mjs'), '--check'], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  it('the page names what a person and a screen reader find: PIN, Sign in, Pair this camera, Cancel pairing, Auto-upload, Cancel all', () => {
    expect(PAGE_HTML).toContain('<label for="pin">PIN</label>');
    expect(PAGE_HTML).toContain('>Sign in</button>');
    expect(PAGE_HTML).toContain('>Pair this camera</button>');
    expect(PAGE_HTML).toContain('>Cancel pairing</button>');
    expect(PAGE_HTML).toContain('<span>Auto-upload</span>');
    expect(PAGE_HTML).toContain('>Cancel all</button>');
    expect(PAGE_JS).toContain('Cancel ${');
  });

  it('nothing from the internet: no link, font or script from another host', () => {
    for (const text of [PAGE_HTML, PAGE_CSS, PAGE_JS]) expect(text).not.toMatch(/(?:src|href)=["']?(?:https?:)?\/\//i);
    expect(PAGE_CSS).not.toMatch(/@import|url\(/);
  });
});
