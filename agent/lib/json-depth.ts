// How deep JSON text nests its arrays and objects, read without parsing it:
// the one scan for both JSON readers that bound depth (api/json-body.ts, the
// service's answers; localapi/body.ts, the local API's request bodies), so a
// depth too great is known before JSON.parse spends memory on it.

/** JSON's structural characters, as char codes (api/json-body.ts's reader uses them too). */
export const QUOTE = 0x22; // "
export const BACKSLASH = 0x5c; // \
export const OPEN_BRACKET = 0x5b; // [
export const CLOSE_BRACKET = 0x5d; // ]
export const OPEN_BRACE = 0x7b; // {
export const CLOSE_BRACE = 0x7d; // }

/** The deepest nesting of arrays and objects in JSON text (brackets inside strings not counted); stops counting past `max`. */
export function nestingDepth(text: string, max: number): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_BRACKET || c === OPEN_BRACE) {
      depth++;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > max) return deepest;
      }
    } else if (c === CLOSE_BRACKET || c === CLOSE_BRACE) depth--;
  }
  return deepest;
}
