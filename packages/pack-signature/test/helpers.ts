import { createPrivateKey, sign as cryptoSign, type KeyObject } from 'node:crypto';
import { chmodSync, mkdirSync, writeFileSync, symlinkSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { computePackDigest, formatManifestLine } from '@packwarden/pack-digest';
import { loadPackTrustRoot, selectTrustedKey, type PackTrustRoot } from '@packwarden/trust-root';
import { generateKeypair, type GeneratedKeypair, type KeySelector } from '../src/index.js';

export const fixture = (path: string): string =>
  fileURLToPath(new URL(`./fixtures/${path}`, import.meta.url));

export interface PackFile {
  path: string;
  content?: string;
  executable?: boolean;
  symlink?: string;
}

const temps: string[] = [];

/** A fresh temp dir, removed by `cleanupTemps()`. */
export async function makeTemp(prefix = 'pack-signature-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  temps.push(dir);
  return dir;
}

export async function cleanupTemps(): Promise<void> {
  await Promise.all(temps.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
}

export function agentYaml(name: string, version: string): string {
  return [
    'apiVersion: agenthippo.ai/v1',
    'kind: Agent',
    'metadata:',
    `  name: ${name}`,
    `  version: ${version}`,
    '  description: a pack for tests',
    'spec:',
    '  engine: claude',
    '',
  ].join('\n');
}

export function writeFiles(root: string, files: readonly PackFile[]): void {
  for (const file of files) {
    const target = join(root, file.path);
    mkdirSync(dirname(target), { recursive: true });
    if (file.symlink !== undefined) symlinkSync(file.symlink, target);
    else {
      writeFileSync(target, file.content ?? '');
      chmodSync(target, file.executable ? 0o755 : 0o644);
    }
  }
}

export const DEFAULT_FILES: readonly PackFile[] = [
  { path: 'AGENTS.md', content: 'You are a careful agent.\n' },
  { path: 'skills/search/SKILL.md', content: '# search\n' },
  { path: '.claude/hooks/pre.sh', content: '#!/bin/sh\necho hook\n', executable: true },
  { path: 'data/link', symlink: '../AGENTS.md' },
];

/** A valid pack in a temp dir: `agent.yaml` plus `files`. */
export async function makePack(
  options: { name?: string; version?: string; files?: readonly PackFile[] } = {},
): Promise<string> {
  const root = await makeTemp('pack-');
  writeFileSync(
    join(root, 'agent.yaml'),
    agentYaml(options.name ?? 'demo', options.version ?? '1.2.3'),
  );
  writeFiles(root, options.files ?? DEFAULT_FILES);
  return root;
}

export interface TestSigner extends GeneratedKeypair {
  root: PackTrustRoot;
  selectKey: KeySelector;
}

/** A runtime-generated key, and a real trust root (`@packwarden/trust-root`) that trusts it. */
export async function makeSigner(
  kid = 'test-key',
  metadata: Record<string, unknown> = {},
): Promise<TestSigner> {
  const pair = await generateKeypair({ kid });
  const root = await trustRootFor({ [kid]: { publicPem: pair.publicKeyPem, ...metadata } });
  return { ...pair, root, selectKey: selectorFor(root) };
}

export async function trustRootFor(keys: object): Promise<PackTrustRoot> {
  return loadPackTrustRoot({ keys, env: {}, cacheDir: false });
}

export function selectorFor(root: PackTrustRoot): KeySelector {
  return (kid, at) => selectTrustedKey(root, kid, { at });
}

export function b64(value: string | Uint8Array): string {
  return Buffer.from(value).toString('base64url');
}

/**
 * A compact JWS with exactly the header and payload text given (duplicate keys and all),
 * correctly ES256-signed with `privateKey`, so that only the structural rule under test can be
 * what refuses it.
 */
export function craftToken(
  headerText: string,
  payloadText: string,
  privateKey: KeyObject | string,
): string {
  const signingInput = `${b64(headerText)}.${b64(payloadText)}`;
  const key = typeof privateKey === 'string' ? createPrivateKey(privateKey) : privateKey;
  const signature = cryptoSign('sha256', Buffer.from(signingInput), {
    key,
    dsaEncoding: 'ieee-p1363',
  });
  return `${signingInput}.${b64(signature)}`;
}

export function headerJson(header: Record<string, unknown> = {}): string {
  return JSON.stringify({ alg: 'ES256', typ: 'JWT', kid: 'test-key', ...header });
}

export function payloadJson(payload: Record<string, unknown> = {}): string {
  return JSON.stringify({
    pack: 'demo',
    packVersion: '1.2.3',
    digest: 'a'.repeat(64),
    iat: 1_790_000_000,
    digestAlg: 'packwarden-digest/1',
    ...payload,
  });
}

/**
 * Signs `payload` (any JSON object, valid as a pack.sig payload or not) with `key`, under a
 * `JWT` header naming `kid`, and writes it as the pack.sig of `pack`.
 */
export function writeSignedPayload(
  pack: string,
  payload: Record<string, unknown>,
  key: { privateKeyPem: string; kid: string },
): void {
  writeFileSync(
    join(pack, 'pack.sig'),
    `${craftToken(headerJson({ kid: key.kid }), JSON.stringify(payload), key.privateKeyPem)}\n`,
  );
}

/** The payload `signPack` signs for `makePack()`'s `demo@1.2.3` as it is now, at `signedAt`. */
export async function payloadFor(pack: string, signedAt: Date): Promise<Record<string, unknown>> {
  const digest = await computePackDigest(pack);
  return {
    pack: 'demo',
    packVersion: '1.2.3',
    digest: digest.digest,
    iat: Math.floor(signedAt.getTime() / 1000),
    digestAlg: 'packwarden-digest/1',
    files: digest.entries.map(formatManifestLine),
  };
}
