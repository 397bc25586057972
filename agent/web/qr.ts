// The QR code of the pairing link, drawn on the camera as SVG (uqr, the
// pairing screen's encoder): the page shows it as an image from the camera
// itself, so a phone on a set with no internet still gets it, and no link
// leaves the camera for a QR service.
import { encode } from 'uqr';

/** The longest text drawn: a verification link with its code is well under it. */
export const QR_MAX_TEXT = 1024;

/** An SVG of `text`'s QR code (dark modules as one path, a quiet zone of 4), or undefined when it does not fit in a QR code. */
export function qrSvg(text: string): string | undefined {
  let data: boolean[][];
  try {
    data = encode(text, { ecc: 'M', border: 4 }).data;
  } catch {
    return undefined;
  }
  const size = data.length;
  let d = '';
  for (let y = 0; y < size; y++) {
    const row = data[y]!;
    for (let x = 0; x < size; x++) {
      if (!row[x]) continue;
      // A run of dark modules as one rectangle.
      let w = 1;
      while (x + w < size && row[x + w]) w++;
      d += `M${x} ${y}h${w}v1h-${w}z`;
      x += w - 1;
    }
  }
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${size} ${size}" shape-rendering="crispEdges"><rect width="${size}" height="${size}" fill="#fff"/><path fill="#000" d="${d}"/></svg>`;
}
