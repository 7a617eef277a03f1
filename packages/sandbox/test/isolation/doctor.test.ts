import { describe, expect, it } from 'vitest';
import { runDoctor } from '../../src/isolation/index.js';

describe('runDoctor', () => {
  it('proves all four guarantees on a Linux host with bubblewrap', async () => {
    const report = await runDoctor();
    expect(report).toEqual({
      schemaVersion: 1,
      guarantees: [
        { id: 'fs-read', status: 'enforced', by: 'bubblewrap' },
        { id: 'fs-write', status: 'enforced', by: 'bubblewrap' },
        { id: 'network', status: 'enforced', by: 'bubblewrap + host proxy' },
        { id: 'processes', status: 'enforced', by: 'bubblewrap' },
      ],
    });
  });
});
