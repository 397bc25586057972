// Entry point of dist/c2c-agent.mjs: picks the command, loads only its
// module, parses its arguments strictly and maps the outcome to an exit code
// (docs/commands.md, "Exit codes (sysexits)"). The exit code goes to process.exitCode, never
// process.exit(), so pending stdout writes reach a pipe before node exits.
//
// Only version.ts, output.ts, process-main.ts and lib/errors.ts (no dependencies) are loaded statically: the
// Node.js version check must run before any code that an older Node cannot
// run, and --version / --help are answered without paying for the argument
// parser, settings and semver. Everything else comes by dynamic import
// (esbuild keeps such modules lazy inside the one bundle file).
import { EXIT_MEANINGS, usageError } from '../lib/errors.js';
import { adviseForTokenFromEnvironment, printJson, printLine, stdout } from './output.js';
import { runMain } from './process-main.js';
import { agentVersion } from './version.js';

const exitCodes = Object.entries(EXIT_MEANINGS).map(([code, meaning]) => `${code} ${meaning}`).join(', ');

const TOP_LEVEL = new Set(['--version', '-V', '--help', '-h', 'help']);


async function main(argv: string[]): Promise<number> {
  // `--json` promises one JSON object wherever it stands, so it may come
  // before or after the top-level --version / --help.
  const json = argv.includes('--json');
  const [name, ...rest] = json && TOP_LEVEL.has(argv.find((a) => a !== '--json') ?? '') ? argv.filter((a) => a !== '--json') : argv;
  if (name === '--version' || name === '-V') {
    if (json) printJson({ ok: true, exitCode: 0, version: agentVersion() });
    else printLine(agentVersion());
    return 0;
  }
  if (name === '--help' || name === '-h' || name === 'help') {
    // Every command's module is loaded for this one answer: its usage and summary come from there, never restated.
    const [{ COMMANDS }, { topLevelHelp, helpWidth, HELP_WIDTH_OFF_TERMINAL }] = await Promise.all([import('./commands.js'), import('./command-help.js')]);
    const commands = await Promise.all(Object.entries(COMMANDS).map(async ([n, load]) => [n, await load()] as const));
    const list = commands.map(([n, m]) => [n, m] as [string, (typeof commands)[number][1]]);
    if (json) {
      const usage = topLevelHelp(list, exitCodes, HELP_WIDTH_OFF_TERMINAL).join('\n');
      printJson({ ok: true, exitCode: 0, usage, commands: commands.map(([n, m]) => ({ name: n, usage: `c2c-agent ${m.usage}`, summary: m.summary })) });
    } else printLine(...topLevelHelp(list, exitCodes, helpWidth(stdout())));
    return 0;
  }
  const { COMMANDS } = await import('./commands.js');
  if (name === undefined) throw usageError('missing command; run c2c-agent --help');
  if (name.startsWith('-')) {
    // `--stauts` may be a command given as an option, `--verison` a top-level option mistyped.
    const { nearMiss } = await import('../lib/near-miss.js');
    const near = nearMiss(name, Object.keys(COMMANDS)) ?? nearMiss(name, [...TOP_LEVEL].filter((o) => o.startsWith('--')));
    throw usageError(`unknown option '${name}' (the command comes first${near === undefined ? '' : `; did you mean c2c-agent ${near}?`}); run c2c-agent --help`);
  }
  const load = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (load === undefined) {
    const { didYouMean } = await import('../lib/near-miss.js');
    throw usageError(`unknown command '${name}'${didYouMean(name, Object.keys(COMMANDS))}; run c2c-agent --help`);
  }
  const [mod, { parseCommandArgs, commonOptionsHelp }] = await Promise.all([load(), import('./args.js')]);
  const { ctx, help } = parseCommandArgs(name, mod, rest, process.env);
  // C2C_TOKEN wins over pairing: advice to pair cannot help then (lib/advice.ts).
  adviseForTokenFromEnvironment(ctx.env.C2C_TOKEN !== undefined && ctx.env.C2C_TOKEN !== '');
  if (help) {
    // --json promises exactly one JSON object on stdout, help included.
    const { commandHelp, commandHelpJson, helpWidth } = await import('./command-help.js');
    if (ctx.json) printJson({ ok: true, exitCode: 0, usage: `c2c-agent ${mod.usage}`, ...commandHelpJson(mod), ...(mod.help && { help: mod.help }), settingsOptions: commonOptionsHelp() });
    else printLine(...commandHelp(name, mod, helpWidth(stdout())));
    return 0;
  }
  return mod.run(ctx);
}

runMain(main);
