"""What the scripts share: a client from the test server's kubeconfig, and results printed as one JSON document."""
import json
import sys

from kubernetes import config, dynamic
from kubernetes.client.rest import ApiException

GROUP = 'management.platform.sh'
VERSION = 'v1'
GROUP_VERSION = GROUP + '/' + VERSION


def api_client(kubeconfig):
    return config.new_client_from_config(config_file=kubeconfig)


def dynamic_client(kubeconfig):
    return dynamic.DynamicClient(api_client(kubeconfig))


def failure(e):
    """An ApiException as a user meets it: its class, HTTP status, and the message summary() shows."""
    out = {'error': type(e).__name__, 'status': e.status}
    if hasattr(e, 'summary'):
        summary = e.summary()
        out['summary'] = summary.decode() if isinstance(summary, bytes) else summary
    try:
        body = json.loads(e.body)
        out['reason'] = body.get('reason')
        out['message'] = body.get('message')
    except (TypeError, ValueError):
        out['body'] = str(e.body)
    return out


def attempt(call):
    """The call's result, or the ApiException it raised as failure() describes it."""
    try:
        return call()
    except ApiException as e:
        return failure(e)


def emit(result):
    json.dump(result, sys.stdout)
    sys.stdout.write('\n')
