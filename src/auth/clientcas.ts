/**
 * The CAs whose client certificates the server believes, kept current while it runs (kube's DynamicFileCAContent
 * and ConfigMapCAController): --requestheader-client-ca-file and --client-ca-file are read again when they change;
 * without them, the host's kube-system/extension-apiserver-authentication ConfigMap is read again every interval
 * (kube watches it and resyncs each minute). A change builds new authenticators that serve the next requests; a
 * bundle that does not parse, or a ConfigMap that cannot be read, is logged and the previous CAs stay in force.
 */
import type { Config } from '../config.js';
import type { HostCluster } from '../host/cluster.js';
import {
  AUTHENTICATION_CONFIGMAP,
  authenticationFromConfigMap,
  readAuthenticationConfigMap,
} from './frontproxyconfig.js';
import type { Logger } from '../log.js';
import { ReloadingFiles, type Dynamic } from '../pki/reloading.js';
import { RequestHeaderAuthenticator, type RequestHeaderOptions } from './requestheader.js';
import type { Authenticator } from './types.js';
import { ClientCertAuthenticator } from './x509.js';

const WHERE = `ConfigMap ${AUTHENTICATION_CONFIGMAP.namespace}/${AUTHENTICATION_CONFIGMAP.name}`;

export interface ClientCertificateAuthorities {
  /** The front proxy's identity headers, believed on a connection whose certificate the current CA signed. */
  frontProxy: Authenticator;
  /** Client certificates of the current --client-ca-file (or the ConfigMap's client-ca-file). */
  clientCert: Authenticator;
  /** Whether the TLS server should ask for client certificates at all. */
  asked: boolean;
  /** The CA bundles (PEM) the TLS server names when it asks for a client certificate. */
  bundles: Dynamic<string[]>;
  stop(): void;
}

/** An authenticator that can be swapped for a new one while requests are served; none: it recognises nothing. */
class Replaceable implements Authenticator {
  constructor(public current?: Authenticator) {}

  authenticate(req: Parameters<Authenticator['authenticate']>[0]) {
    return this.current ? this.current.authenticate(req) : Promise.resolve(undefined);
  }
}

/** Each part's CA bundle (PEM) and the authenticator made from it. */
interface Part {
  pem: string;
  authenticator: Authenticator;
}

