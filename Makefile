# The two commands of the README. Both install what they need first (npm packages, etcd from Debian).
.PHONY: run test deps build

deps:
	./scripts/ensure-etcd.sh
	npm ci --no-audit --no-fund

build: deps
	npm run build

# Runs the server with the embedded default: a local etcd under .data/, and .data/admin.kubeconfig for kubectl.
run: build
	node dist/main.js $(ARGS)

# Type-checks, builds, unpacks the real kubectl, and runs every test against real etcd processes.
test: deps
	npm test
