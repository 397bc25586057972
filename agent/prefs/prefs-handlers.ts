// GET and PATCH /v1/prefs: the daemon's preferences (prefs-store.ts).
import { fsError } from '../lib/fs-errors.js';
import { apiErrorOf, badRequest, type HandlerMap } from '../core/routes.js';
import { PrefsError, type PrefsStore } from './prefs-store.js';

export function registerPrefsHandlers(routes: HandlerMap, store: PrefsStore): void {
  routes.add('GET', '/v1/prefs', 'read', () => ({ status: 200, body: store.prefs() }));
  routes.add('PATCH', '/v1/prefs', 'write', async (req) => {
    try {
      return { status: 200, body: await store.update(req.body) };
    } catch (err) {
      if (err instanceof PrefsError) throw badRequest(err.message);
      // Nothing changed: the old value stays in effect; say why the file system refused, with its kind
      // (a full card is disk, 507; a read-only or misplaced state dir is config, 409), as every command would.
      throw apiErrorOf(fsError(err, 'write the preferences', store.file));
    }
  });
}
