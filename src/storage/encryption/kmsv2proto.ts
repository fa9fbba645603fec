/**
 * The KMS v2 protobuf definitions, as text: kmsv2-plugin.proto (the gRPC API a plugin serves) and
 * kmsv2-encrypted-object.proto (what is stored in etcd). They are embedded here because the build ships only
 * compiled .ts; test/unit/kmsv2-proto.test.ts checks that each text equals its .proto file.
 */
import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';
import protobuf from 'protobufjs';

export const pluginProto = `// The KMS v2 plugin API the API server calls over a unix socket: wire-compatible with kube's
// k8s.io/kms/apis/v2 (same package, service, method, message and field names and numbers), so any
// plugin written for kube-apiserver serves this server too.
syntax = "proto3";

package v2;

service KeyManagementService {
  // Polled for health and for the plugin's current key ID.
  rpc Status(StatusRequest) returns (StatusResponse) {}
  // Decrypts a DEK source that Encrypt returned.
  rpc Decrypt(DecryptRequest) returns (DecryptResponse) {}
  // Encrypts a DEK source with the plugin's current key encryption key.
  rpc Encrypt(EncryptRequest) returns (EncryptResponse) {}
}

message StatusRequest {}

message StatusResponse {
  // "v2" (or "v2beta1").
  string version = 1;
  // "ok" when healthy; anything else is reported by the health check.
  string healthz = 2;
  // The key the plugin encrypts with now; a change makes the server generate a new DEK source.
  string key_id = 3;
}

message DecryptRequest {
  bytes ciphertext = 1;
  // A new random identifier per request, for correlating logs.
  string uid = 2;
  // The key ID Encrypt returned with this ciphertext.
  string key_id = 3;
  // The annotations Encrypt returned with this ciphertext.
  map<string, bytes> annotations = 4;
}

message DecryptResponse {
  bytes plaintext = 1;
}

message EncryptRequest {
  bytes plaintext = 1;
  string uid = 2;
}

message EncryptResponse {
  bytes ciphertext = 1;
  // The plugin's key encryption key that encrypted it (never a local key).
  string key_id = 2;
  // Stored in plain text next to every object; keys are fully qualified domain names, 32 KiB in all at most.
  map<string, bytes> annotations = 3;
}
`;

export const encryptedObjectProto = `// What a KMS v2 provider stores in etcd after the prefix k8s:enc:kms:v2:<name>: — wire-compatible with kube's
// k8s.io/apiserver/pkg/storage/value/encrypt/envelope/kmsv2/v2 EncryptedObject, so data moves between the two.
syntax = "proto3";

package v2;

message EncryptedObject {
  // For HKDF_SHA256_XNONCE_AES_GCM_SEED: 32 bytes of HKDF info, the 12-byte AES-GCM nonce, the ciphertext and its
  // 16-byte tag (the etcd key is the authenticated data).
  bytes encryptedData = 1;
  // The plugin's key ID that encrypted encryptedDEKSource.
  string keyID = 2;
  // The DEK source, encrypted by the plugin.
  bytes encryptedDEKSource = 3;
  // The plugin's annotations from Encrypt, given back to it on Decrypt.
  map<string, bytes> annotations = 4;
  EncryptedDEKSourceType encryptedDEKSourceType = 5;
}

enum EncryptedDEKSourceType {
  // The DEK source is the AES-GCM key itself; encryptedData is the nonce, ciphertext and tag.
  AES_GCM_KEY = 0;
  // The DEK source is a seed: the AES-GCM key is HKDF-Expand(SHA-256, seed, first 32 bytes of encryptedData).
  HKDF_SHA256_XNONCE_AES_GCM_SEED = 1;
}
`;

/** Parsed with the .proto field names (key_id, not keyId), as kube's generated Go code names them on the wire. */
const parseOptions = { keepCase: true };

/** The EncryptedObject message, encoded and decoded with protobufjs. */
export const EncryptedObjectType = protobuf
  .parse(encryptedObjectProto, parseOptions)
  .root.lookupType('v2.EncryptedObject');

/** The gRPC client constructor of v2.KeyManagementService (also what a test plugin registers as its service). */
export const KeyManagementService = (() => {
  const definition = protoLoader.fromJSON(protobuf.parse(pluginProto, parseOptions).root.toJSON(), {
    keepCase: true,
    defaults: true,
  });
  const v2 = grpc.loadPackageDefinition(definition).v2 as grpc.GrpcObject;
  return v2.KeyManagementService as grpc.ServiceClientConstructor;
})();
