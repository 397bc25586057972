// The uploads feature at idle (feature.ts): what a camera with no clip in
// sight runs. It keeps the media watcher and the upload window (when set)
// running, answers the uploads section (nothing left, nothing sent, what is
// skipped or blocked), and loads the upload pipeline (pipeline.ts: the
// queueing, the index, hand-backs, by hand) on the first use: a clip the
// watcher reports (the event kept and handed over once it is loaded), an
// upload item in the queue or a request in incoming/ at start, a call of an
// upload route, the first upload item's worker. From then on the pipeline's
// unit (uploads-unit.ts) hears the bus itself and this one defers to it.
import * as fs from '../lib/fs-async.js';
import path from 'node:path';
import type { FeatureContext } from '../core/feature.js';
import type { StatusSections } from '../core/status-document.js';
import { startUnit, stopUnit, type DaemonUnit } from '../core/unit.js';
import type { UploadWindow } from './upload-window.js';
import { REALTIME_KIND, UPLOAD_KIND } from './kinds.js';
import type { SkippedView } from './media-watcher.js';
import type { UploadsPipeline } from './pipeline.js';
import type { UploadBlock } from './section.js';
import { uploadFigures } from './upload-figures.js';
import { INCOMING_DIR } from './upload-request.js';
import { uploadProgress } from './upload-summary.js';
import type { UploadsUnit } from './uploads-unit.js';

export interface UploadsIdleDeps {
  ctx: Pick<FeatureContext, 'bus' | 'outbox' | 'logger' | 'paths' | 'services'>;
  watcher?: { start(): void; stop(): void; skipped?(): SkippedView; missingDir?(): string | undefined };
  window?: UploadWindow;
  /** What keeps uploads from going (upload-blocks.ts). */
  blocked: () => UploadBlock[];
  /** Builds the pipeline (a dynamic import of pipeline.ts). */
  load: () => Promise<UploadsPipeline>;
}

export class UploadsIdle implements DaemonUnit {
  readonly name = 'uploads';
  private running = false;
  private loading: Promise<UploadsPipeline> | undefined;
  private unit: UploadsUnit | undefined;
  /** What the watcher reported before the pipeline was here, handed to it once it is. */
  private readonly early: Array<(u: UploadsUnit) => void> = [];
  private looked: Promise<void> = Promise.resolve();

  constructor(private readonly d: UploadsIdleDeps) {}

  start(): void {
    this.running = true;
    const { bus, logger } = this.d.ctx;
    bus.on('mediaFileReady', this, ({ file }) => this.wake((u) => u.fileReady(file)));
    bus.on('mediaFileGrowing', this, ({ file }) => this.wake((u) => u.fileGrowing(file)));
    void this.d.window?.start().catch((err: unknown) => logger.error({ err: String(err) }, 'cannot start the upload window; uploads run at any time'));
    this.d.watcher?.start();
    this.looked = this.lookForWork();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.d.ctx.bus.removeListeners(this);
    await this.looked;
    await this.loading?.catch(() => undefined);
    if (this.unit !== undefined) await stopUnit(this.d.ctx.bus, this.unit);
    this.d.watcher?.stop();
    this.d.window?.stop();
  }

  /** The pipeline, loaded now if it was not yet (and started while the daemon runs). */
  pipeline(): Promise<UploadsPipeline> {
    this.loading ??= this.d.load().then(
      async (p) => {
        if (this.running) {
          this.unit = p.unit;
          startUnit(this.d.ctx.bus, p.unit);
          for (const give of this.early.splice(0)) give(p.unit);
          // The workers and the routes use the index: theirs once it was read.
          await p.unit.loaded();
        }
        return p;
      },
      (err: unknown) => {
        this.loading = undefined;
        this.d.ctx.logger.error({ err: err instanceof Error ? err.message : String(err) }, 'cannot load the upload pipeline; clips wait until it loads');
        throw err;
      },
    );
    return this.loading;
  }

  /** A clip before the pipeline is here: kept for it, and the pipeline loaded. Once it is here it hears the bus itself. */
  private wake(give: (u: UploadsUnit) => void): void {
    if (this.unit !== undefined) return;
    this.early.push(give);
    this.pipeline().catch(() => undefined);
  }

  /** Work left from before (an upload item in the queue, a request in incoming/): the pipeline loads at once. */
  private async lookForWork(): Promise<void> {
    const { outbox, paths } = this.d.ctx;
    const queued = (await outbox.ready()) && outbox.items().some((i) => i.kind === UPLOAD_KIND || i.kind === REALTIME_KIND);
    const requests = queued ? [] : await fs.readdir(path.join(paths.queue, INCOMING_DIR)).catch(() => [] as string[]);
    if (this.running && (queued || requests.some((n) => n.endsWith('.json')))) await this.pipeline().catch(() => undefined);
  }

  /** Media-dir finds held back while autoUpload is off (the pipeline's). */
  get heldCount(): number {
    return this.unit?.heldCount ?? 0;
  }

  /** The upload rate (0 before the pipeline is here: nothing was sent). */
  bytesPerSecond(): number {
    return this.unit?.bytesPerSecond() ?? 0;
  }

  report(): Pick<Partial<StatusSections>, 'uploads'> {
    return this.unit?.report() ?? { uploads: this.figures() };
  }

  statusText(): string | undefined {
    return this.unit !== undefined ? this.unit.statusText() : uploadProgress(this.figures());
  }

  private figures(): ReturnType<typeof uploadFigures> {
    const { watcher } = this.d;
    return uploadFigures({ outbox: this.d.ctx.outbox, ...(watcher && { watcher }), recordings: () => this.d.ctx.services.get('recordings')?.recordings() ?? [], blocked: this.d.blocked }, 0);
  }
}
