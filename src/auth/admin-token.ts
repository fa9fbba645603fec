/** The embedded default's admin credential: one random token, made once and kept in the data dir. */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MASTERS_GROUP, type UserInfo } from '../apimachinery/user.js';

export const ADMIN_USER: UserInfo = { name: 'admin', uid: 'admin', groups: [MASTERS_GROUP] };

export function ensureAdminToken(dataDir: string): string {
  const file = join(dataDir, 'admin-token');
  if (existsSync(file)) {
    const token = readFileSync(file, 'utf8').trim();
    if (token) return token;
  }
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const token = randomBytes(32).toString('base64url');
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  return token;
}
