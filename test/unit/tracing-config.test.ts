/**
 * The TracingConfiguration file of --tracing-config-file: kube-apiserver's defaults, strict decoding and the
 * messages of its ValidateTracingConfiguration; and the exporter's URL for each form of gRPC target.
 */
import { describe, expect, test } from '@jest/globals';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseFlags } from '../../src/config.js';
import { exporterUrl } from '../../src/observability/otel.js';
import { loadTracingConfig, parseTracingConfig } from '../../src/observability/tracingconfig.js';

const HEAD = 'apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\n';

describe('TracingConfiguration', () => {
  test("kube's defaults: localhost:4317, and a rate of 0 (only what callers sample)", () => {
    expect(parseTracingConfig(HEAD)).toEqual({ endpoint: 'localhost:4317', samplingRatePerMillion: 0 });
    expect(parseTracingConfig(`${HEAD}endpoint: collector.monitoring:4317\nsamplingRatePerMillion: 10000\n`)).toEqual({
      endpoint: 'collector.monitoring:4317',
      samplingRatePerMillion: 10000,
    });
    // The earlier versions kube-apiserver decodes as well.
    for (const v of ['v1beta1', 'v1alpha1'])
      expect(parseTracingConfig(`apiVersion: apiserver.config.k8s.io/${v}\nkind: TracingConfiguration\n`)).toEqual({
        endpoint: 'localhost:4317',
        samplingRatePerMillion: 0,
      });
  });

  test.each([
    [
      'samplingRatePerMillion: -1',
      'failed to validate tracing configuration: samplingRatePerMillion: Invalid value: -1: sampling rate must be positive',
    ],
    [
      'samplingRatePerMillion: 1000001',
      'failed to validate tracing configuration: samplingRatePerMillion: Invalid value: 1000001: sampling rate per million must be less than or equal to one million',
    ],
    [
      'endpoint: http://collector:4317',
      'failed to validate tracing configuration: endpoint: Invalid value: "http://collector:4317": unsupported scheme: http.  Options are none, dns, unix, or unix-abstract.  See https://github.com/grpc/grpc/blob/master/doc/naming.md',
    ],
    [
      'endpoint: http://collector:4317\nsamplingRatePerMillion: -5',
      'failed to validate tracing configuration: [samplingRatePerMillion: Invalid value: -5: sampling rate must be positive, endpoint: Invalid value: "http://collector:4317": unsupported scheme: http.  Options are none, dns, unix, or unix-abstract.  See https://github.com/grpc/grpc/blob/master/doc/naming.md]',
    ],
    [
      'samplingRatePerMillion: 0.5',
      'failed to read tracing config: unable to decode tracing configuration data: json: cannot unmarshal number 0.5 into Go struct field TracingConfiguration.samplingRatePerMillion of type int32',
    ],
    [
      'endpoint: 4317',
      'failed to read tracing config: unable to decode tracing configuration data: json: cannot unmarshal number into Go struct field TracingConfiguration.endpoint of type string',
    ],
    [
      'sampleRate: 5',
      'failed to read tracing config: unable to decode tracing configuration data: strict decoding error: unknown field "sampleRate"',
    ],
  ])('%s is refused with kube message', (body, message) => {
    expect(() => parseTracingConfig(`${HEAD}${body}\n`)).toThrow(message);
  });

  test('another kind, or none, is refused', () => {
    expect(() => parseTracingConfig('apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n')).toThrow(
      'no kind "EncryptionConfiguration" is registered for version "apiserver.config.k8s.io/v1"',
    );
    expect(() => parseTracingConfig('endpoint: localhost:4317\n')).toThrow(
      "Object 'Kind' and 'apiVersion' are required",
    );
  });

  test("a missing file: kube's message", () => {
    const path = join(mkdtempSync(join(tmpdir(), 'tracing-config-')), 'absent.yaml');
    expect(() => loadTracingConfig(path)).toThrow(`tracing-config-file ${path} does not exist`);
    writeFileSync(path, `${HEAD}samplingRatePerMillion: 100\n`);
    expect(loadTracingConfig(path).samplingRatePerMillion).toBe(100);
  });

  test('--tracing-config-file is a flag; unset, there is no tracing', () => {
    expect(parseFlags(['--tracing-config-file', '/etc/tracing.yaml'])?.tracingConfigFile).toBe('/etc/tracing.yaml');
    expect(parseFlags([])?.tracingConfigFile).toBeUndefined();
  });
});

test("the exporter's URL for each form of gRPC target, always without TLS (as kube's WithInsecure)", () => {
  expect(exporterUrl('localhost:4317')).toBe('http://localhost:4317');
  expect(exporterUrl('dns:///collector.monitoring:4317')).toBe('http://collector.monitoring:4317');
  expect(exporterUrl('dns://8.8.8.8/collector:4317')).toBe('http://collector:4317');
  expect(exporterUrl('unix:///var/run/otel.sock')).toBe('unix:///var/run/otel.sock');
});
