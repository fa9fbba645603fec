import { describe, expect, test } from '@jest/globals';
import { connectionSource } from '../../src/http/connectionsource.js';
import { negotiateResponse, requestEncoding } from '../../src/http/negotiation.js';
import { resolveRequestInfo } from '../../src/http/requestinfo.js';
import { StatusError } from '../../src/apimachinery/status.js';

const q = (s = '') => new URLSearchParams(s);

describe('resolveRequestInfo', () => {
  test('a namespaced object, in both path forms', () => {
    for (const prefix of ['', '/orchestrator/management']) {
      const info = resolveRequestInfo(
        'GET',
        `${prefix}/apis/management.platform.sh/v1/namespaces/ns1/sharedsecrets/s1/status`,
        q(),
      );
      expect(info).toMatchObject({
        isResourceRequest: true,
        verb: 'get',
        apiGroup: 'management.platform.sh',
        apiVersion: 'v1',
        namespace: 'ns1',
        resource: 'sharedsecrets',
        name: 's1',
        subresource: 'status',
      });
    }
  });

  test('collections: list, watch, deletecollection; cluster-wide', () => {
    expect(resolveRequestInfo('GET', '/apis/g/v1/sharedsecrets', q()).verb).toBe('list');
    expect(resolveRequestInfo('GET', '/apis/g/v1/sharedsecrets', q('watch=true')).verb).toBe('watch');
    expect(resolveRequestInfo('DELETE', '/apis/g/v1/namespaces/a/sharedsecrets', q()).verb).toBe('deletecollection');
    expect(resolveRequestInfo('POST', '/apis/g/v1/clusters', q())).toMatchObject({
      verb: 'create',
      namespace: '',
      resource: 'clusters',
    });
  });

  test('discovery paths are not resource requests', () => {
    for (const p of ['/apis', '/apis/g', '/apis/g/v1', '/api', '/version', '/healthz']) {
      expect(resolveRequestInfo('GET', p, q())).toMatchObject({ isResourceRequest: false, verb: 'get' });
    }
  });

  test('percent-encoded segments are decoded (so the store can refuse them)', () => {
    expect(resolveRequestInfo('GET', '/apis/g/v1/clusters/a%2Fb', q()).name).toBe('a/b');
  });
});

describe('negotiateResponse', () => {
  test('JSON by default and for wildcards', () => {
    expect(negotiateResponse(undefined)).toBe('json');
    expect(negotiateResponse('*/*')).toBe('json');
    expect(negotiateResponse('application/*')).toBe('json');
  });

  test('YAML when asked', () => {
    expect(negotiateResponse('application/yaml')).toBe('yaml');
  });

  test("skips protobuf and shapes it does not serve, as kubectl's Accept expects", () => {
    expect(negotiateResponse('application/vnd.kubernetes.protobuf, application/json')).toBe('json');
    expect(
      negotiateResponse(
        'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json',
      ),
    ).toBe('json');
  });

  test('honours q values', () => {
    expect(negotiateResponse('application/json;q=0.5, application/yaml')).toBe('yaml');
  });

  test('406 NotAcceptable when nothing fits', () => {
    try {
      negotiateResponse('text/html');
      throw new Error('no error');
    } catch (err) {
      expect((err as StatusError).status).toMatchObject({
        code: 406,
        reason: 'NotAcceptable',
        message: 'only the following media types are accepted: application/json, application/yaml',
      });
    }
  });
});

describe('requestEncoding', () => {
  test('JSON, YAML, charset ignored, absent means JSON', () => {
    expect(requestEncoding('application/json; charset=utf-8')).toBe('json');
    expect(requestEncoding('application/yaml')).toBe('yaml');
    expect(requestEncoding(undefined)).toBe('json');
  });

  test('415 for anything else', () => {
    expect(() => requestEncoding('application/x-www-form-urlencoded')).toThrow(/unknown format/);
  });
});

describe('connectionSource', () => {
  test('an IPv4 address is its own source, also as a dual-stack listener gives it', () => {
    expect(connectionSource('10.0.0.7')).toBe('10.0.0.7');
    expect(connectionSource('::ffff:10.0.0.7')).toBe('10.0.0.7');
  });

  test('IPv6 addresses of one /64 are one source, however they are written', () => {
    const source = '2001:db8:0:1::/64';
    for (const address of [
      '2001:db8:0:1::1',
      '2001:DB8:0:1:ffff:ffff:ffff:ffff',
      '2001:0db8:0000:0001::',
      '2001:db8:0:1:a:b:c:d',
    ])
      expect(connectionSource(address)).toBe(source);
    expect(connectionSource('2001:db8:0:2::1')).toBe('2001:db8:0:2::/64');
    expect(connectionSource('::1')).toBe('0:0:0:0::/64');
    expect(connectionSource('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
  });

  test('no address (a socket already closed) is one source of its own', () => {
    expect(connectionSource(undefined)).toBe('');
  });
});
