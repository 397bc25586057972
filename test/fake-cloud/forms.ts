// OAuth form bodies: multipart/form-data (busboy) or
// application/x-www-form-urlencoded (URLSearchParams). Anything else,
// including JSON, is not a form: the OAuth endpoints answer invalid_request.
import busboy from 'busboy';

export type Form = Record<string, string>;

export function parseForm(contentType: string | undefined, body: Buffer): Promise<Form | undefined> {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === 'application/x-www-form-urlencoded') {
    const out: Form = {};
    for (const [k, v] of new URLSearchParams(body.toString('utf8'))) out[k] = v;
    return Promise.resolve(out);
  }
  if (type !== 'multipart/form-data') return Promise.resolve(undefined);
  return new Promise((resolve) => {
    let bb: busboy.Busboy;
    try {
      bb = busboy({ headers: { 'content-type': contentType! }, limits: { fieldSize: 64 * 1024, fileSize: 64 * 1024 } });
    } catch {
      // Missing or malformed boundary.
      resolve(undefined);
      return;
    }
    const out: Form = {};
    let bad = false;
    bb.on('field', (name, value, info) => {
      if (info.valueTruncated) bad = true;
      out[name] = value;
    });
    // A form field sent as a file part (some clients do for every part) still counts.
    bb.on('file', (name, stream) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => (out[name] = Buffer.concat(chunks).toString('utf8')));
    });
    bb.on('error', () => resolve(undefined));
    bb.on('close', () => resolve(bad ? undefined : out));
    bb.end(body);
  });
}
