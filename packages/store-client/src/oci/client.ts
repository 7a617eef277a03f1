import { resolveDownloadTimeout } from '../download-deadline.js';
import { abortError, isStoreError, StoreError } from '../errors.js';
import { readBounded, type FetchedResponse, type FetchLike } from '../http.js';
import type { Env } from '../store.js';
import { assertFetchable, assertNoDowngrade, isDowngrade } from '../url-policy.js';
import { parseAuthChallenge, type AuthChallenge } from './challenge.js';
import { readDockerCredentials, type RegistryCredentials } from './docker-config.js';
import { ociError } from './errors.js';
import { DEFAULT_OCI_LIMITS, type OciLimits } from './limits.js';
import type { OciReference } from './reference.js';

/** Options every OCI operation takes (OCI.md "Options"). */
export interface OciClientOptions {
  fetch?: FetchLike;
  env?: Env;
  /** Folder of the Docker `config.json`. Default `$DOCKER_CONFIG`, else `~/.docker`. */
  dockerConfigDir?: string;
  /** Explicit credentials; `false` for anonymous only. Default: the Docker `config.json` entry. */
  credentials?: RegistryCredentials | false;
  /** Talk plain HTTP (loopback registries only). */
  plainHttp?: boolean;
  /** Time to a response's headers, ms. Default 30,000. */
  timeoutMs?: number;
  /** A body stalled this long fails, ms. Default 60,000. */
  idleTimeoutMs?: number;
  /** A layer download not over this long after its request fails, ms. Default 7,200,000 (2 h). */
  downloadTimeoutMs?: number;
  limits?: Partial<OciLimits>;
  signal?: AbortSignal;
  /** Clock for token lifetimes (ms since the epoch). Default `Date.now`. */
  now?: () => number;
}

export interface ResolvedOciClientOptions {
  fetch: FetchLike;
  env: Env;
  dockerConfigDir: string | undefined;
  credentials: RegistryCredentials | false | undefined;
  timeoutMs: number;
  idleTimeoutMs: number;
  downloadTimeoutMs: number;
  limits: OciLimits;
  signal: AbortSignal | undefined;
  now: () => number;
}

export function resolveOciClientOptions(options: OciClientOptions): ResolvedOciClientOptions {
  const limits = { ...DEFAULT_OCI_LIMITS };
  for (const [key, value] of Object.entries(options.limits ?? {})) {
    if (!(key in DEFAULT_OCI_LIMITS)) {
      throw new StoreError('ERR_INVALID_ARGUMENT', `limits.${key} is not an OCI limit`);
    }
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
      throw new StoreError('ERR_INVALID_ARGUMENT', `limits.${key} must be a non-negative integer`);
    }
    limits[key as keyof OciLimits] = value;
  }
  const positive = (name: string, value: number | undefined, fallback: number): number => {
    if (value === undefined) return fallback;
    if (!Number.isFinite(value) || value <= 0) {
      throw new StoreError('ERR_INVALID_ARGUMENT', `${name} must be a positive number of ms`);
    }
    return value;
  };
  return {
    fetch: options.fetch ?? fetch,
    env: options.env ?? process.env,
    dockerConfigDir: options.dockerConfigDir,
    credentials: options.credentials,
    timeoutMs: positive('timeoutMs', options.timeoutMs, 30_000),
    idleTimeoutMs: positive('idleTimeoutMs', options.idleTimeoutMs, 60_000),
    downloadTimeoutMs: resolveDownloadTimeout(options.downloadTimeoutMs),
    limits,
    signal: options.signal,
    now: options.now ?? Date.now,
  };
}

export interface RegistryRequest {
  method: 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH';
  /** A path under the registry (`/v2/…`) or an absolute URL on the registry's origin. */
  url: string | URL;
  headers?: Record<string, string>;
  /** Always a buffer: a request may be sent twice (after an auth challenge). */
  body?: Buffer;
  /** Repository access this request needs, e.g. `repository:acme/x:pull`. */
  scopes: string[];
  /** Follow redirects (GET/HEAD only); credentials stay with the registry's origin. */
  followRedirects?: boolean;
}

interface CachedToken {
  value: string;
  expiresAt: number;
}

const USER_AGENT = 'packwarden-store-client';
/** A token value goes into a header: visible ASCII only. */
const TOKEN_VALUE = /^[\x21-\x7e]+$/;

/**
 * One registry, one set of credentials: sends requests, answers Basic and Bearer challenges
 * (Docker's token flow, OCI.md "Authentication") and keeps the tokens per scope. The
 * `Authorization` header only ever goes to the registry's own origin; the token realm receives
 * the Basic credentials (that is the flow), never a token, and only over https when the registry
 * uses https.
 */
