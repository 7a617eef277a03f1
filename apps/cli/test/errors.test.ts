import { PackManifestError } from '@packwarden/pack-manifest';
import { SandboxError } from '@packwarden/sandbox';
import { StoreError } from '@packwarden/store-client';
import { describe, expect, test } from 'vitest';
import { describeError, EXIT } from '../src/errors.js';
import { cli } from './helpers.js';

describe('describeError: exit codes and hints keyed by package and code', () => {
  test.each([
    'ERR_OCI_REF_INVALID',
    'ERR_OCI_PLAIN_HTTP_REFUSED',
    'ERR_OCI_DOCKER_CONFIG_INVALID',
    'ERR_OCI_AUTH_CHALLENGE_INVALID',
    'ERR_OCI_TOKEN_FAILED',
    'ERR_OCI_AUTH_FAILED',
  ] as const)('store-client %s is a usage error (exit 2) keeping its code', (code) => {
    const described = describeError(new StoreError(code, 'refused'));
    expect(described).toMatchObject({ code, exitCode: EXIT.usage });
    expect(described.hint).toMatch(/docker login|oci:\/\//);
  });

  test.each([
    'ERR_OCI_BLOB_DIGEST_MISMATCH',
    'ERR_OCI_NOT_FOUND',
    'ERR_OCI_MANIFEST_INVALID',
    'ERR_OCI_IO',
  ] as const)('store-client %s stays a failure (exit 1)', (code) => {
    expect(describeError(new StoreError(code, 'x'))).toMatchObject({ code, exitCode: 1 });
  });

  test('the same code in two packages gets each its own hint', () => {
    const install = describeError(new StoreError('ERR_SIGNATURE_REFUSED', 'refused'));
    expect(install.hint).toContain('--require-signed');
    const served = describeError(new SandboxError('ERR_SIGNATURE_REFUSED', 'refused'));
    expect(served).toMatchObject({ code: 'ERR_SIGNATURE_REFUSED', exitCode: 1 });
    expect(served.hint).toBeUndefined();
  });

  test('a code of one package is not hinted when another package throws it', () => {
    const own = describeError(new PackManifestError('ERR_PACK_NOT_FOUND', 'no such pack'));
    expect(own.hint).toContain('packwarden pack list');
    const foreign = Object.assign(new Error('x'), { code: 'ERR_PACK_NOT_FOUND' });
    const described = describeError(foreign);
    expect(described.exitCode).toBe(1);
    expect(described.hint).toBeUndefined();
  });
});

describe('the binary', () => {
  test('a bad oci:// reference exits 2 with the library code in the JSON error document', async () => {
    const result = await cli(['store', 'info', 'oci://Not A Host/repo', '--json']);
    expect(result.code).toBe(2);
    expect(JSON.parse(result.stdout)).toMatchObject({
      error: { code: 'ERR_OCI_REF_INVALID', hint: expect.stringContaining('oci://') },
      exitCode: 2,
    });
  });
});
