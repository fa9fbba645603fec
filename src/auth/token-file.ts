/**
 * Static bearer tokens from a CSV file, as kube-apiserver's --token-auth-file: `token,user,uid,"group1,group2"`.
 */
import { readFileSync } from 'node:fs';
import type { UserInfo } from '../apimachinery/user.js';
import { bearerToken, type Authenticator } from './types.js';

/** Splits one CSV line, honouring double quotes ("a,b" is one field, "" inside quotes is a quote). */
function csvFields(line: string): string[] {
  const fields: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quoted) {
      if (c === '"' && line[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      fields.push(field);
      field = '';
    } else field += c;
  }
  fields.push(field);
  return fields.map((f) => f.trim());
}

export function parseTokenFile(text: string, file = 'token file'): Map<string, UserInfo> {
  const tokens = new Map<string, UserInfo>();
  text.split(/\r?\n/).forEach((line, i) => {
    if (line.trim() === '') return;
    const [token, name, uid, groups] = csvFields(line);
    if (uid === undefined)
      throw new Error(`${file} line ${i + 1}: must have at least 3 columns (token, user name, user uid)`);
    if (!token) throw new Error(`${file} line ${i + 1}: the token is empty`);
    if (tokens.has(token)) throw new Error(`${file} line ${i + 1}: the same token appears twice`);
    tokens.set(token, {
      name,
      uid,
      groups: groups
        ? groups
            .split(',')
            .map((g) => g.trim())
            .filter(Boolean)
        : [],
    });
  });
  return tokens;
}

export function readTokenFile(path: string): Map<string, UserInfo> {
  return parseTokenFile(readFileSync(path, 'utf8'), path);
}

/** Bearer tokens looked up in a fixed table. */
export class TokenAuthenticator implements Authenticator {
  constructor(private readonly tokens: Map<string, UserInfo>) {}

  async authenticate(req: Parameters<Authenticator['authenticate']>[0]): Promise<UserInfo | undefined> {
    const token = bearerToken(req);
    if (token === undefined) return undefined;
    // An unknown token may still be someone else's (an access key, a host-cluster token).
    return this.tokens.get(token);
  }
}
