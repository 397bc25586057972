import { describe, it, expect } from '@jest/globals';
import { build } from 'esbuild';
import path from 'node:path';
import { parseCommandArgs } from '../../agent/cli/args.js';
import type { CommandModule } from '../../agent/cli/command.js';
import { AgentError } from '../../agent/lib/errors.js';
import { ROOT } from './bundle.js';

const mod: CommandModule = {
  usage: 'demo [--json] [--timeout SECONDS]',
  options: { json: { type: 'boolean' }, timeout: { type: 'string' } },
  run: async () => 0,
};

describe('shared argument parsing', () => {
  it('splits common settings options from the command’s own', () => {
    const { ctx, help } = parseCommandArgs('demo', mod, ['--api-url', 'https://a.example', '--time-scale=60', '--log-level', 'trace', '--json', '--timeout', '5', '--config', 'c.json'], {});
    expect(help).toBe(false);
    expect(ctx.settingsOptions).toEqual({ apiUrl: 'https://a.example', timeScale: '60', logLevel: 'trace', config: 'c.json' });
    expect(ctx.values).toEqual({ json: true, timeout: '5' });
    expect(ctx.json).toBe(true);
  });

  it('every settings flag of the contract is accepted by every command', () => {
    const flags = ['--config', '--api-url', '--token-file', '--firmware-version', '--client-id', '--client-secret-file', '--state-dir', '--runtime-dir', '--profiles-dir', '--host-root', '--time-scale', '--log-level'];
    const { ctx } = parseCommandArgs('demo', mod, flags.flatMap((f) => [f, 'x']), {});
    expect(Object.keys(ctx.settingsOptions)).toHaveLength(flags.length);
  });

  it('unknown options and stray positionals are usage errors (exit 64)', () => {
    for (const args of [['--jsn'], ['extra'], ['--api-url']]) {
      let err: unknown;
      try {
        parseCommandArgs('demo', mod, args, {});
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(AgentError);
      expect((err as AgentError).exitCode).toBe(64);
      expect((err as AgentError).message).toMatch(/^demo: .*; run c2c-agent demo --help$/);
    }
  });

  it('--json is false for commands that do not declare it, and --help is reported', () => {
    const noJson: CommandModule = { usage: 'x', options: {}, run: async () => 0 };
    expect(parseCommandArgs('x', noJson, ['-h'], {})).toMatchObject({ help: true, ctx: { json: false } });
  });
});

describe('startup cost', () => {
  it('the profiles command pulls in neither got nor pino', async () => {
    const result = await build({
      entryPoints: [path.join(ROOT, 'agent/cli/profiles.ts')],
      bundle: true,
      write: false,
      metafile: true,
      platform: 'node',
      format: 'esm',
      logLevel: 'silent',
      outdir: path.join(ROOT, 'dist/metafile-probe'),
    });
    const inputs = Object.keys(result.metafile.inputs);
    expect(inputs.some((i) => i.includes('agent/config/profiles.ts'))).toBe(true);
    expect(inputs.filter((i) => /node_modules\/(got|pino)\//.test(i))).toEqual([]);
  });
});
