/**
 * The KMS v2 protobuf definitions, read from the .proto files next to this module: kmsv2-plugin.proto (the gRPC API a
 * plugin serves) and kmsv2-encrypted-object.proto (what is stored in etcd).
 */
import { readFileSync } from 'node:fs';
import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';
import protobuf from 'protobufjs';

/** A .proto file next to this module (the build ships them beside the compiled code: scripts/copy-assets.mjs). */
const protoText = (file: string) => readFileSync(new URL(`./${file}`, import.meta.url), 'utf8');

/** Parsed with the .proto field names (key_id, not keyId), as kube's generated Go code names them on the wire. */
const parseOptions = { keepCase: true };

/** The EncryptedObject message, encoded and decoded with protobufjs. */
export const EncryptedObjectType = protobuf
  .parse(protoText('kmsv2-encrypted-object.proto'), parseOptions)
  .root.lookupType('v2.EncryptedObject');

/** The gRPC client constructor of v2.KeyManagementService (also what a test plugin registers as its service). */
export const KeyManagementService = (() => {
  const definition = protoLoader.fromJSON(protobuf.parse(protoText('kmsv2-plugin.proto'), parseOptions).root.toJSON(), {
    keepCase: true,
    defaults: true,
  });
  const v2 = grpc.loadPackageDefinition(definition).v2 as grpc.GrpcObject;
  return v2.KeyManagementService as grpc.ServiceClientConstructor;
})();
