// The real CNCF distribution registry (Debian's `docker-registry` 2.8), started per test file on
// 127.0.0.1 with a generated config.yml and a temp storage folder. Missing binary = a failing
// test with the way to install it, never a skip.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer as createNetServer } from 'node:net';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { importPKCS8, SignJWT } from 'jose';
import { makeCertificate } from './tls.js';

export const REGISTRY_BINARY = process.env.PACKWARDEN_DOCKER_REGISTRY ?? '/usr/bin/docker-registry';

export function requireTool(path: string, pkg: string): void {
  if (!existsSync(path)) {
    throw new Error(
      `${path} is missing: these tests run the real tool. Install it with: apt-get install ${pkg} (scripts/system-packages.sh does it for the test run).`,
    );
  }
}

export async function freePort(): Promise<number> {
  const server = createNetServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export type RegistryAuth =
  | { kind: 'none' }
  | { kind: 'htpasswd'; users: Record<string, string> }
  | { kind: 'token'; realm: string; service: string; issuer: string; certPem: string };

export interface RunningRegistry {
  /** `127.0.0.1:PORT` */
  host: string;
  url: string;
  root: string;
  stderr: () => string;
  stop(): Promise<void>;
  /** The file holding a blob's bytes in the registry's storage (for tampering). */
  blobPath(digest: string): string;
}

export async function startRegistry(
  auth: RegistryAuth = { kind: 'none' },
): Promise<RunningRegistry> {
  requireTool(REGISTRY_BINARY, 'docker-registry');
  const dir = await mkdtemp(join(tmpdir(), 'pw-registry-'));
  const root = join(dir, 'storage');
  const port = await freePort();
  let authYaml = '';
  if (auth.kind === 'htpasswd') {
    requireTool('/usr/bin/htpasswd', 'apache2-utils');
    const lines = Object.entries(auth.users).map(([user, password]) =>
      // bcrypt entries: distribution 2.8's htpasswd backend reads only bcrypt.
      execFileSync('/usr/bin/htpasswd', ['-Bbn', user, password], { encoding: 'utf8' }).trim(),
    );
    await writeFile(join(dir, 'htpasswd'), lines.join('\n') + '\n');
    authYaml = `auth:\n  htpasswd:\n    realm: packwarden-test\n    path: ${join(dir, 'htpasswd')}\n`;
  } else if (auth.kind === 'token') {
    await writeFile(join(dir, 'token-root.pem'), auth.certPem);
    authYaml = `auth:\n  token:\n    realm: ${auth.realm}\n    service: ${auth.service}\n    issuer: ${auth.issuer}\n    rootcertbundle: ${join(dir, 'token-root.pem')}\n`;
  }
  const config = `version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: ${root}
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: 127.0.0.1:${port}
  secret: packwarden-test-secret
${authYaml}`;
  await writeFile(join(dir, 'config.yml'), config);
  const child: ChildProcess = spawn(REGISTRY_BINARY, ['serve', join(dir, 'config.yml')], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-20_000);
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const url = `http://127.0.0.1:${port}`;
  // Readiness: the first HTTP answer of /v2/ (200, or 401 with auth); the registry exiting first
  // fails at once with its log.
  const deadline = Date.now() + 15_000;
  let exitCode: number | null | undefined;
  void exited.then((code) => {
    exitCode = code;
  });
  for (;;) {
    if (exitCode !== undefined) throw new Error(`docker-registry exited (${exitCode}):\n${stderr}`);
    try {
      const res = await fetch(`${url}/v2/`);
      await res.body?.cancel();
      break;
    } catch {
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`docker-registry did not answer on ${url} within 15 s:\n${stderr}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  return {
    host: `127.0.0.1:${port}`,
    url,
    root,
    stderr: () => stderr,
    async stop() {
      if (exitCode === undefined) {
        child.kill('SIGTERM');
        await exited;
      }
      await rm(dir, { recursive: true, force: true });
    },
    blobPath(digest: string) {
      const hex = digest.replace(/^sha256:/, '');
      return join(root, 'docker/registry/v2/blobs/sha256', hex.slice(0, 2), hex, 'data');
    },
  };
}

export interface TokenServer {
  realm: string;
  service: string;
  issuer: string;
  certPem: string;
  /** Every request the token server received: method, query scopes, and the Basic user (if any). */
  requests: { method: string; scopes: string[]; user?: string; grant?: string }[];
  stop(): Promise<void>;
}

/**
 * A token server for distribution's `auth.token` (Docker's token authentication spec): checks
 * Basic credentials (or an OAuth2 refresh token), then signs an ES256 JWT with jose. The
 * registry trusts it through `rootcertbundle`; distribution 2.8 finds the signing key from the
 * token header's `x5c` chain (registry/auth/token/token.go, VerifySigningKey), so the header
 * carries the self-signed certificate.
 */
export async function startTokenServer(options: {
  users: Record<string, string>;
  refreshTokens?: Record<string, string>;
}): Promise<TokenServer> {
  const dir = await mkdtemp(join(tmpdir(), 'pw-token-'));
  const { cert: certPem, key: keyPem } = makeCertificate(dir, {
    subject: '/CN=packwarden-test-token-issuer',
    days: 2,
    loopback: false,
  });
  const key = await importPKCS8(keyPem, 'ES256');
  const x5c = certPem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, '');
  const service = 'packwarden-test-registry';
  const issuer = 'packwarden-test-issuer';
  const requests: TokenServer['requests'] = [];
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://x');
    let params = url.searchParams;
    if (req.method === 'POST') {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      params = new URLSearchParams(Buffer.concat(chunks).toString());
    }
    const scopes = params.getAll('scope');
    let user: string | undefined;
    const authz = req.headers.authorization;
    if (authz?.startsWith('Basic ')) {
      const decoded = Buffer.from(authz.slice(6), 'base64').toString();
      const [name, ...rest] = decoded.split(':');
      if (name && options.users[name] === rest.join(':')) user = name;
      else {
        requests.push({ method: req.method!, scopes, user: `!${name}` });
        res.writeHead(401).end('{"details":"bad credentials"}');
        return;
      }
    }
    const grant = params.get('grant_type') ?? undefined;
    if (grant === 'refresh_token') {
      user = options.refreshTokens?.[params.get('refresh_token') ?? ''];
    }
    requests.push({
      method: req.method!,
      scopes,
      ...(user ? { user } : {}),
      ...(grant ? { grant } : {}),
    });
    if (!user || params.get('service') !== service) {
      res.writeHead(401).end('{"details":"authentication required"}');
      return;
    }
    const access = scopes
      .flatMap((s) => s.split(' '))
      .map((s) => {
        const [type, name, actions] = s.split(':');
        return { type, name, actions: (actions ?? '').split(',').filter(Boolean) };
      });
    const now = Math.floor(Date.now() / 1000);
    const token = await new SignJWT({ access })
      .setProtectedHeader({ alg: 'ES256', typ: 'JWT', x5c: [x5c] })
      .setIssuer(issuer)
      .setSubject(user)
      .setAudience(service)
      .setIssuedAt(now)
      .setNotBefore(now - 5)
      .setExpirationTime(now + 300)
      .setJti(Math.random().toString(36).slice(2))
      .sign(key);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify(
        grant === 'refresh_token'
          ? { access_token: token, expires_in: 300 }
          : { token, expires_in: 300 },
      ),
    );
  };
  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error) => {
      res.writeHead(500).end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    realm: `http://127.0.0.1:${port}/token`,
    service,
    issuer,
    certPem,
    requests,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Writes a Docker config.json with `auths` and returns its folder. */
export async function writeDockerConfig(
  dir: string,
  auths: Record<string, Record<string, string>>,
): Promise<string> {
  await writeFile(join(dir, 'config.json'), JSON.stringify({ auths }, null, 2));
  return dir;
}

export function basicAuth(user: string, password: string): string {
  return Buffer.from(`${user}:${password}`).toString('base64');
}
