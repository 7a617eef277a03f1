import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import {
  agentManifestJsonSchema,
  formatManifestIssue,
  loadPackManifest,
  PackManifestError,
  parsePackManifest,
  type PackManifestErrorCode,
} from '@packwarden/pack-manifest';

const joker1 = new URL('./fixtures/agenthippo/joker1', import.meta.url).pathname;
const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((dir) => rmSync(dir, { recursive: true, force: true })));

function packDir(manifest?: string | Buffer): string {
  const dir = mkdtempSync(join(tmpdir(), 'pw-manifest-'));
  dirs.push(dir);
  if (manifest !== undefined) writeFileSync(join(dir, 'agent.yaml'), manifest);
  return dir;
}

function failure(fn: () => unknown): PackManifestError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(PackManifestError);
    return error as PackManifestError;
  }
  throw new Error('expected a PackManifestError');
}

const VALID = `apiVersion: agenthippo.ai/v1
kind: Agent
metadata:
  name: code-reviewer
  version: 1.2.0
spec:
  engine: claude
`;

describe('loading real and valid manifests', () => {
  test('the AgentHippo store manifest for joker1 loads, keeping unknown spec fields', () => {
    const { manifest } = loadPackManifest(joker1);
    expect(manifest.metadata).toMatchObject({
      name: 'joker1',
      version: '0.1.3',
      author: 'AgentHippo',
    });
    expect(manifest.spec.engine).toBe('claude');
    expect(manifest.spec.permissions?.fileAccess).toBe('workspace-write');
    expect(manifest.spec.prompts).toEqual({ system: './AGENTS.md', rules: [] });
    expect((manifest.spec as Record<string, unknown>).visibility).toBe('internal');
  });

  test('flow YAML and JSON are both YAML', () => {
    const flow = `{apiVersion: agenthippo.ai/v1, kind: Agent, metadata: {name: a, version: 0.0.1}, spec: {engine: exec, custom: {x: [1, 2]}}}`;
    expect(parsePackManifest(flow).spec).toMatchObject({ engine: 'exec', custom: { x: [1, 2] } });
    const json = JSON.stringify({
      apiVersion: 'agenthippo.ai/v1',
      kind: 'Agent',
      metadata: { name: 'b', version: '1.0.0-rc.1+build.5' },
    });
    expect(parsePackManifest(json).metadata.version).toBe('1.0.0-rc.1+build.5');
  });

  test('a missing spec defaults to an empty one; a UTF-8 BOM is accepted', () => {
    const manifest = parsePackManifest(`\uFEFF${VALID.replace(/spec:\n.*\n/, '')}`);
    expect(manifest.spec).toEqual({});
  });
});

