# The two commands of the README. Both install what they need first (npm packages, etcd from Debian), but only
# when it is missing or package-lock.json changed since the last install, and build incrementally: a second
# `make run` starts the server in a few seconds, and never deletes node_modules under a server already running.
.PHONY: run test deps build etcd test-clients

etcd:
	@./scripts/ensure-etcd.sh

# npm ci deletes node_modules first: only when package-lock.json is newer than the last install.
node_modules/.install-stamp: package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

deps: etcd node_modules/.install-stamp

# The Python client and kubectl 1.20 from Debian, which the tests run as our users do.
test-clients:
	@./scripts/ensure-test-clients.sh

# tsc is not even started when no source changed since the last build; when one did, it compiles incrementally
# (tsconfig.build.json keeps dist/.tsbuildinfo).
dist/.build-stamp: node_modules/.install-stamp tsconfig.json tsconfig.build.json $(shell find src -type f)
	npm run --silent build
	@touch $@

build: etcd dist/.build-stamp

# Runs the server with the embedded default: a local etcd under .data/, and .data/admin.kubeconfig for kubectl. On the
# project's own Node.js (the npm package `node`, pinned in package.json), whatever Node.js the machine has; npm
# scripts (npm test, npm run build) use it too, since npm puts node_modules/.bin first on their PATH.
NODE := node_modules/.bin/node

run: build
	$(NODE) dist/main.js $(ARGS)

# Lints, type-checks, builds, unpacks the real kubectl, and runs every test against real etcd processes.
test: deps test-clients
	npm test
