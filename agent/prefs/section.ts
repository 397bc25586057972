// The status document's `prefs` section: what the camera's UI set through PATCH /v1/prefs.
import { bool, obj, type ShapeOf } from '../core/shape.js';

export const prefsSection = obj({ autoUpload: bool });
export type PrefsSection = ShapeOf<typeof prefsSection>;

declare module '../core/status-document.js' {
  interface StatusSections {
    prefs: PrefsSection;
  }
}
