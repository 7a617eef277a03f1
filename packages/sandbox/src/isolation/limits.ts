/** Every bound of confinement in one place, each with its unit. */
export const ISOLATION_LIMITS = Object.freeze({
  /** Bytes of a proxied request's head (request line + headers) before it is refused. */
  maxRequestHeadBytes: 16 * 1024,
  /** Milliseconds a proxy client has to send its request head. */
  requestHeadTimeoutMs: 10_000,
  /** Milliseconds the proxy waits for an upstream TCP connection. */
  upstreamConnectTimeoutMs: 10_000,
  /** Milliseconds a proxied connection may stay idle in either direction. */
  idleTimeoutMs: 5 * 60_000,
  /** Proxied connections open at once, per confinement. */
  maxConnections: 256,
  /** Entries in `allowOrigins`. */
  maxAllowOrigins: 256,
  /** Characters of one origin in `allowOrigins` or the model origin. */
  maxOriginLength: 2048,
  /** Milliseconds the creation probe (`bwrap … true`) may take. */
  probeTimeoutMs: 10_000,
  /** Bytes of the probe's stderr kept for the reason. */
  probeStderrBytes: 2048,
  /** Events kept in a confinement's proxy log (oldest dropped first). */
  proxyLogEntries: 1024,
  /** Milliseconds the doctor's throwaway sandbox may run. */
  doctorTimeoutMs: 20_000,
});
