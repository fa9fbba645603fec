// Copies the files the server reads at run time from beside its compiled code (the .proto definitions under src/)
// into the build's output, at the same place relative to it: `node scripts/copy-assets.mjs [outDir]` (default dist).
// tsc emits only JavaScript; run after it (npm run build does).
import { cpSync, readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'src');
const out = join(root, process.argv[2] ?? 'dist');
const assets = readdirSync(src, { recursive: true }).filter((file) => String(file).endsWith('.proto'));
for (const file of assets) cpSync(join(src, file), join(out, file));
console.log(`copied ${assets.length} .proto file(s) into ${relative(root, out) || '.'}`);
