import { AgentError } from '../../agent/lib/errors.js';

/** The AgentError a call rejects with; anything else (or success) fails the test. */
export async function failure(p: Promise<unknown>): Promise<AgentError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof AgentError) return err;
    throw err;
  }
  throw new Error('expected the call to fail');
}
