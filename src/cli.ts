#!/usr/bin/env node
/** The `platform` command (package.json bin): the command line client, src/cli/main.ts. */
import { main } from './cli/main.js';

function stdin(): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    process.stdin.on('data', (c: Buffer) => chunks.push(c));
    process.stdin.on('end', () => resolve(Buffer.concat(chunks)));
    process.stdin.on('error', reject);
  });
}

process.exitCode = await main(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  stdin,
  stdoutIsTTY: process.stdout.isTTY === true,
  env: process.env,
});