export class RegistrySession {
  readonly ref: OciReference;
  readonly options: ResolvedOciClientOptions;
  private credentials: RegistryCredentials | undefined | null = null;
  private basic = false;
  private readonly tokens = new Map<string, CachedToken>();

  constructor(ref: OciReference, options: ResolvedOciClientOptions) {
    this.ref = ref;
    this.options = options;
  }

  /** `/v2/<name>/…` on this registry. */
  url(path: string): URL {
    return new URL(`/v2/${this.ref.repository}/${path}`, this.ref.baseUrl);
  }

  private async loadCredentials(): Promise<RegistryCredentials | undefined> {
    if (this.credentials !== null) return this.credentials;
    const explicit = this.options.credentials;
    this.credentials =
      explicit === false
        ? undefined
        : (explicit ??
          (await readDockerCredentials(this.ref.registry, {
            env: this.options.env,
            ...(this.options.dockerConfigDir
              ? { dockerConfigDir: this.options.dockerConfigDir }
              : {}),
            maxBytes: this.options.limits.maxDockerConfigBytes,
          })));
    return this.credentials;
  }

  private authorization(scopeKey: string): string | undefined {
    const token = this.tokens.get(scopeKey);
    if (token && token.expiresAt > this.options.now()) return `Bearer ${token.value}`;
    const creds = this.credentials;
    if (this.basic && creds && 'password' in creds) {
      return `Basic ${Buffer.from(`${creds.username}:${creds.password}`).toString('base64')}`;
    }
    return undefined;
  }

