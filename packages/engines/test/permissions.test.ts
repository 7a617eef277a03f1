import { describe, expect, test } from 'vitest';
import { effectiveFileAccess } from '../src/index.js';

describe('effectiveFileAccess', () => {
  test('a frame without permissions gets what the pack declares (read-only if nothing)', () => {
    expect(effectiveFileAccess(undefined, 'full')).toBe('full');
    expect(effectiveFileAccess(undefined, 'workspace-write')).toBe('workspace-write');
    expect(effectiveFileAccess(undefined, undefined)).toBe('read-only');
  });

  test('a frame narrows the declaration and never widens it', () => {
    expect(effectiveFileAccess('none', 'full')).toBe('none');
    expect(effectiveFileAccess('read', 'workspace-write')).toBe('read-only');
    expect(effectiveFileAccess('write', 'full')).toBe('workspace-write');
    expect(effectiveFileAccess('write', 'read-only')).toBe('read-only');
    expect(effectiveFileAccess('write', undefined)).toBe('read-only');
  });
});
