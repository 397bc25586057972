// The profile's buttons on its input device (the profile's `inputDevice`
// under the host root): each key-down of a key an input names is a press of
// that input, made at the moment the device says, with the time-of-day
// timecode of that moment when the profile gives a rate (press.ts), and put
// in the outbox like a press from the local API. Built only for a profile
// whose inputs have keys (feature.ts).
import path from 'node:path';
import type { FeatureContext } from '../core/feature.js';
import type { DaemonUnit } from '../core/unit.js';
import { InputDeviceReader, type EventLayout, type PressMoment } from './input-device.js';
import type { LoggingHost } from './host.js';
import { makePress, PRESS_KIND, PRESS_PRIORITY } from './press.js';

/** Whether the profile has a key to read: an inputDevice (profiles.ts allows one only with keys). */
export const readsKeys = (profile: FeatureContext['profile']): boolean => profile.inputDevice !== undefined;

export class InputUnit implements DaemonUnit {
  readonly name = 'logging-inputs';
  private reader: InputDeviceReader | undefined;
  private readonly byKey = new Map<number, { channel: string; index: number }>();
  private puts: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly ctx: FeatureContext,
    private readonly host: Pick<LoggingHost, 'put'>,
    /** The record size, when not this process's architecture's (tests). */
    private readonly layout?: EventLayout,
  ) {}

  start(): void {
    const { profile, settings } = this.ctx;
    if (profile.inputDevice === undefined) return;
    for (const c of profile.channels) for (const i of c.inputs ?? []) if (i.key !== undefined) this.byKey.set(i.key, { channel: c.key, index: i.index });
    this.reader = new InputDeviceReader({
      file: path.join(settings.hostRoot, profile.inputDevice),
      ...(this.layout !== undefined && { layout: this.layout }),
      clock: this.ctx.clock,
      logger: this.ctx.logger,
      onKeyDown: (code, at) => this.pressed(code, at),
    });
    this.reader.start();
  }

  async stop(): Promise<void> {
    await this.reader?.stop();
    // A press read before the stop is put before the outbox closes (it stops after the features).
    await this.puts;
  }

  private pressed(code: number, at: PressMoment): void {
    const input = this.byKey.get(code);
    if (input === undefined) return; // a key no input names (another button on the same device)
    const payload = makePress(this.ctx.profile, input.channel, input.index, {}, { mono: at.mono, boot: this.ctx.bootId, wall: at.wall }, 'key');
    this.ctx.logger.info({ channel: input.channel, index: input.index, key: code, timecode: payload.start?.smpte_timecode }, 'button pressed');
    this.puts = Promise.all([
      this.puts,
      this.host.put(PRESS_KIND, payload, PRESS_PRIORITY).catch((err: unknown) => this.ctx.logger.error({ channel: input.channel, index: input.index, err: err instanceof Error ? err.message : String(err) }, 'a press from the input device could not be queued; it is lost')),
    ]);
  }
}
