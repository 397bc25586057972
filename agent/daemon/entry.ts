// Entry point of dist/c2c-agentd-main.cjs, the daemon systemd's ExecStart runs
// (through dist/c2c-agentd.cjs, boot.ts, its loader):
// `run` and its options, nothing else (every other command is
// dist/c2c-agent.mjs, the c2c-agent command, which runs `run` the same way).
// A CommonJS file of its own because Node 20 loads its ES module loader for
// an .mjs entry (1.9 MiB of an idle daemon's RSS, and start-up time), and
// because the daemon's idle code in it is plain text: no pack to expand, so
// neither zlib nor brotli's dictionary at start. The features' code an idle
// camera does not run stays in compressed packs (scripts/build-cold-code.mjs),
// expanded by its dynamic import. docs/benchmarks.md has the figures.
import { usageError } from '../lib/errors.js';
import { adviseForTokenFromEnvironment, printLine, stdout } from '../cli/output.js';
import { runMain } from '../cli/process-main.js';
import { agentVersion } from '../cli/version.js';

async function daemonMain(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === '--version' || name === '-V') {
    printLine(agentVersion());
    return 0;
  }
  if (name !== 'run') throw usageError(`this file runs the daemon ('run') only; every other command is the c2c-agent command (dist/c2c-agent.mjs)`);
  const [mod, { parseCommandArgs }] = await Promise.all([import('../cli/run.js'), import('../cli/args.js')]);
  const { ctx, help } = parseCommandArgs('run', mod, rest, process.env);
  adviseForTokenFromEnvironment(ctx.env.C2C_TOKEN !== undefined && ctx.env.C2C_TOKEN !== '');
  if (help) {
    const { commandHelp, helpWidth } = await import('../cli/command-help.js');
    printLine(...commandHelp('run', mod, helpWidth(stdout())));
    return 0;
  }
  return mod.run(ctx);
}

runMain(daemonMain);
