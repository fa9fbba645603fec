/**
 * The TokenReview webhook's pieces that need no server: which paths are reviews and for which Cluster, the grant
 * they are authorized as, and the checks of the clock and the published keys (exp without leeway, nbf with a minute,
 * a key published after the last read found by reading the keys again).
 */
import { describe, expect, test } from '@jest/globals';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import type { Attributes } from '../../src/apimachinery/authorizer.js';
import { DirectTokenReviewer, reviewTarget, tokenReviewAuthorizer } from '../../src/auth/directtokenreview.js';
import { DIRECT_CLUSTER_ENDPOINT_AUDIENCE } from '../../src/tokens/claims.js';

const ISSUER = 'https://platform.test';

describe('reviewTarget', () => {
  test('the bare path, a Cluster after it, and nothing else', () => {
    expect(reviewTarget('/authenticate/direct-cluster-endpoint')).toEqual({});
    expect(reviewTarget('/authenticate/direct-cluster-endpoint/')).toEqual({});
    expect(reviewTarget('/authenticate/direct-cluster-endpoint/eu-1')).toEqual({ cluster: 'eu-1' });
    for (const path of [
      '/authenticate/direct-cluster-endpoint/eu-1/more',
      '/authenticate/direct-cluster-endpointx',
      '/authenticate/direct-cluster-endpoint/%E0',
      '/apis',
    ])
      expect({ path, target: reviewTarget(path) }).toEqual({ path, target: undefined });
  });
});

describe('tokenReviewAuthorizer', () => {
  const attrs = (path: string, verb = 'post'): Attributes => ({
    user: { name: 'cluster-eu-1', groups: [] },
    verb,
    isResourceRequest: false,
    path,
    apiGroup: '',
    apiVersion: '',
    namespace: '',
    resource: '',
    subresource: '',
    name: '',
  });

  test("a review's POST is asked as create on the Cluster's tokenreviews; other requests as they are", async () => {
    const asked: Attributes[] = [];
    const authorizer = tokenReviewAuthorizer({
      authorize: async (a) => {
        asked.push(a);
        return { decision: 'noOpinion' };
      },
    });
    const denied = await authorizer.authorize(attrs('/authenticate/direct-cluster-endpoint/eu-1'));
    expect(asked[0]).toMatchObject({
      verb: 'create',
      isResourceRequest: true,
      apiGroup: 'management.platform.sh',
      resource: 'clusters',
      subresource: 'tokenreviews',
      name: 'eu-1',
    });
    expect(denied).toEqual({
      decision: 'deny',
      reason: expect.stringContaining('create on clusters/tokenreviews "eu-1"'),
    });
    await authorizer.authorize(attrs('/authenticate/direct-cluster-endpoint/eu-1', 'get'));
    expect(asked[1]).toMatchObject({ verb: 'get', isResourceRequest: false });
  });
});

describe('DirectTokenReviewer', () => {
  async function signingKey(): Promise<{ jwk: JWK; sign: (claims: Record<string, unknown>) => Promise<string> }> {
    const { publicKey, privateKey } = await generateKeyPair('ES256');
    const jwk = await exportJWK(publicKey);
    const kid = await calculateJwkThumbprint(jwk);
    return {
      jwk: { ...jwk, kid, alg: 'ES256', use: 'sig' },
      sign: (claims) => new SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid, typ: 'JWT' }).sign(privateKey),
    };
  }
  const claims = (iat: number, ttl = 600) => ({
    iss: ISSUER,
    sub: 'alice',
    aud: [DIRECT_CLUSTER_ENDPOINT_AUDIENCE],
    groups: [],
    iat,
    nbf: iat,
    exp: iat + ttl,
    jti: 'id-1',
  });

  function reviewer(keys: JWK[], clock: { now: number }) {
    let reads = 0;
    const r = new DirectTokenReviewer({
      issuer: () => ISSUER,
      jwks: async () => {
        reads += 1;
        return { keys: [...keys] };
      },
      project: async () => undefined,
      projects: async () => [],
      now: () => clock.now,
    });
    return { review: (t: string) => r.review(t, [], 'eu-1'), reads: () => reads };
  }

  test('exp without leeway; nbf up to a minute ahead', async () => {
    const key = await signingKey();
    const clock = { now: 1_000_000_000_000 };
    const { review } = reviewer([key.jwk], clock);
    const t = clock.now / 1000;
    const token = await key.sign(claims(t, 600));
    clock.now += 599_999;
    expect(await review(token)).toMatchObject({ authenticated: true });
    clock.now += 1;
    expect(await review(token)).toEqual({ authenticated: false, error: 'the token expired at 2001-09-09T01:56:40Z' });
    clock.now = t * 1000;
    expect(await review(await key.sign(claims(t + 60)))).toMatchObject({ authenticated: true });
    expect(await review(await key.sign(claims(t + 61)))).toMatchObject({
      authenticated: false,
      error: expect.stringContaining('the token is not valid before'),
    });
  });

  test('a token of a key published after the keys were read passes: the keys are read again, at most once a second', async () => {
    const first = await signingKey();
    const second = await signingKey();
    const keys = [first.jwk];
    const clock = { now: Date.now() };
    const { review, reads } = reviewer(keys, clock);
    const t = Math.floor(clock.now / 1000);
    expect(await review(await first.sign(claims(t)))).toMatchObject({ authenticated: true });
    keys.push(second.jwk);
    // Within a second of the last read the keys are not read again (made-up key ids would make each review a read).
    expect(await review(await second.sign(claims(t)))).toMatchObject({ authenticated: false });
    clock.now += 1000;
    expect(await review(await second.sign(claims(t)))).toMatchObject({ authenticated: true });
    expect(reads()).toBe(2);
    // A key nobody published stays refused.
    const stranger = await signingKey();
    expect(await review(await stranger.sign(claims(t)))).toMatchObject({ authenticated: false });
  });
});
