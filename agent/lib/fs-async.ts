// The promise form of the node:fs calls the daemon makes from its start and
// while it idles (its dirs, locks, status.json, the queue's recovery, the
// local API's socket, credentials), over node's callback API.
//
// Why not fs.promises: it is a module of its own (node:internal/fs/promises,
// which loads node's readline for FileHandle.readLines), and under the
// unit's node options node compiles it from source at every start: about
// 4 ms before the first heartbeat, and 0.4 MiB of an idle daemon's RSS
// (docs/benchmarks.md, "Start-up"). Code that runs only once a feature is
// used (the upload pipeline's workers) keeps fs.promises.
//
// Same names, arguments, results and errors as fs.promises (node's own
// promisified forms); `open` gives a handle with the FileHandle methods the
// agent uses, on the same file descriptor.
import fs from 'node:fs';
import { promisify } from 'node:util';

export const stat = promisify(fs.stat);
export const lstat = promisify(fs.lstat);
export const mkdir = promisify(fs.mkdir);
export const readdir = promisify(fs.readdir);
export const rename = promisify(fs.rename);
export const rm = promisify(fs.rm);
export const unlink = promisify(fs.unlink);
export const chmod = promisify(fs.chmod);
export const appendFile = promisify(fs.appendFile);
export const truncate = promisify(fs.truncate);
export const statfs = promisify(fs.statfs);

const openFd = promisify(fs.open);
const fstat = promisify(fs.fstat);
const fsync = promisify(fs.fsync);
const fchown = promisify(fs.fchown);
const close = promisify(fs.close);
const readFd = promisify(fs.read);
const writeFd = promisify(fs.writeFile);

/**
 * An open file, as much of fs.promises' FileHandle as the agent uses. As
 * there, a second close() does nothing; any other call after it fails with
 * EBADF rather than reach a descriptor number the process has reused. Unlike
 * there, close() does not wait for a call still running on the handle: each
 * caller awaits its calls one after another and closes last.
 */
export class FileHandle {
  #fd: number;

  constructor(fd: number) {
    this.#fd = fd;
  }

  get fd(): number {
    return this.#fd;
  }

  /** All of `data`, from the current position. */
  async writeFile(data: string | Uint8Array): Promise<void> {
    return writeFd(this.live(), data);
  }

  async read(buffer: Buffer, offset: number, length: number, position: number | null): Promise<{ bytesRead: number; buffer: Buffer }> {
    return readFd(this.live(), buffer, offset, length, position);
  }

  async stat(): Promise<fs.Stats> {
    return fstat(this.live());
  }

  async sync(): Promise<void> {
    return fsync(this.live());
  }

  async chown(uid: number, gid: number): Promise<void> {
    return fchown(this.live(), uid, gid);
  }

  async close(): Promise<void> {
    const fd = this.#fd;
    if (fd === -1) return;
    this.#fd = -1;
    await close(fd);
  }

  private live(): number {
    if (this.#fd === -1) throw Object.assign(new Error('EBADF: bad file descriptor, the file was closed'), { code: 'EBADF', errno: -9 });
    return this.#fd;
  }
}

export async function open(file: string, flags: string | number, mode?: number): Promise<FileHandle> {
  return new FileHandle(await openFd(file, flags, mode));
}
