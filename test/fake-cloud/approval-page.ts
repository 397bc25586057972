// The person's side of pairing, as the fake has it: the verification link a
// camera shows (`/pair`, `/pair?user_code=015869`) opens a small HTML page
// with the code and an Approve button, a plain form POST back to `/pair`
// that approves the code, as the person would in the service's app. One
// page, no script, no external asset. A code typed as a camera shows it
// (`015 869`, `015-869`) is the same code.
import type { Reply } from './http.js';
import { header } from './http.js';
import { parseForm } from './forms.js';
import type { Pairing } from './pairing.js';
import type { Router } from './router.js';

export const PAIR_PAGE_PATH = '/pair';

const HTML_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  // Nothing but this page's own inline style, and forms back to the fake.
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
};

const STYLE = 'body{font:1.1rem/1.5 system-ui,sans-serif;max-width:32rem;margin:2rem auto;padding:0 1rem}' +
  'input{font:inherit;letter-spacing:.1em;width:8em}button{font:inherit;padding:.2em 1em}.ok{color:#075e00}.no{color:#a00000}';

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** "015869" as a camera shows it, "015 869"; anything else as typed. */
function grouped(code: string): string {
  return /^\d{6}$/.test(code) ? `${code.slice(0, 3)} ${code.slice(3)}` : code;
}

function page(status: number, message: string, code: string): Reply {
  const body = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Approve a camera - fake cloud</title><style>${STYLE}</style></head>
<body>
<h1>Approve a camera</h1>
<p>The fake cloud stands in for the media review service: approving a code here is what a person does in the service's app.</p>
${message}
<form method="post" action="${PAIR_PAGE_PATH}">
<label for="user_code">Pairing code</label>
<input id="user_code" name="user_code" value="${escapeHtml(grouped(code))}" inputmode="numeric" autocomplete="off" required>
<button type="submit">Approve</button>
</form>
</body>
</html>
`;
  return { status, headers: { ...HTML_HEADERS }, body };
}

export function approvalPageRoutes(router: Router, pairing: Pairing): void {
  router
    .add({
      method: 'GET',
      pattern: PAIR_PAGE_PATH,
      auth: 'public',
      handler: (ctx) => {
        const code = new URLSearchParams(ctx.query).get('user_code') ?? '';
        return page(200, code === '' ? '<p>Type the code the camera shows.</p>' : '<p>The camera shows this code: approve it to pair the camera.</p>', code);
      },
    })
    .add({
      method: 'POST',
      pattern: PAIR_PAGE_PATH,
      auth: 'public',
      handler: async (ctx) => {
        const form = await parseForm(header(ctx.req, 'content-type'), ctx.body);
        const code = (form?.user_code ?? '').trim();
        if (code === '') return page(400, '<p class="no">Type the code the camera shows.</p>', '');
        if (!pairing.approve(code)) {
          return page(404, `<p class="no">No camera is waiting with the code ${escapeHtml(grouped(code))}: it is unknown, expired or already used. Start pairing on the camera again for a new code.</p>`, code);
        }
        return page(200, `<p class="ok">Approved: ${escapeHtml(grouped(code))}. The camera receives its tokens at its next poll.</p>`, '');
      },
    });
}
