/** `platform login <url>` and `platform logout`: the credential kept for later commands (config.ts). */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { removeLogin, writeLogin, type LoginConfig } from '../config.js';
import { API, apiFor, loginConnection, serverUrl } from '../connection.js';
import type { CommandContext } from '../context.js';
import { CliError, usage } from '../errors.js';

interface LoginOptions {
  accessKey?: string;
  certificateAuthority?: string;
  insecureSkipTlsVerify?: boolean;
}

export function addLoginCommands(program: Command, ctx: CommandContext): void {
  program
    .command('login')
    .description('Log in to a server with an access key, kept in a file only you can read')
    .argument('<url>', "the server's URL, e.g. https://platform.example.com")
    .option(
      '--access-key <key>',
      'the access key (pak_...; given here, other users of this machine see it while the command runs); "-" reads it from stdin; default: $PLATFORM_ACCESS_KEY',
    )
    .option('--certificate-authority <file>', "a PEM file of the CA that signed the server's certificate")
    .option('--insecure-skip-tls-verify', "do not check the server's certificate (never in production)")
    .addHelpText(
      'after',
      `
Examples:
  printf %s "$KEY" | platform login https://platform.example.com --access-key -
  PLATFORM_ACCESS_KEY="$KEY" platform login https://platform.example.com --certificate-authority ca.pem`,
    )
    .action(async (url: string, opts: LoginOptions) => {
      const login: LoginConfig = {
        server: serverUrl(url, "the server's URL"),
        accessKey: await accessKeyOf(opts, ctx),
      };
      if (opts.certificateAuthority) login.certificateAuthorityData = readCa(opts.certificateAuthority);
      if (opts.insecureSkipTlsVerify) login.insecureSkipTlsVerify = true;
      // Asked once before it is kept: a key the server refuses is not written down.
      const api = apiFor(loginConnection(login), ctx.flags(), (line) => ctx.stderr(`${line}\n`));
      await api.request('GET', API);
      const path = writeLogin(ctx.env, login);
      ctx.stdout(`Logged in to ${login.server}; the key is kept in ${path}\n`);
    });

  program
    .command('logout')
    .description('Forget the credential `platform login` kept')
    .addHelpText('after', '\nExamples:\n  platform logout')
    .action(() => {
      ctx.stdout(removeLogin(ctx.env) ? 'Logged out\n' : 'Not logged in\n');
    });
}

async function accessKeyOf(opts: LoginOptions, ctx: CommandContext): Promise<string> {
  const given = opts.accessKey === '-' ? (await ctx.stdin()).toString('utf8').trim() : opts.accessKey;
  const key = given ?? ctx.env.PLATFORM_ACCESS_KEY;
  if (!key) throw usage('an access key is needed: --access-key <key>, --access-key - (stdin) or $PLATFORM_ACCESS_KEY');
  return key;
}

function readCa(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new CliError(`cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}
