#!/usr/bin/env bash
# Builds a private copy of the server (bench/.build/dist, so a rebuild of dist/ by anyone else during the run
# cannot change what is measured) and runs the list/GET/watch benchmark, or with `scale` first the scale benchmark,
# or with `fairness` first the fairness benchmark, or with `connection-burst` first the connection burst. Arguments go
# to list-get-watch.mjs (e.g. bench/run.sh --profile /tmp/bench-prof), scale.mjs (e.g. bench/run.sh scale --sizes
# 10000,50000), fairness.mjs (e.g. bench/run.sh fairness --objects 3000 --seconds 10) or connection-burst.mjs (e.g.
# bench/run.sh connection-burst --flood-seconds 20). The markdown report goes to stdout, progress to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
# The project's own Node.js (the npm package `node`), as npm scripts and `make run` use it.
export PATH="$PWD/node_modules/.bin:$PATH"
rm -rf bench/.build
# The build info goes with the private copy: in dist/ it would tell the next run (and npm run build) that nothing
# needs emitting although bench/.build was just removed.
if ! npx --no-install tsc -p tsconfig.build.json --outDir bench/.build/dist --tsBuildInfoFile bench/.build/.tsbuildinfo >&2; then
  echo "bench: tsc reported type errors (work in progress elsewhere?); measuring the JavaScript it emitted" >&2
fi
node scripts/copy-assets.mjs bench/.build/dist >&2
# The server finds crds/ and package.json (for /version) next to its dist/.
ln -s ../../crds bench/.build/crds
ln -s ../../package.json bench/.build/package.json
src_hash=$(find src -type f -name '*.ts' | LC_ALL=C sort | xargs cat | sha256sum | cut -c1-12)
dirty=$(git status --porcelain -- src | wc -l)
export BENCH_SOURCE="commit $(git rev-parse --short HEAD), ${dirty} uncommitted change(s) under src/, src/*.ts sha256 ${src_hash}"
export BENCH_DIST=bench/.build/dist
if [ "${1:-}" = scale ]; then
  shift
  exec node bench/scale.mjs "$@"
fi
if [ "${1:-}" = fairness ]; then
  shift
  exec node bench/fairness.mjs "$@"
fi
# Issue 39's one command: the share rows, the fairness phases, the reset storm and the connection burst, in one run on
# the same data, with the build's defaults, kube's unbounded flows and APF off.
if [ "${1:-}" = thread ]; then
  shift
  exec node bench/fairness.mjs --share --reset-storm --connection-burst --arm baseline --arm flood \
    --arm 'flood --max-seats-per-flow=0' --arm 'flood --enable-priority-and-fairness=false' "$@"
fi
if [ "${1:-}" = connection-burst ]; then
  shift
  exec node bench/connection-burst.mjs "$@"
fi
exec node bench/list-get-watch.mjs "$@"