export async function startClientCertificateAuthorities(
  config: Config,
  host: HostCluster | undefined,
  log: Logger,
): Promise<ClientCertificateAuthorities> {
  const frontProxy = new Replaceable();
  const clientCert = new Replaceable();
  const pems = { frontProxy: '', clientCert: '' };
  const listeners: ((bundles: string[]) => void)[] = [];
  const bundles: Dynamic<string[]> = {
    current: () => [pems.frontProxy, pems.clientCert].filter(Boolean),
    onChange: (listener) => void listeners.push(listener),
  };
  const put = (which: 'frontProxy' | 'clientCert', part: Part | undefined) => {
    (which === 'frontProxy' ? frontProxy : clientCert).current = part?.authenticator;
    if (pems[which] === (part?.pem ?? '')) return;
    pems[which] = part?.pem ?? '';
    for (const listener of listeners) listener(bundles.current());
  };
  const stops: (() => void)[] = [];
  const fromFile = (which: 'frontProxy' | 'clientCert', what: string, file: string, build: (pem: string) => Part) => {
    const files = new ReloadingFiles({
      what,
      files: [file],
      parse: ([pem]) => build(pem.toString('utf8')),
      intervalMs: config.tlsReloadIntervalMs,
      log,
    });
    put(which, files.current());
    files.onChange((part) => put(which, part));
    files.start();
    stops.push(() => files.stop());
  };

  if (config.requestheaderClientCaFile) {
    fromFile('frontProxy', 'front proxy CA (--requestheader-client-ca-file)', config.requestheaderClientCaFile, (pem) =>
      frontProxyPart({
        clientCaPem: pem,
        allowedNames: config.requestheaderAllowedNames,
        usernameHeaders: config.requestheaderUsernameHeaders,
        uidHeaders: config.requestheaderUidHeaders,
        groupHeaders: config.requestheaderGroupHeaders,
        extraHeaderPrefixes: config.requestheaderExtraHeadersPrefix,
      }),
    );
  }
  if (config.clientCaFile) fromFile('clientCert', 'client CA (--client-ca-file)', config.clientCaFile, clientCertPart);

  // Without --requestheader-client-ca-file, the front proxy's settings come from the host cluster, as for any
  // aggregated API server.
  const lookup = !!host && !config.requestheaderClientCaFile && !config.authenticationSkipLookup;
  if (lookup) {
    // At start a host that cannot be asked stops the server (with the permission it needs named).
    const data = await readAuthenticationConfigMap(host);
    if (!data)
      log.warn(
        `the host cluster has no ${WHERE}: requests through a front proxy (kube-apiserver) cannot be authenticated until it exists`,
      );
    const found = configMapParts(config, data ?? {});
    put('frontProxy', found.frontProxy);
    if (!config.clientCaFile) put('clientCert', found.clientCert);
    if (data)
      log.info(`front proxy settings read from ${WHERE}`, {
        allowedNames: found.settings.frontProxy?.allowedNames,
        usernameHeaders: found.settings.frontProxy?.usernameHeaders,
        clientCa: !!found.clientCert,
      });
    // Later, a part the ConfigMap no longer has keeps the one in force, as kube's controllers keep their last content.
    const reload = (next: Record<string, string>) => {
      const parts = configMapParts(config, next);
      if (parts.frontProxy) put('frontProxy', parts.frontProxy);
      if (parts.clientCert && !config.clientCaFile) put('clientCert', parts.clientCert);
    };
    stops.push(pollConfigMap(host, config.tlsReloadIntervalMs, data, reload, log));
  }

  return {
    frontProxy,
    clientCert,
    asked: !!config.requestheaderClientCaFile || !!config.clientCaFile || lookup,
    bundles,
    stop: () => stops.forEach((stop) => stop()),
  };
}

/** The authenticators the ConfigMap's settings make; throws when a CA bundle in it does not parse. */
function configMapParts(config: Config, data: Record<string, string>) {
  const settings = authenticationFromConfigMap(config, data);
  return {
    settings,
    frontProxy: settings.frontProxy && frontProxyPart(settings.frontProxy),
    clientCert: settings.clientCaPem ? clientCertPart(settings.clientCaPem) : undefined,
  };
}

function frontProxyPart(settings: RequestHeaderOptions): Part {
  return { pem: settings.clientCaPem, authenticator: new RequestHeaderAuthenticator(settings) };
}

function clientCertPart(pem: string): Part {
  return { pem, authenticator: new ClientCertAuthenticator({ caPem: pem }) };
}

/**
 * Reads the ConfigMap every interval and applies what changed. A read that fails, or content that does not parse,
 * keeps the settings in force (kube keeps its last content too); each distinct failure is logged once.
 */
function pollConfigMap(
  host: HostCluster,
  intervalMs: number,
  initial: Record<string, string> | undefined,
  reload: (data: Record<string, string>) => void,
  log: Logger,
): () => void {
  let last = JSON.stringify(initial ?? null);
  let lastFailure = '';
  let running = false;
  const failed = (message: string) => {
    if (message !== lastFailure)
      log.error(`${WHERE} not reloaded; the front proxy settings in force stay`, { error: message });
    lastFailure = message;
  };
  const check = async () => {
    if (running) return;
    running = true;
    try {
      const data = await readAuthenticationConfigMap(host);
      if (!data) return failed('the ConfigMap does not exist');
      const seen = JSON.stringify(data);
      if (seen === last) return;
      reload(data);
      last = seen;
      lastFailure = '';
      log.info(`front proxy settings reloaded from ${WHERE}: the next requests use them`);
    } catch (err) {
      failed((err as Error).message);
    } finally {
      running = false;
    }
  };
  const timer = setInterval(() => void check(), intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
