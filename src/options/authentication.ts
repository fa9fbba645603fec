/** Authentication: static tokens, the front proxy (request headers) and client certificates. */
import type { Options } from './flag.js';
import { bool, list } from './values.js';

export interface AuthenticationConfig {
  tokenAuthFile?: string;
  /** CA bundle (PEM) that signs the front proxy's client certificate; unset: X-Remote-* headers are never trusted. */
  requestheaderClientCaFile?: string;
  /** Common names the front proxy's certificate may have; empty: any name signed by the CA. */
  requestheaderAllowedNames: string[];
  requestheaderUsernameHeaders: string[];
  requestheaderUidHeaders: string[];
  requestheaderGroupHeaders: string[];
  requestheaderExtraHeadersPrefix: string[];
  /** Do not read the front proxy's settings from kube-system/extension-apiserver-authentication. */
  authenticationSkipLookup: boolean;
  /** CA bundle (PEM) for client certificates: CN is the user, O the groups. */
  clientCaFile?: string;
}

export const authenticationOptions: Options<AuthenticationConfig> = {
  concern: 'authentication',
  flags: [
    {
      name: 'token-auth-file',
      arg: 'file',
      help: 'Static bearer tokens, CSV lines token,user,uid,"group1,group2". Without it an admin token and <data-dir>/admin.kubeconfig are made.',
      apply: (c, v) => (c.tokenAuthFile = v),
    },
    {
      name: 'requestheader-client-ca-file',
      arg: 'file',
      help: "CA bundle (PEM) that signs the front proxy's client certificate (kube-apiserver's --proxy-client-cert-file). The identity headers below are trusted only on connections presenting such a certificate; without this flag they are ignored.",
      apply: (c, v) => (c.requestheaderClientCaFile = v),
    },
    {
      name: 'requestheader-allowed-names',
      arg: 'names',
      default: '',
      help: 'Common names the front proxy\'s client certificate may have, comma-separated (for example "front-proxy-client"). Empty: any certificate signed by --requestheader-client-ca-file.',
      apply: (c, v) => (c.requestheaderAllowedNames = list(v)),
    },
    {
      name: 'requestheader-username-headers',
      arg: 'headers',
      default: 'X-Remote-User',
      help: 'Headers holding the user name, comma-separated; the first non-empty one wins ({default}).',
      apply: (c, v) => (c.requestheaderUsernameHeaders = list(v)),
    },
    {
      name: 'requestheader-uid-headers',
      arg: 'headers',
      default: 'X-Remote-Uid',
      help: "Headers holding the user's uid, comma-separated; the first non-empty one wins ({default}).",
      apply: (c, v) => (c.requestheaderUidHeaders = list(v)),
    },
    {
      name: 'requestheader-group-headers',
      arg: 'headers',
      default: 'X-Remote-Group',
      help: "Headers holding the user's groups, comma-separated; every value of each counts ({default}).",
      apply: (c, v) => (c.requestheaderGroupHeaders = list(v)),
    },
    {
      name: 'requestheader-extra-headers-prefix',
      arg: 'prefixes',
      default: 'X-Remote-Extra-',
      help: 'Header prefixes for extra user information, comma-separated; the rest of the header name, lowercased and %-decoded, is the key ({default}).',
      apply: (c, v) => (c.requestheaderExtraHeadersPrefix = list(v)),
    },
    {
      name: 'authentication-skip-lookup',
      arg: 'bool',
      default: 'false',
      help: "Without --requestheader-client-ca-file, the front proxy's settings (and the client CA) are read from the ConfigMap kube-system/extension-apiserver-authentication of the host cluster at start, as aggregated API servers do; true skips that ({default}).",
      apply: (c, v) => (c.authenticationSkipLookup = bool('authentication-skip-lookup', v)),
    },
    {
      name: 'client-ca-file',
      arg: 'file',
      help: 'CA bundle (PEM) for clients that connect directly with a certificate: its common name is the user name, its organizations the groups.',
      apply: (c, v) => (c.clientCaFile = v),
    },
  ],
};