  /** One HTTP exchange with timeouts; no auth handling, no redirects. */
  private async exchange(
    url: URL,
    init: { method: string; headers: Record<string, string>; body?: Buffer },
  ): Promise<FetchedResponse> {
    const signal = this.options.signal;
    if (signal?.aborted) throw abortError(signal);
    const controller = new AbortController();
    const onAbort = () => controller.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort(new Error('timeout'));
    }, this.options.timeoutMs);
    try {
      const response = await this.options.fetch(url, {
        method: init.method,
        headers: { 'user-agent': USER_AGENT, ...init.headers },
        ...(init.body ? { body: init.body } : {}),
        redirect: 'manual',
        signal: controller.signal,
      });
      return { response, url, controller };
    } catch (cause) {
      if (timedOut) {
        throw new StoreError(
          'ERR_STORE_TIMEOUT',
          `${url.origin} did not answer within ${this.options.timeoutMs} ms`,
          { cause, subject: url.origin + url.pathname },
        );
      }
      if (signal?.aborted) throw abortError(signal);
      throw new StoreError(
        'ERR_STORE_FETCH',
        `cannot reach ${url.origin}: ${String((cause as Error)?.cause ?? cause)}`,
        { cause, subject: url.origin + url.pathname },
      );
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * A whole small body (manifest, tag page, token, error), bounded in bytes and in time: a body
   * that takes longer than `timeoutMs` is `ERR_STORE_TIMEOUT`, whatever pace it trickles at.
   */
  async readBody(
    fetched: FetchedResponse,
    maxBytes: number,
    tooLarge: () => StoreError,
  ): Promise<Buffer> {
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      fetched.controller.abort(new Error('timeout'));
    }, this.options.timeoutMs);
    try {
      return await readBounded(fetched.response, maxBytes, tooLarge);
    } catch (cause) {
      if (isStoreError(cause)) throw cause;
      const subject = `${fetched.url.origin}${fetched.url.pathname}`;
      if (timedOut) {
        throw new StoreError(
          'ERR_STORE_TIMEOUT',
          `${fetched.url.origin} did not send its answer within ${this.options.timeoutMs} ms`,
          {
            cause,
            subject,
          },
        );
      }
      if (this.options.signal?.aborted) throw abortError(this.options.signal);
      throw new StoreError(
        'ERR_STORE_FETCH',
        `reading the answer of ${fetched.url.origin} failed: ${String(cause)}`,
        { cause, subject },
      );
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Sends a request, answering one auth challenge, following redirects when asked. Returns the
   * final response whatever its status (callers judge it with `expectStatus`), except 401/403
   * from the registry, which are `ERR_OCI_AUTH_FAILED`.
   */
  async send(request: RegistryRequest): Promise<FetchedResponse> {
    const start =
      typeof request.url === 'string' ? new URL(request.url, this.ref.baseUrl) : request.url;
    if (start.origin !== this.ref.baseUrl.origin) {
      throw ociError(
        'ERR_OCI_UPLOAD_FAILED',
        `the registry sent the client to another origin (${start.origin}) for ${request.method}; credentials stay with ${this.ref.baseUrl.origin}`,
        { subject: start.origin },
      );
    }
    const scopeKey = request.scopes.join(' ');
    for (let attempt = 0; ; attempt++) {
      const fetched = await this.follow(start, request, scopeKey);
      const { response } = fetched;
      const fromRegistry = fetched.url.origin === this.ref.baseUrl.origin;
      if (response.status === 401 && fromRegistry && attempt === 0) {
        const header = response.headers.get('www-authenticate');
        await response.body?.cancel().catch(() => undefined);
        if (!header) throw this.denied(401, 'without a WWW-Authenticate challenge');
        const challenge = parseAuthChallenge(header, this.options.limits.maxChallengeLength);
        await this.answer(challenge, request.scopes, scopeKey);
        continue;
      }
      if ((response.status === 401 || response.status === 403) && fromRegistry) {
        await response.body?.cancel().catch(() => undefined);
        throw this.denied(response.status, '');
      }
      return fetched;
    }
  }

  private denied(status: number, detail: string): StoreError {
    const who = this.credentials
      ? 'with the configured credentials'
      : `anonymously (no credentials for ${this.ref.registry} in the Docker config.json; run docker login ${this.ref.registry})`;
    return ociError(
      'ERR_OCI_AUTH_FAILED',
      `${this.ref.registry} refused access to ${this.ref.repository} ${who}: HTTP ${status}${detail ? ` ${detail}` : ''}`,
      { subject: this.ref.registry },
    );
  }

  private async follow(
    start: URL,
    request: RegistryRequest,
    scopeKey: string,
  ): Promise<FetchedResponse> {
    let current = start;
    const maxRedirects = this.options.limits.maxRedirects;
    for (let hop = 0; ; hop++) {
      const headers: Record<string, string> = { ...request.headers };
      // Credentials never follow a redirect to another origin (OCI.md "Redirects").
      if (current.origin === this.ref.baseUrl.origin) {
        const authorization = this.authorization(scopeKey);
        if (authorization) headers.authorization = authorization;
      }
      const fetched = await this.exchange(current, {
        method: request.method,
        headers,
        ...(request.body ? { body: request.body } : {}),
      });
      const { response } = fetched;
      const isRedirect = [301, 302, 303, 307, 308].includes(response.status);
      if (!isRedirect || !request.followRedirects) return fetched;
      await response.body?.cancel().catch(() => undefined);
      const location = response.headers.get('location');
      if (!location) {
        throw new StoreError(
          'ERR_STORE_REDIRECT',
          `${current.origin} answered ${response.status} without a Location`,
          {
            subject: current.origin + current.pathname,
          },
        );
      }
      if (hop + 1 > maxRedirects) {
        throw new StoreError(
          'ERR_STORE_REDIRECT',
          `more than ${maxRedirects} redirects from ${start.origin}${start.pathname}`,
          {
            subject: start.origin + start.pathname,
          },
        );
      }
      const next = new URL(location, current);
      // https anywhere; plain http only to loopback (a registry on https may not downgrade).
      assertFetchable(next, 'redirect', { allowFile: false });
      assertNoDowngrade(current, next, 'the redirect to');
      current = next;
    }
  }

  private async answer(
    challenge: AuthChallenge,
    scopes: string[],
    scopeKey: string,
  ): Promise<void> {
    const creds = await this.loadCredentials();
    if (challenge.scheme === 'basic') {
      if (!creds || !('password' in creds))
        throw this.denied(401, '(it asks for a user name and password)');
      this.basic = true;
      return;
    }
    const token = await this.fetchToken(challenge, scopes, creds);
    this.tokens.set(scopeKey, token);
  }

  /** The distribution token flow: GET (or, with an identity token, POST) the realm. */
  private async fetchToken(
    challenge: Extract<AuthChallenge, { scheme: 'bearer' }>,
    scopes: string[],
    creds: RegistryCredentials | undefined,
  ): Promise<CachedToken> {
    let realm: URL;
    try {
      realm = new URL(challenge.realm);
    } catch (cause) {
      throw ociError(
        'ERR_OCI_AUTH_CHALLENGE_INVALID',
        `the token realm ${JSON.stringify(challenge.realm.slice(0, 200))} is not a URL`,
        { cause },
      );
    }
    assertFetchable(realm, 'token realm', { allowFile: false });
    // The realm gets the registry's credentials (that is the flow): the no-downgrade rule of every
    // other hop, under the auth code, so an https registry cannot send them to a plain-HTTP
    // service, not even one on loopback.
    if (isDowngrade(this.ref.baseUrl, realm)) {
      throw ociError(
        'ERR_OCI_AUTH_CHALLENGE_INVALID',
        `the registry ${this.ref.registry} uses https but named the plain-HTTP token realm ${realm.origin}; credentials go to a token realm only over https when the registry uses it`,
        { subject: realm.origin + realm.pathname },
      );
    }
    const wanted = new Set<string>(scopes);
    for (const scope of challenge.scope?.split(' ') ?? []) if (scope) wanted.add(scope);
    const params = new URLSearchParams();
    if (challenge.service !== undefined) params.append('service', challenge.service);
    for (const scope of wanted) params.append('scope', scope);
    let fetched: FetchedResponse;
    if (creds && 'identityToken' in creds) {
      // OAuth2 refresh-token grant (Docker token spec, "OAuth2 Token"): the identity token that
      // `docker login` stored is a refresh token.
      params.append('grant_type', 'refresh_token');
      params.append('client_id', USER_AGENT);
      params.append('refresh_token', creds.identityToken);
      fetched = await this.exchange(realm, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: Buffer.from(params.toString()),
      });
    } else {
      const url = new URL(realm);
      for (const [key, value] of params) url.searchParams.append(key, value);
      const headers: Record<string, string> = {};
      if (creds)
        headers.authorization = `Basic ${Buffer.from(`${creds.username}:${creds.password}`).toString('base64')}`;
      fetched = await this.exchange(url, { method: 'GET', headers });
    }
    const { response } = fetched;
    if (response.status !== 200) {
      await response.body?.cancel().catch(() => undefined);
      throw ociError(
        'ERR_OCI_TOKEN_FAILED',
        `the token service ${realm.origin}${realm.pathname} answered HTTP ${response.status}${response.status === 401 || response.status === 403 ? (creds ? ' (the credentials were refused)' : ` (no credentials for ${this.ref.registry} in the Docker config.json)`) : ''}`,
        { subject: realm.origin + realm.pathname },
      );
    }
    const body = await this.readBody(fetched, this.options.limits.maxTokenResponseBytes, () =>
      ociError(
        'ERR_OCI_RESPONSE_TOO_LARGE',
        `the token service's answer is larger than ${this.options.limits.maxTokenResponseBytes} bytes`,
        {
          subject: realm.origin + realm.pathname,
        },
      ),
    );
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch (cause) {
      throw ociError('ERR_OCI_TOKEN_FAILED', `the token service's answer is not JSON`, {
        cause,
        subject: realm.origin + realm.pathname,
      });
    }
    const record = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as Record<
      string,
      unknown
    >;
    const value =
      typeof record.token === 'string' && record.token ? record.token : record.access_token;
    if (typeof value !== 'string' || !TOKEN_VALUE.test(value)) {
      throw ociError(
        'ERR_OCI_TOKEN_FAILED',
        `the token service answered without a usable token or access_token`,
        {
          subject: realm.origin + realm.pathname,
        },
      );
    }
    // Docker token spec: expires_in defaults to 60 seconds. A token is dropped 5 s early.
    const expiresIn =
      typeof record.expires_in === 'number' &&
      Number.isFinite(record.expires_in) &&
      record.expires_in > 0
        ? Math.min(record.expires_in, 24 * 3600)
        : 60;
    return { value, expiresAt: this.options.now() + Math.max(expiresIn - 5, 1) * 1000 };
  }

  /**
   * Refuses an unexpected status with a typed error naming the registry's error codes (never
   * its free-text messages at length, nor any header).
   */
  async expectStatus(fetched: FetchedResponse, expected: number[], what: string): Promise<void> {
    const { response } = fetched;
    if (expected.includes(response.status)) return;
    let codes: string[] = [];
    try {
      const body = await this.readBody(fetched, this.options.limits.maxErrorBodyBytes, () =>
        ociError('ERR_OCI_RESPONSE_TOO_LARGE', 'error body too large'),
      );
      const parsed = JSON.parse(body.toString('utf8')) as { errors?: { code?: unknown }[] };
      codes = (Array.isArray(parsed.errors) ? parsed.errors : [])
        .map((e) => e?.code)
        .filter((c): c is string => typeof c === 'string' && /^[A-Z_]{1,64}$/.test(c))
        .slice(0, 5);
    } catch (error) {
      if (isStoreError(error) && error.code === 'ERR_ABORTED') throw error;
    }
    const subject = `${fetched.url.origin}${fetched.url.pathname}`;
    const detail = codes.length ? ` (${codes.join(', ')})` : '';
    if (
      response.status === 404 &&
      (codes.length === 0 ||
        codes.some((c) =>
          ['MANIFEST_UNKNOWN', 'NAME_UNKNOWN', 'BLOB_UNKNOWN', 'NOT_FOUND'].includes(c),
        ))
    ) {
      throw ociError('ERR_OCI_NOT_FOUND', `${what}: ${subject} was not found${detail}`, {
        subject,
      });
    }
    throw new StoreError(
      'ERR_STORE_HTTP_STATUS',
      `${what}: ${subject} answered HTTP ${response.status}${detail}`,
      { subject },
    );
  }
}

export function repositoryScope(repository: string, actions: 'pull' | 'pull,push'): string {
  return `repository:${repository}:${actions}`;
}
