// The import layering of src/, checked by `npm run lint` (dependency-cruiser), folder by folder. A folder may import
// its own layer and the layers below it, never one above; type-only imports count, and no import cycle is allowed
// anywhere (test/unit/layers.test.ts checks the rule on a fixture tree).
// Lowest first (config.ts is the parsed flags, put together from src/options/, which any layer may read):
const layers = [
  [
    'src/log\\.ts',
    'src/config\\.ts',
    'src/options/',
    'src/cpus\\.ts',
    'src/lazyrequire\\.ts',
    'src/tracing\\.ts',
    'src/apimachinery/',
  ],
  ['src/storage/'],
  ['src/access/'],
  ['src/pki/'],
  ['src/tokens/'],
  // The Kubernetes client: client-node, bounded requests, informers, kube configs; no feature of its own.
  ['src/host/'],
  ['src/registry/', 'src/kinds/'],
  ['src/auth/'],
  ['src/flowcontrol/'],
  ['src/admission/'],
  ['src/clusters/'],
  ['src/controllers/'],
  ['src/actions/'],
  ['src/observability/'],
  ['src/http/'],
  [
    'src/server\\.ts',
    // The steps of the start, one module each, that server.ts takes in order.
    'src/startup/',
    'src/main\\.ts',
    'src/workers\\.ts',
    'src/snapshot-command\\.ts',
    'src/admin-kubeconfig\\.ts',
    'src/datadir-lock\\.ts',
    'src/datadir\\.ts',
    'src/runtime\\.ts',
  ],
  // The command line client, a program of its own on the client layer: nothing of the server imports it.
  ['src/cli/', 'src/cli\\.ts'],
];

const pattern = (paths) => `^(${paths.join('|')})`;
const layerOf = (index) => ({ path: pattern(layers[index]) });
const above = (index) => ({ path: pattern(layers.slice(index + 1).flat()) });

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import cycle: split the shared part into a module both sides may import.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'unlayered',
      severity: 'error',
      comment: 'Every file under src/ belongs to a layer: add new folders to the list in .dependency-cruiser.cjs.',
      from: { path: '^src/', pathNot: pattern(layers.flat()) },
      to: {},
    },
    {
      name: 'import-of-unlayered',
      severity: 'error',
      comment: 'Every file under src/ belongs to a layer: add new folders to the list in .dependency-cruiser.cjs.',
      from: {},
      to: { path: '^src/', pathNot: pattern(layers.flat()) },
    },
    {
      name: 'opentelemetry-only-lazily',
      severity: 'error',
      comment:
        'The OpenTelemetry SDK is loaded only with --tracing-config-file: only observability/otel.ts imports it, and only startup/tracing.ts imports that, dynamically (import()). Elsewhere use src/tracing.ts.',
      from: { path: '^src/', pathNot: '^src/observability/otel\\.ts$' },
      to: { path: 'node_modules/@opentelemetry/' },
    },
    {
      name: 'opentelemetry-sdk-imported-dynamically',
      severity: 'error',
      comment:
        'observability/otel.ts loads the OpenTelemetry SDK: import it with import(), only when tracing is configured.',
      from: {},
      to: { path: '^src/observability/otel\\.ts$', dependencyTypesNot: ['dynamic-import'] },
    },
    ...layers.slice(0, -1).map((_, index) => ({
      name: `layer-${index}-imports-upward`,
      severity: 'error',
      comment: `${layers[index].join(', ')} may import only its own layer and those below it.`,
      from: layerOf(index),
      to: above(index),
    })),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
