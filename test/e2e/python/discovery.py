"""DynamicClient discovery: each kind named on the command line found by api_version and kind, and /version.

Usage: discovery.py KUBECONFIG KIND...
"""
import sys

from kubernetes.dynamic.exceptions import ResourceNotFoundError

from common import GROUP_VERSION, dynamic_client, emit

kubeconfig, kinds = sys.argv[1], sys.argv[2:]
client = dynamic_client(kubeconfig)
found = {}
for kind in kinds:
    resource = client.resources.get(api_version=GROUP_VERSION, kind=kind)
    found[kind] = {
        'name': resource.name,
        'namespaced': resource.namespaced,
        'verbs': sorted(resource.verbs),
        'subresources': sorted(resource.subresources),
        'shortNames': resource.short_names,
    }
try:
    client.resources.get(api_version=GROUP_VERSION, kind='NoSuchKind')
    unknown = 'found'
except ResourceNotFoundError as e:
    unknown = type(e).__name__
emit({'kinds': found, 'unknownKind': unknown, 'version': client.version['kubernetes']})