describe('errors name the field and the line', () => {
  test.each([
    [
      'a non-semver version',
      VALID.replace('1.2.0', '1.2'),
      'metadata.version',
      5,
      /semantic version.*quote it/,
    ],
    [
      'a version that is not semver',
      VALID.replace('1.2.0', 'v1.2.0'),
      'metadata.version',
      5,
      /semantic version/,
    ],
    [
      'a name that is not kebab-case',
      VALID.replace('code-reviewer', 'Code_Reviewer'),
      'metadata.name',
      4,
      /kebab-case/,
    ],
    [
      'a double hyphen',
      VALID.replace('code-reviewer', 'code--reviewer'),
      'metadata.name',
      4,
      /kebab-case/,
    ],
    [
      'the wrong apiVersion',
      VALID.replace('agenthippo.ai/v1', 'agenthippo.ai/v2'),
      'apiVersion',
      1,
      /agenthippo\.ai\/v1/,
    ],
    ['the wrong kind', VALID.replace('kind: Agent', 'kind: Team'), 'kind', 2, /Agent/],
    [
      'a bad fileAccess',
      `${VALID}  permissions:\n    fileAccess: everything\n`,
      'spec.permissions.fileAccess',
      9,
      /read-only/,
    ],
    [
      'a number where a string goes',
      VALID.replace('engine: claude', 'engine: 42'),
      'spec.engine',
      7,
      /string/,
    ],
    [
      'a missing name (points at metadata)',
      VALID.replace('  name: code-reviewer\n', ''),
      'metadata.name',
      3,
      /required/,
    ],
  ])('%s', (_label, text, field, line, message) => {
    const error = failure(() => parsePackManifest(text));
    expect(error.code).toBe('ERR_MANIFEST_INVALID');
    const issue = error.issues.find((candidate) => candidate.field === field);
    expect(issue, JSON.stringify(error.issues)).toBeDefined();
    expect(issue!.line).toBe(line);
    expect(issue!.message).toMatch(message);
    expect(error.message).toContain(field);
    expect(formatManifestIssue(issue!)).toMatch(
      new RegExp(`^agent\\.yaml:${line}:\\d+ ${field.replace(/\./g, '\\.')}: `),
    );
  });

  test('an unknown top-level field is refused at its line; unknown spec and metadata fields are kept', () => {
    const error = failure(() => parsePackManifest(`${VALID}extra: true\n`));
    expect(error.issues).toEqual([expect.objectContaining({ field: 'extra', line: 8, column: 1 })]);
    const kept = parsePackManifest(VALID.replace('metadata:\n', 'metadata:\n  team: infra\n'));
    expect((kept.metadata as Record<string, unknown>).team).toBe('infra');
  });

  test.each<[string, string | Buffer, PackManifestErrorCode, RegExp]>([
    ['a duplicate key', `${VALID}kind: Agent\n`, 'ERR_MANIFEST_YAML', /unique/i],
    ['two YAML documents', `${VALID}---\n${VALID}`, 'ERR_MANIFEST_YAML', /document/i],
    ['broken indentation', 'apiVersion: x\n  kind: : Agent\n', 'ERR_MANIFEST_YAML', /./],
    ['an unknown tag', `${VALID}  x: !!js/function "return 1"\n`, 'ERR_MANIFEST_YAML', /tag/i],
    [
      'an alias bomb',
      `a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n`,
      'ERR_MANIFEST_YAML',
      /alias/i,
    ],
    ['an empty file', '', 'ERR_MANIFEST_INVALID', /./],
    ['a list at the top', '- a\n- b\n', 'ERR_MANIFEST_INVALID', /./],
  ])('refuses %s', (_label, text, code, message) => {
    const error = failure(() => loadPackManifest(packDir(text)));
    expect(error.code).toBe(code);
    expect(error.message).toMatch(message);
  });

  test('a YAML error carries the line', () => {
    const error = failure(() => parsePackManifest(`${VALID}kind: Agent\n`));
    expect(error.issues[0]).toMatchObject({ line: 8 });
  });

  test('__proto__ in a manifest pollutes nothing', () => {
    const manifest = parsePackManifest(`${VALID}  __proto__:\n    polluted: yes\n`);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(manifest.spec)).toBe(Object.prototype);
  });
});

describe('reading the file', () => {
  test('no agent.yaml', () => {
    expect(failure(() => loadPackManifest(packDir())).code).toBe('ERR_MANIFEST_NOT_FOUND');
  });
  test('agent.yaml as a symlink (even to a valid manifest) or a folder is refused', () => {
    const outside = packDir(VALID);
    const dir = packDir();
    symlinkSync(join(outside, 'agent.yaml'), join(dir, 'agent.yaml'));
    expect(failure(() => loadPackManifest(dir)).code).toBe('ERR_MANIFEST_NOT_REGULAR_FILE');
    const folder = packDir();
    mkdirSync(join(folder, 'agent.yaml'));
    expect(failure(() => loadPackManifest(folder)).code).toBe('ERR_MANIFEST_NOT_REGULAR_FILE');
  });
  test('a manifest over maxBytes', () => {
    const big = `${VALID}  notes: "${'x'.repeat(300 * 1024)}"\n`;
    expect(failure(() => loadPackManifest(packDir(big))).code).toBe('ERR_MANIFEST_TOO_LARGE');
    expect(loadPackManifest(packDir(big), { maxBytes: 400 * 1024 }).manifest.metadata.name).toBe(
      'code-reviewer',
    );
  });
  test('bytes that are not UTF-8', () => {
    const bytes = Buffer.concat([Buffer.from(VALID), Buffer.from([0xff, 0xfe, 0x0a])]);
    expect(failure(() => loadPackManifest(packDir(bytes))).code).toBe('ERR_MANIFEST_YAML');
  });
});

describe('JSON Schema export', () => {
  test('is generated from the zod schema with the spec v1 constraints', () => {
    const schema = agentManifestJsonSchema() as {
      $schema: string;
      required: string[];
      additionalProperties: boolean;
      properties: Record<
        string,
        {
          const?: string;
          properties?: Record<string, { pattern?: string }>;
          additionalProperties?: unknown;
        }
      >;
    };
    expect(schema.$schema).toContain('2020-12');
    expect(schema.required).toEqual(expect.arrayContaining(['apiVersion', 'kind', 'metadata']));
    expect(schema.additionalProperties).toBe(false);
    expect(schema.properties.apiVersion!.const).toBe('agenthippo.ai/v1');
    expect(schema.properties.metadata!.properties!.name!.pattern).toBe(
      '^[a-z0-9]+(?:-[a-z0-9]+)*$',
    );
    expect(schema.properties.metadata!.properties!.version!.pattern).toContain('(0|[1-9]\\d*)');
    expect(schema.properties.spec!.additionalProperties).not.toBe(false);
  });
});
