/**
 * The API group this server serves (kube's `GroupName` in an API package's register.go). It is written here only:
 * every name built on it (resources, labels, finalizers, token audiences, messages) is built from this constant.
 */
export const GROUP_NAME = 'management.platform.sh';
