// The asset's MIME type from the file name: mrmime's table, the extension
// with its dot for the service, and application/octet-stream for whatever
// the table does not know.
import { describe, expect, test } from '@jest/globals';
import { mimes } from 'mrmime';
import { FALLBACK_FILETYPE, fileTypeOf } from '../../agent/uploads/file-type.js';

describe('fileTypeOf', () => {
  test.each([
    ['A001C002.mp4', 'video/mp4', '.mp4'],
    ['SOUND_01.wav', 'audio/wav', '.wav'],
    ['CLIP.MOV', 'video/quicktime', '.MOV'],
    ['/media/card/video/take.2.mxf', 'application/mxf', '.mxf'],
    ['still.jpg', 'image/jpeg', '.jpg'],
    ['notes.json', 'application/json', '.json'],
  ])('%s is %s', (name, filetype, extension) => {
    expect(fileTypeOf(name)).toEqual({ filetype, extension });
  });

  test('an extension nobody knows is application/octet-stream, the extension kept', () => {
    expect(fileTypeOf('A001_C002.braw')).toEqual({ filetype: FALLBACK_FILETYPE, extension: '.braw' });
    expect(FALLBACK_FILETYPE).toBe('application/octet-stream');
  });

  test('a name without an extension is application/octet-stream with none', () => {
    for (const name of ['README', 'mp4', '.mp4', 'trailing.', 'dir.mp4/clip']) expect(fileTypeOf(name)).toEqual({ filetype: FALLBACK_FILETYPE });
  });

  test('every type the table can give is a MIME token the service accepts', () => {
    const token = /^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*$/i;
    for (const [ext, type] of Object.entries(mimes)) expect(`${ext} ${fileTypeOf(`x.${ext}`).filetype}`).toBe(`${ext} ${type}`);
    for (const type of new Set(Object.values(mimes))) expect(type).toMatch(token);
  });
});
