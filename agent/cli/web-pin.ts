// `c2c-agent web-pin`: the PIN of the camera's web page (docs/web-page.md),
// read from `<state-dir>/web-pin`, where the daemon made it the first time
// the page started. The PIN alone on stdout (a camera's own UI may run this
// and show what it prints); where to open the page on stderr. Needs the
// state dir: the agent's user or root. No --json: the PIN is a secret, and
// --json output never carries one (docs/commands.md).
import { loadSettings } from '../config/settings.js';
import { AgentError, configError, EXIT } from '../lib/errors.js';
import { pageUrls } from '../web/addresses.js';
import { readWebPin, webPinFileOf } from '../web/pin.js';
import type { CommandContext, CommandOptions } from './command.js';
import { fail, stderr, stdout } from './output.js';

export const usage = 'web-pin';
export const options = {} satisfies CommandOptions;
export const summary = "Prints the PIN of the camera's web page (webListen), and where to open the page.";
export const needsAlso = ["the agent's state dir (run it as the agent's user, or root), where the daemon keeps the PIN once the page has started"];
export const help = [
  'The PIN alone on stdout; the page\'s addresses on stderr. Whoever knows the PIN can use the page: show it only to the people on set.',
  'The daemon makes the PIN the first time it starts with webListen set. Exit 78 when the page is off and has no PIN; 69 when it is on but the daemon has not made one yet.',
];

export async function run(ctx: CommandContext): Promise<number> {
  try {
    const settings = loadSettings(ctx.settingsOptions, ctx.env, { requireApiUrl: false });
    const pin = await readWebPin(settings.stateDir);
    if (pin === undefined) {
      if (settings.web === undefined) throw configError(`the web page is off, so it has no PIN: set webListen (--web-listen HOST:PORT, C2C_WEB_LISTEN, or key webListen in ${settings.configFile}) and restart the agent`, 'webListen');
      throw new AgentError('unavailable', `the web page has no PIN yet (${webPinFileOf(settings.stateDir)}): the daemon makes it when it starts with webListen set; ${settings.startAdvice}`);
    }
    // Not through printLine, which cuts registered secrets out: this line is the one place the PIN is meant to be shown.
    stdout().write(`${pin}\n`);
    if (settings.web === undefined) stderr().write('the web page is off (webListen is not set): this PIN works once it is on again\n');
    else stderr().write(`open ${pageUrls(settings.web).join(' or ')} on a phone on the same network, and type the PIN\n`);
    return EXIT.ok;
  } catch (err) {
    return fail(err);
  }
}
