// The status file's writer: newest wins, and a document given as the function
// that makes it is made when its write begins, once for a burst, so the state
// change that asked for it (the start's first heartbeat) goes on first.
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { FileSink } from '../../agent/daemon/runtime/file-sink.js';
import { suiteTempDirs } from '../support/temp-dirs.js';

describe('FileSink', () => {
  const tmp = suiteTempDirs('c2c-sink-');

  it('makes a document given as a function when its write begins, not when it is given, and once for a burst', async () => {
    const file = path.join(tmp(), 'run', 'status.json');
    const sink = new FileSink<{ n: number }>(file);
    const made: number[] = [];
    const doc = (n: number) => (): { n: number } => {
      made.push(n);
      return { n };
    };
    sink.write(doc(1));
    expect(made).toEqual([]);
    // The first write is under way (its directory made); the next two coalesce: only the newest is made.
    sink.write(doc(2));
    sink.write(doc(3));
    expect(made).toEqual([]);
    await sink.flush();
    expect(made).toEqual([1, 3]);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ n: 3 });
  });

  it('writes nothing for a function that makes no document, and a plain value as given', async () => {
    const file = path.join(tmp(), 'status.json');
    const sink = new FileSink<{ n: number }>(file);
    sink.write({ n: 7 });
    await sink.flush();
    sink.write(() => undefined);
    await sink.flush();
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ n: 7 });
  });
});
