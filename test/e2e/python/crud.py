"""DynamicClient create, list, get, patch (merge, JSON, strategic merge, server-side apply) and delete of
SharedSecrets, with the errors a user meets on the way.

Usage: crud.py KUBECONFIG NAMESPACE
"""
import json
import sys

from common import GROUP_VERSION, attempt, dynamic_client, emit

kubeconfig, namespace = sys.argv[1], sys.argv[2]
client = dynamic_client(kubeconfig)
secrets = client.resources.get(api_version=GROUP_VERSION, kind='SharedSecret')


def secret(name, display_name, data=None):
    return {
        'apiVersion': GROUP_VERSION,
        'kind': 'SharedSecret',
        'metadata': {'name': name, 'namespace': namespace},
        'spec': {'displayName': display_name, 'data': data or {'token': 'c2VjcmV0'}},
    }


def display_name(obj):
    return obj.spec.displayName


out = {}
out['create'] = attempt(lambda: secrets.create(body=secret('py-a', 'first')).to_dict())
out['createSecond'] = attempt(lambda: secrets.create(body=secret('py-b', 'second'), namespace=namespace).metadata.name)
out['createAgain'] = attempt(lambda: secrets.create(body=secret('py-a', 'again')))
out['createInvalid'] = attempt(lambda: secrets.create(body=secret('py-c', 42)))
out['list'] = attempt(lambda: [item.metadata.name for item in secrets.get(namespace=namespace).items])
out['listKind'] = attempt(lambda: secrets.get(namespace=namespace).kind)
out['listAllNamespaces'] = attempt(lambda: sorted(
    (item.metadata.namespace, item.metadata.name) for item in secrets.get().items
    if item.metadata.namespace == namespace))
out['listByLabel'] = attempt(lambda: [i.metadata.name for i in secrets.get(namespace=namespace, label_selector='x=y').items])
out['listByName'] = attempt(lambda: [i.metadata.name for i in secrets.get(
    namespace=namespace, field_selector='metadata.name=py-b').items])
out['listBySpec'] = attempt(lambda: secrets.get(namespace=namespace, field_selector='spec.displayName=first'))
out['get'] = attempt(lambda: display_name(secrets.get(name='py-a', namespace=namespace)))
out['getMissing'] = attempt(lambda: secrets.get(name='py-missing', namespace=namespace))
out['mergePatch'] = attempt(lambda: display_name(secrets.patch(
    name='py-a', namespace=namespace, body={'spec': {'displayName': 'merged'}},
    content_type='application/merge-patch+json')))
out['jsonPatch'] = attempt(lambda: display_name(secrets.patch(
    name='py-a', namespace=namespace, body=[{'op': 'replace', 'path': '/spec/displayName', 'value': 'json-patched'}],
    content_type='application/json-patch+json')))
# The dynamic client's default patch type is a strategic merge patch, which kube serves only for its built-in kinds.
out['strategicMergePatch'] = attempt(lambda: secrets.patch(
    name='py-a', namespace=namespace, body={'spec': {'displayName': 'strategic'}}))
# kubernetes 22.6 encodes only JSON types itself: an apply patch is given as text (JSON is YAML).
applied = json.dumps(secret('py-a', 'applied'))
out['applyConflict'] = attempt(lambda: secrets.server_side_apply(
    name='py-a', namespace=namespace, body=applied, field_manager='python'))
out['applyForced'] = attempt(lambda: display_name(secrets.server_side_apply(
    name='py-a', namespace=namespace, body=applied, field_manager='python', force_conflicts=True)))
out['delete'] = attempt(lambda: secrets.delete(name='py-b', namespace=namespace).to_dict())
out['deleteMissing'] = attempt(lambda: secrets.delete(name='py-b', namespace=namespace))
out['afterwards'] = attempt(lambda: {
    i.metadata.name: display_name(i) for i in secrets.get(namespace=namespace).items})
out['createToOrphan'] = attempt(lambda: secrets.create(body=secret('py-d', 'orphaned')).metadata.name)
out['deleteOrphaning'] = attempt(lambda: secrets.delete(
    name='py-d', namespace=namespace, orphan_dependents=True).metadata.finalizers)
emit(out)
