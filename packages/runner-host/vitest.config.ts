import { defineProject, mergeConfig } from 'vitest/config';
import { sharedConfig } from '../../vitest.shared.js';

export default mergeConfig(
  sharedConfig,
  defineProject({
    test: {
      // Child processes (hosts under test, the conformance CLI) run the built package.
      globalSetup: ['./test/global-setup.ts'],
    },
  }),
);
