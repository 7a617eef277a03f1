import { defineProject, mergeConfig } from 'vitest/config';
import { sharedConfig } from '../../vitest.shared.js';

export default mergeConfig(
  sharedConfig,
  defineProject({
    test: {
      // The SIGKILL and lock tests run real child processes against the built package.
      globalSetup: ['./test/global-setup.ts'],
    },
  }),
);
