"""Watches as Python users write them: the DynamicClient's watch, and kubernetes.watch.Watch().stream on
CustomObjectsApi's list function with allow_watch_bookmarks=True.

Usage: watch.py KUBECONFIG NAMESPACE
"""
import sys

from kubernetes import client, watch

from common import GROUP, GROUP_VERSION, VERSION, api_client, attempt, dynamic_client, emit

kubeconfig, namespace = sys.argv[1], sys.argv[2]
dynamic = dynamic_client(kubeconfig)
secrets = dynamic.resources.get(api_version=GROUP_VERSION, kind='SharedSecret')
custom = client.CustomObjectsApi(api_client(kubeconfig))


def secret(name, display_name):
    return {
        'apiVersion': GROUP_VERSION,
        'kind': 'SharedSecret',
        'metadata': {'name': name, 'namespace': namespace},
        'spec': {'displayName': display_name, 'data': {'token': 'c2VjcmV0'}},
    }


def dynamic_watch():
    """The existing object comes ADDED; each event then leads to the next change: a patch, then a delete."""
    secrets.create(body=secret('watched', 'before'))
    watcher = watch.Watch()
    events = []
    for event in secrets.watch(namespace=namespace, timeout=20, watcher=watcher):
        obj = event['object']
        events.append([event['type'], obj.metadata.name, obj.spec.displayName])
        if event['type'] == 'ADDED':
            secrets.patch(name='watched', namespace=namespace, body={'spec': {'displayName': 'after'}},
                          content_type='application/merge-patch+json')
        elif event['type'] == 'MODIFIED':
            secrets.delete(name='watched', namespace=namespace)
        else:
            watcher.stop()
    return events


def bookmarks():
    """From a list's resourceVersion: the object created after it, then a BOOKMARK before the timeout ends the watch."""
    listed = custom.list_namespaced_custom_object(GROUP, VERSION, namespace, 'sharedsecrets')
    since = listed['metadata']['resourceVersion']
    secrets.create(body=secret('bookmarked', 'new'))
    events = []
    for event in watch.Watch().stream(custom.list_namespaced_custom_object, GROUP, VERSION, namespace,
                                      'sharedsecrets', resource_version=since, allow_watch_bookmarks=True,
                                      timeout_seconds=5):
        obj = event['object']
        events.append([event['type'], obj['kind'], obj['metadata'].get('name'),
                       obj['metadata']['resourceVersion']])
    return {'since': since, 'events': events}


def bad_selector():
    return list(secrets.watch(namespace=namespace, field_selector='spec.displayName=x', timeout=5))


emit({'dynamic': attempt(dynamic_watch), 'bookmarks': attempt(bookmarks), 'badSelector': attempt(bad_selector)})
