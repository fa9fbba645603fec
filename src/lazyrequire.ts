/**
 * A CommonJS dependency loaded on its first use instead of at start: a module most servers never need (certificate
 * generation, X.509 subject parsing, OpenAPI protobuf) then costs an idle process no memory.
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

export function lazyRequire<T>(id: string): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= require(id) as T);
}
