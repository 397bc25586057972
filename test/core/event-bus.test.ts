// The daemon's event bus: typed events delivered in registration order, an
// owner's listeners removed together, a throwing listener logged and skipped.
import { describe, expect, it } from '@jest/globals';
import { EventBus } from '../../agent/core/event-bus.js';
import { createLogger } from '../../agent/lib/logger.js';

describe('EventBus', () => {
  it('delivers to every listener in registration order, and only for its event', () => {
    const bus = new EventBus();
    const seen: string[] = [];
    const a = {};
    const b = {};
    bus.on('bytesSent', a, ({ bytes }) => void seen.push(`a${bytes}`));
    bus.on('bytesSent', b, ({ bytes }) => void seen.push(`b${bytes}`));
    bus.on('statusChanged', a, () => void seen.push('status'));
    bus.emit('bytesSent', { bytes: 5 });
    expect(seen).toEqual(['a5', 'b5']);
  });

  it("removeListeners(owner) drops all of that owner's listeners and nobody else's", () => {
    const bus = new EventBus();
    const seen: string[] = [];
    const a = {};
    const b = {};
    bus.on('bytesSent', a, () => void seen.push('a'));
    bus.on('statusChanged', a, () => void seen.push('a-status'));
    bus.on('bytesSent', b, () => void seen.push('b'));
    bus.removeListeners(a);
    bus.emit('bytesSent', { bytes: 1 });
    bus.emit('statusChanged', {});
    expect(seen).toEqual(['b']);
    bus.removeListeners(b);
    expect(bus.listenerCount()).toBe(0);
  });

  it('a listener that throws is logged and skipped; the producer and the others carry on', () => {
    const lines: Array<Record<string, unknown>> = [];
    const bus = new EventBus(createLogger('info', { write: (l: string) => void lines.push(JSON.parse(l) as Record<string, unknown>) }));
    const seen: string[] = [];
    bus.on('tokensRejected', {}, () => {
      throw new Error('boom');
    });
    bus.on('tokensRejected', {}, ({ reason }) => void seen.push(reason));
    expect(() => bus.emit('tokensRejected', { reason: 'refused' })).not.toThrow();
    expect(seen).toEqual(['refused']);
    expect(lines.map((l) => [l.event, l.err])).toEqual([['tokensRejected', 'boom']]);
  });

  it('a listener may remove itself while the event is delivered', () => {
    const bus = new EventBus();
    const seen: string[] = [];
    const once = {};
    bus.on('outboxSettled', once, () => {
      seen.push('once');
      bus.removeListeners(once);
    });
    bus.on('outboxSettled', {}, () => void seen.push('always'));
    bus.emit('outboxSettled', {});
    bus.emit('outboxSettled', {});
    expect(seen).toEqual(['once', 'always', 'always']);
  });
});
