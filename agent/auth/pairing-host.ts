// The pairing feature's one unit at start (feature.ts): it holds the flow
// (daemon-pairing.ts) once the first pairing route loaded it
// (pairing-load.ts), starting it and stopping it with the daemon. Until then
// it does nothing at all.
import type { FeatureContext, FeatureParts } from '../core/feature.js';
import type { DaemonUnit } from '../core/unit.js';

export class PairingHost implements DaemonUnit {
  readonly name = 'pairing';
  private running = false;
  private flowUnit: DaemonUnit | undefined;

  start(): void {
    this.running = true;
    this.flowUnit?.start();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.flowUnit?.stop();
  }

  /** The flow's unit, loaded by the first pairing route: started now if the daemon runs. */
  adopt<U extends DaemonUnit>(unit: U): U {
    if (this.flowUnit !== undefined) throw new Error('pairing: the flow was loaded twice');
    this.flowUnit = unit;
    if (this.running) unit.start();
    return unit;
  }
}

export function buildPairingHost(ctx: FeatureContext): FeatureParts {
  const host = new PairingHost();
  ctx.services.provide('pairing', host);
  return { units: [host] };
}
