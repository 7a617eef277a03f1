import {
  agentManifestJsonSchema,
  PackManifestError,
  parsePackManifest,
} from '@packwarden/pack-manifest';
import { describe, expect, test } from 'vitest';

// spec.permissions.network.allow (README, "Network"): origins only, bounded, no wildcards.

function manifest(allow: unknown): string {
  return `apiVersion: agenthippo.ai/v1\nkind: Agent\nmetadata: {name: netty, version: 1.0.0}\nspec:\n  permissions:\n    network:\n      allow: ${JSON.stringify(allow)}\n`;
}

function refusal(allow: unknown): PackManifestError {
  try {
    parsePackManifest(manifest(allow));
  } catch (error) {
    expect(error).toBeInstanceOf(PackManifestError);
    return error as PackManifestError;
  }
  throw new Error(`accepted ${JSON.stringify(allow)}`);
}

const GOOD = [
  'https://api.example.com',
  'https://api.example.com/',
  'http://127.0.0.1:8080',
  'https://[::1]:8443',
  'example.org:443',
  'localhost:65535',
  'https://API.Example.com',
];
const BAD = [
  '*.example.com:443',
  'https://*.example.com',
  'https://api.example.com/v1',
  'https://user:pw@api.example.com',
  'https://api.example.com?x=1',
  'ftp://example.org',
  'example.org',
  'example.org:0',
  'example.org:65536',
  'https://example.org:',
  'https://exa mple.org',
  '',
  'a'.repeat(2049) + ':443',
];

describe('spec.permissions.network.allow', () => {
  test('origins in every documented form are accepted and typed', () => {
    const parsed = parsePackManifest(manifest(GOOD));
    expect(parsed.spec.permissions?.network?.allow).toEqual(GOOD);
  });

  test.each(BAD.map((entry) => [entry.slice(0, 40), entry]))(
    '%j… is refused with the schema error code',
    (_label, entry) => {
      const error = refusal([entry]);
      expect(error.code).toBe('ERR_MANIFEST_INVALID');
    },
  );

  test('a list that is not a list of strings, or longer than 256 origins, is refused', () => {
    expect(refusal('https://api.example.com').code).toBe('ERR_MANIFEST_INVALID');
    expect(refusal([443]).code).toBe('ERR_MANIFEST_INVALID');
    const many = Array.from({ length: 257 }, (_, i) => `h${i}.example.com:443`);
    expect(refusal(many).code).toBe('ERR_MANIFEST_INVALID');
    expect(
      parsePackManifest(manifest(many.slice(0, 256))).spec.permissions?.network?.allow,
    ).toHaveLength(256);
  });

  test('the JSON Schema says the same: the pattern admits every good origin and no bad one; 256 at most', () => {
    type Node = {
      properties?: Record<string, Node>;
      items?: Node;
      pattern?: string;
      maxItems?: number;
      maxLength?: number;
      anyOf?: Node[];
    };
    const schema = agentManifestJsonSchema() as Node;
    const allow =
      schema.properties?.spec?.properties?.permissions?.properties?.network?.properties?.allow;
    expect(allow?.maxItems).toBe(256);
    expect(allow?.items?.maxLength).toBe(2048);
    const pattern = new RegExp(allow?.items?.pattern ?? '^$', 'u');
    for (const entry of GOOD) expect(pattern.test(entry), entry).toBe(true);
    for (const entry of BAD.filter((b) => b.length <= 2048))
      expect(pattern.test(entry), entry).toBe(false);
  });
});
