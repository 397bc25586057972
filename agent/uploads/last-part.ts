// The moment an upload can no longer be called back. The service completes
// an asset when its last part arrives (docs/uploads.md, "One version per
// upload" and "How it goes"): once the final bytes of that part are handed
// to the request, aborting it takes nothing back, since storage may hold
// them all and complete the asset while the socket is torn down. So a cancel that comes before that moment keeps those
// bytes from going (the asset stays unfinished, the upload is cancelled);
// one that comes after waits for storage's answer and says what happened:
// completed despite the cancel (COMPLETED_DESPITE_CANCEL) when storage took
// the part, cancelled when it did not.
//
// Each side asks in one synchronous call (seal, stop): JavaScript runs one
// at a time, so no cancel falls between the worker's look and its bytes.

/** One per daemon, shared by the two upload workers and the uploads unit. */
export class LastParts {
  /** Attempts whose last bytes are on their way: storage's answer (true: it took them). */
  private readonly sealed = new Map<string, Promise<boolean>>();
  /** Items a cancel was asked for: no last bytes of theirs may go from now on. */
  private readonly stopped = new Set<string>();
  /** Items a cancel came for while their last bytes were on their way. */
  private readonly late = new Set<string>();

  /**
   * The worker, right before it hands over the bytes that complete the
   * asset; `answer` settles once storage answered that part. False when a
   * cancel came first: the bytes must not go.
   */
  seal(id: string, answer: Promise<boolean>): boolean {
    if (this.stopped.has(id)) return false;
    this.sealed.set(id, answer);
    return true;
  }

  /** The worker, when its attempt ends: whether a cancel came while its last bytes were on their way. */
  release(id: string): boolean {
    this.sealed.delete(id);
    return this.late.delete(id);
  }

  /**
   * The canceller: from now on no last bytes of `id` go. Storage's answer
   * for the last bytes already on their way, if any.
   */
  stop(id: string): Promise<boolean> | undefined {
    this.stopped.add(id);
    const answer = this.sealed.get(id);
    if (answer !== undefined) this.late.add(id);
    return answer;
  }

  /** The canceller, once its cancel is settled (the item ended one way or the other). */
  forget(id: string): void {
    this.stopped.delete(id);
  }
}
