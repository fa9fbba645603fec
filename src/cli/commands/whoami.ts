/**
 * `platform whoami`: who the server takes the credential for (a SelfSubjectReview, actions/selfsubjectreview.ts),
 * and for an access key its name, scope and expiry (a read of the key, which its holder may make).
 */
import type { Command } from 'commander';
import { humanDuration } from '../../apimachinery/duration.js';
import { HostClusterError } from '../../host/kuberequest.js';
import { describeError } from '../errors.js';
import { API } from '../connection.js';
import type { CommandContext } from '../context.js';
import { formatOf, serialized } from '../output.js';

/** The extra naming the access key a request authenticated with (auth/accesskeys.ts ACCESS_KEY_EXTRA). */
const ACCESS_KEY_EXTRA = 'platform.sh/access-key';

interface UserInfo {
  username: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

interface KeyInfo {
  name: string;
  scope?: unknown;
  expirationTimestamp?: string;
  disabled?: boolean;
}

export function addWhoamiCommand(program: Command, ctx: CommandContext): void {
  program
    .command('whoami')
    .description('Show who the server takes you for: user, groups, and the access key with its scope and expiry')
    .option('-o, --output <format>', 'text, json or yaml', 'text')
    .addHelpText('after', '\nExamples:\n  platform whoami\n  platform whoami -o json')
    .action(async (opts: { output: string }) => {
      const format = formatOf(opts.output, ['text', 'json', 'yaml']);
      const api = ctx.api();
      const review = await api.request<{ status: { userInfo: UserInfo } }>(
        'POST',
        '/apis/authentication.k8s.io/v1/selfsubjectreviews',
        { body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' } },
      );
      const user = review.status.userInfo;
      const keyName = user.extra?.[ACCESS_KEY_EXTRA]?.[0];
      const key = keyName ? await keyInfo(ctx, keyName) : undefined;
      if (format !== 'text')
        return ctx.stdout(serialized({ ...user, ...(key ? { accessKey: key } : {}) }, format as 'json' | 'yaml'));
      const rows: Array<[string, string]> = [['User', user.username]];
      if (user.uid) rows.push(['UID', user.uid]);
      rows.push(['Groups', (user.groups ?? []).join(', ')]);
      if (key) {
        rows.push(['Access key', key.name]);
        if (key.disabled) rows.push(['Disabled', 'true']);
        if (key.scope !== undefined) rows.push(['Scope', JSON.stringify(key.scope)]);
        rows.push(['Expires', expires(key.expirationTimestamp)]);
      }
      ctx.stdout(rows.map(([label, value]) => `${`${label}:`.padEnd(13)}${value}\n`).join(''));
    });
}

/** The key's name, scope and expiry; only its name when it cannot be read (the reason on stderr). */
async function keyInfo(ctx: CommandContext, name: string): Promise<KeyInfo> {
  try {
    const key = await ctx
      .api()
      .request<{ spec?: Record<string, unknown>; status?: { expirationTimestamp?: string } }>(
        'GET',
        `${API}/ownedaccesskeys/${encodeURIComponent(name)}`,
      );
    const spec = key.spec ?? {};
    const scope = spec.scope ?? (spec.rules !== undefined ? { rules: spec.rules } : undefined);
    return {
      name,
      ...(scope !== undefined ? { scope } : {}),
      ...(key.status?.expirationTimestamp ? { expirationTimestamp: key.status.expirationTimestamp } : {}),
      ...(spec.disabled === true ? { disabled: true } : {}),
    };
  } catch (err) {
    if (!(err instanceof HostClusterError)) throw err;
    ctx.stderr(`warning: cannot read access key ${JSON.stringify(name)}: ${describeError(err)}\n`);
    return { name };
  }
}

function expires(timestamp: string | undefined): string {
  if (!timestamp) return 'never';
  const left = Date.parse(timestamp) - Date.now();
  return left > 0 ? `${timestamp} (in ${humanDuration(left)})` : `${timestamp} (expired)`;
}
