/**
 * One named health check, as /healthz, /livez and /readyz run them (kube's healthz.HealthChecker). Declared here,
 * below every layer, so that the parts that bring checks (storage's encryption at rest) need not reach up into http.
 */
export interface HealthCheck {
  name: string;
  check(): Promise<void>;
}
