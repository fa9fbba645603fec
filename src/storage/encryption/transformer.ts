/** One value transformer, as kube's value.Transformer (k8s.io/apiserver/pkg/storage/value). */
export interface Transformer {
  /** Encrypts `plaintext`; `dataCtx` is authenticated data: the etcd key the value is stored under. */
  transformToStorage(plaintext: Uint8Array, dataCtx: string): Promise<Uint8Array>;
  /** Decrypts; `stale` is true when the value should be rewritten (not written by the current write key/provider). */
  transformFromStorage(stored: Uint8Array, dataCtx: string): Promise<{ data: Uint8Array; stale: boolean }>;
}
