/** Where local clients reach the server once it listens, and the issuer its tokens name. */
import type { Config } from '../config.js';

/**
 * Where local clients reach this server, and the issuer of its tokens: the port is known once bound (--secure-port
 * 0 picks one), and with it the issuer unless --token-issuer names one.
 */
export class ServingAddress {
  private readonly host: string;
  private port: number;
  private listening = false;

  constructor(private readonly config: Config) {
    this.host = clientHost(config.bindAddress);
    this.port = config.securePort;
  }

  bound(port: number): void {
    this.port = port;
    this.listening = true;
  }

  get hostPort(): string {
    return `${this.host.includes(':') ? `[${this.host}]` : this.host}:${this.port}`;
  }

  get url(): string {
    return `https://${this.hostPort}`;
  }

  get issuer(): string {
    return this.config.tokenIssuer ?? (this.listening ? this.url : '');
  }
}

/** The address local clients dial: the bind address, or loopback when bound to every interface. */
function clientHost(bindAddress: string): string {
  if (bindAddress === '0.0.0.0') return '127.0.0.1';
  if (bindAddress === '::') return '::1';
  return bindAddress;
}
